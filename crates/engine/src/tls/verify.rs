//! Certificate checks: the standard WebPKI check, which on failure names the certificate's
//! issuer and subject (rustls' own error does not say who issued it), and `--insecure`'s
//! check of nothing but the handshake's signatures.

use super::options::{TlsSetupError, TlsTrust};
use nodelay_flags::Flag::{Cacert, Insecure};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// A certificate no trusted authority issued, with the names that say whose it is.
#[derive(Debug, thiserror::Error)]
#[error("{}", untrusted_message(self))]
pub struct UntrustedIssuer {
    pub issuer: String,
    pub subject: String,
    pub trust: TlsTrust,
}

fn untrusted_message(error: &UntrustedIssuer) -> String {
    let store = match error.trust {
        TlsTrust::CaFile => format!("the {Cacert} file"),
        _ => "the system's trust store".to_string(),
    };
    if error.issuer == error.subject {
        format!(
            "certificate not trusted: self-signed by {}, which is not in {store}; use {Cacert} FILE (its PEM) or {Insecure}",
            error.issuer
        )
    } else {
        format!(
            "certificate not trusted: issued by {}, which is not in {store}; use {Cacert} FILE (the issuer's PEM) or {Insecure}",
            error.issuer
        )
    }
}

/// The WebPKI check, naming the issuer when it is unknown.
#[derive(Debug)]
pub(super) struct NamingIssuer {
    inner: Arc<WebPkiServerVerifier>,
    trust: TlsTrust,
    /// The --cacert certificates themselves: one of them presented as the server's own (a
    /// self-signed certificate made with `openssl req -x509`, marked as a CA) is trusted
    /// for its names, as curl and OpenSSL do; WebPKI alone refuses a CA as an end entity.
    pinned: Vec<CertificateDer<'static>>,
}

impl NamingIssuer {
    pub fn new(
        roots: RootCertStore,
        pinned: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
        trust: TlsTrust,
    ) -> Result<Self, TlsSetupError> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| TlsSetupError(format!("TLS setup: {e}")))?;
        Ok(NamingIssuer { inner, trust, pinned })
    }

    /// A CA certificate presented as the server's: trusted when the user gave this very
    /// certificate and it names the server, and not expired.
    fn check_pinned(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let named = |issuer: String, subject: String| UntrustedIssuer { issuer, subject, trust: self.trust };
        let (_, parsed) = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        if !self.pinned.iter().any(|pinned| pinned.as_ref() == end_entity.as_ref()) {
            let untrusted = named(parsed.issuer().to_string(), parsed.subject().to_string());
            return Err(Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(untrusted)))));
        }
        let seconds = now.as_secs() as i64;
        let validity = parsed.validity();
        if seconds > validity.not_after.timestamp() {
            return Err(Error::InvalidCertificate(CertificateError::Expired));
        }
        if seconds < validity.not_before.timestamp() {
            return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
        }
        let certificate = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        certificate
            .verify_is_valid_for_subject_name(server_name)
            .map_err(|_| Error::InvalidCertificate(CertificateError::NotValidForName))?;
        Ok(ServerCertVerified::assertion())
    }
}

/// Issuer and subject of a DER certificate, as `CN=..., O=...`; `None` if it does not parse.
fn names_of(certificate: &CertificateDer<'_>) -> Option<(String, String)> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    Some((parsed.issuer().to_string(), parsed.subject().to_string()))
}

impl ServerCertVerifier for NamingIssuer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verdict =
            self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verdict {
            Err(Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
                // The issuer of the last certificate sent is the one that is missing.
                let last = intermediates.last().unwrap_or(end_entity);
                let Some((issuer, subject)) = names_of(last) else { return verdict };
                let named = UntrustedIssuer { issuer, subject, trust: self.trust };
                Err(Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(named)))))
            }
            Err(Error::InvalidCertificate(CertificateError::Other(ref other)))
                if other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity) =>
            {
                self.check_pinned(end_entity, server_name, now)
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `--insecure`: any certificate for any name, as `curl -k`. The handshake's signatures are
/// still checked, so the peer holds the key of the certificate it sent.
#[derive(Debug)]
pub(super) struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl AcceptAnyCertificate {
    pub fn new(provider: Arc<CryptoProvider>) -> Self {
        AcceptAnyCertificate { provider }
    }
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
