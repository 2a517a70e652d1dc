//! TLS as a transport of the engine's own loop: the client configuration a run shares
//! (trust, resumption, ALPN), one-line descriptions of what goes wrong, and the per-connection
//! steps the worker drives (rustls is sans-I/O, so the loop keeps doing every `read()` and
//! `write()` itself and timestamps stay at the TCP level).

mod client;
mod describe;
mod handshake;
mod options;
mod probe;
mod session;
mod verify;

pub use client::TlsClient;
pub use describe::{describe_tls_error, looks_like_tls_record};
pub(crate) use handshake::Handshake;
pub use options::{TlsOptions, TlsSetupError, TlsTrust};
pub use probe::{alpn_choice, speaks_tls};
pub(crate) use session::TlsSession;
