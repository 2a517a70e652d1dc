//! The client configuration a run shares: trust, resumption and ALPN, built once from the
//! user's options.

use super::options::{TlsOptions, TlsSetupError, TlsTrust};
use super::verify;
use nodelay_flags::Flag::{Cacert, Insecure, Sni};
use rustls::ClientConfig;
use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::Read;
use std::sync::Arc;

/// The client side of TLS a run shares across its threads: one `ClientConfig` (and so one
/// session cache) and the name every connection sends.
#[derive(Clone)]
pub struct TlsClient {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) server_name: ServerName<'static>,
    /// How the server's certificate is checked, for the report's header.
    pub trust: TlsTrust,
    /// New connections offer an earlier session.
    pub resume: bool,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .field("trust", &self.trust)
            .field("resume", &self.resume)
            .finish()
    }
}

/// HTTP/1.1 is offered alone unless the run may speak HTTP/2 ([`TlsClient::offering_h2`]).
const ALPN_HTTP11: &[u8] = b"http/1.1";
const ALPN_H2: &[u8] = b"h2";

impl TlsClient {
    /// Builds the client for a URL whose host is `url_host` (a name or an IP address).
    pub fn new(url_host: &str, options: &TlsOptions) -> Result<TlsClient, TlsSetupError> {
        let name = options.server_name.as_deref().unwrap_or(url_host);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|_| TlsSetupError(format!("'{name}' is not a valid TLS server name ({Sni})")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsSetupError(format!("TLS setup: {e}")))?;
        let (builder, trust) = if options.insecure {
            let verifier = Arc::new(verify::AcceptAnyCertificate::new(provider));
            (builder.dangerous().with_custom_certificate_verifier(verifier), TlsTrust::Insecure)
        } else {
            let (roots, pinned, trust) = match &options.ca_file {
                Some(path) => {
                    let certificates = certificates_from_pem(path)?;
                    (roots_of(path, &certificates)?, certificates, TlsTrust::CaFile)
                }
                None => (system_roots()?, Vec::new(), TlsTrust::System),
            };
            let verifier = verify::NamingIssuer::new(roots, pinned, provider, trust)?;
            (builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)), trust)
        };
        let mut config = builder.with_no_client_auth();
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        if !options.resume {
            config.resumption = Resumption::disabled();
        }
        Ok(TlsClient { config: Arc::new(config), server_name, trust, resume: options.resume })
    }

    /// The same client offering `h2` before `http/1.1` by ALPN (its sessions shared).
    pub fn offering_h2(&self) -> TlsClient {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()];
        TlsClient { config: Arc::new(config), ..self.clone() }
    }

    /// The same client with a session cache of its own, resuming nothing: a check made before
    /// a run (which protocol the server chooses) must not leave the run a session to resume,
    /// or its first handshake would not be the full one a new client makes.
    pub(crate) fn without_resumption(&self) -> TlsClient {
        let mut config = (*self.config).clone();
        config.resumption = Resumption::disabled();
        TlsClient { config: Arc::new(config), resume: false, ..self.clone() }
    }

    /// A fresh client connection, its ClientHello queued.
    pub(crate) fn connect(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        rustls::ClientConnection::new(Arc::clone(&self.config), self.server_name.clone())
    }

    /// A blocking client over `stream`, for one-off checks outside the load loop.
    pub fn blocking<S: std::io::Read + std::io::Write>(
        &self,
        stream: S,
    ) -> Result<rustls::StreamOwned<rustls::ClientConnection, S>, rustls::Error> {
        Ok(rustls::StreamOwned::new(self.connect()?, stream))
    }
}

/// A CA bundle is a few hundred KiB (the system's ~220 KiB): past this, /dev/zero or a data
/// file was named, and reading on would only fill memory.
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;

fn certificates_from_pem(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    use rustls::pki_types::pem::PemObject;
    let shown = path.display();
    let cannot_read = |e: std::io::Error| TlsSetupError(format!("cannot read {Cacert} {shown}: {e}"));
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CA_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(TlsSetupError(format!(
            "{Cacert} {shown} is larger than {} MiB: not a certificate file",
            MAX_CA_FILE_BYTES >> 20
        )));
    }
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsSetupError(format!("{Cacert} {shown} is not a PEM certificate file: {e}")))?;
    if certificates.is_empty() {
        return Err(TlsSetupError(format!("{Cacert} {shown} holds no PEM certificate")));
    }
    Ok(certificates)
}

fn roots_of(
    path: &std::path::Path,
    certificates: &[CertificateDer<'static>],
) -> Result<rustls::RootCertStore, TlsSetupError> {
    let shown = path.display();
    let mut roots = rustls::RootCertStore::empty();
    for (index, certificate) in certificates.iter().cloned().enumerate() {
        roots.add(certificate).map_err(|e| {
            TlsSetupError(format!("{Cacert} {shown}: certificate {} is not usable: {e}", index + 1))
        })?;
    }
    Ok(roots)
}

/// The system's trust store, as curl and browsers use it.
fn system_roots() -> Result<rustls::RootCertStore, TlsSetupError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (_added, _unusable) = roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
        return Err(TlsSetupError(format!(
            "the system's trust store has no certificates{why}: use {Cacert} FILE or {Insecure}"
        )));
    }
    Ok(roots)
}
