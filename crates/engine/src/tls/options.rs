//! What the user asked of TLS, how the server's certificate is checked, and why a client
//! could not be made: the plain types both the client and the certificate checks use.

use serde::Serialize;
use std::path::PathBuf;

/// What the user asked of TLS (`--insecure`, `--cacert`, `--sni`, `--no-tls-resume`).
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// No certificate check at all (the signatures of the handshake are still verified).
    pub insecure: bool,
    /// PEM file of certificates to trust instead of the system's store.
    pub ca_file: Option<PathBuf>,
    /// Name sent in SNI and checked against the certificate, instead of the URL's host.
    pub server_name: Option<String>,
    /// A new connection offers the session of an earlier one, as browsers do.
    pub resume: bool,
}

/// How the server's certificate was checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsTrust {
    /// Against the system's trust store (as curl does): the default.
    #[default]
    System,
    /// Against the certificates of `--cacert`.
    CaFile,
    /// Not at all (`--insecure`).
    Insecure,
}

/// The options could not make a TLS client (a bad `--cacert`, an empty trust store).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsSetupError(pub String);
