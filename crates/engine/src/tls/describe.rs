//! One line for each way TLS goes wrong, saying what to do about it, and the first bytes
//! that tell a plain-HTTP answer from a TLS one.

use super::verify::UntrustedIssuer;
use nodelay_flags::Flag::{Cacert, Insecure, Sni};
use rustls::{CertificateError, Error};

/// What the user reads when a handshake or a TLS connection fails (no trailing period).
pub fn describe_tls_error(error: &Error) -> String {
    match error {
        Error::InvalidCertificate(certificate) => describe_certificate(certificate),
        Error::AlertReceived(alert) => {
            let name = alert.as_str().map_or_else(|| format!("{alert:?}"), snake_case);
            format!("TLS handshake failed: the server sent the alert {name}")
        }
        Error::PeerIncompatible(why) => {
            format!("TLS handshake failed: the server cannot speak what nodelay offers ({why:?})")
        }
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            format!("TLS: the server sent something that is not TLS ({error})")
        }
        Error::NoApplicationProtocol => {
            "TLS handshake failed: the server does not speak http/1.1 (ALPN)".to_string()
        }
        other => format!("TLS: {other}"),
    }
}

fn describe_certificate(error: &CertificateError) -> String {
    match error {
        CertificateError::Other(other) => match other.0.downcast_ref::<UntrustedIssuer>() {
            Some(untrusted) => format!("TLS: {untrusted}"),
            None => format!("TLS: certificate rejected: {}", other.0),
        },
        CertificateError::UnknownIssuer => {
            format!(
                "TLS: certificate not trusted: its issuer is not in the trust store; use {Cacert} FILE or {Insecure}"
            )
        }
        CertificateError::NotValidForNameContext { expected, presented } => {
            let expected = expected.to_str();
            let names: Vec<&str> = presented.iter().filter_map(|name| plain_name(name)).collect();
            let names = if names.is_empty() { "no name".to_string() } else { names.join(", ") };
            format!(
                "TLS: certificate name mismatch: the certificate is for: {names} (not {expected}); use {Sni} NAME with one of its names, or {Insecure}"
            )
        }
        CertificateError::NotValidForName => {
            format!(
                "TLS: certificate name mismatch: it is not for the URL's host; use {Sni} NAME, or {Insecure}"
            )
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            format!("TLS: certificate expired; renew it, or use {Insecure}")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("TLS: certificate not valid yet (check this machine's clock), or use {Insecure}")
        }
        other => format!("TLS: certificate rejected: {other}"),
    }
}

/// A certificate's name as the user types it: webpki lists them in its debug form
/// (`DnsName("a.example")`, `IpAddress(127.0.0.1)`); names nothing can be sent as (a
/// directory name, an unsupported kind) are left out.
fn plain_name(presented: &str) -> Option<&str> {
    let inner = ["DnsName(", "IpAddress(", "UniformResourceIdentifier("]
        .iter()
        .find_map(|kind| presented.strip_prefix(kind)?.strip_suffix(')'));
    match inner {
        Some(inner) => Some(inner.trim_matches('"')),
        // Another form (a later webpki may print names plainly): as it is.
        None if presented.contains(['(', ')']) || presented == "DirectoryName" => None,
        None => Some(presented),
    }
}

/// `HandshakeFailure` → `handshake_failure`, as RFC 8446 names alerts.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (index, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The bytes start like a TLS record (handshake or alert, version 3.x): a plain-HTTP client
/// talked to a TLS server.
pub fn looks_like_tls_record(bytes: &[u8]) -> bool {
    matches!(bytes, [0x15 | 0x16, 0x03, ..])
}

/// What the first bytes of a server's answer to a ClientHello say when they are no TLS
/// record but text: a TLS client talked to a plain-HTTP server (which may answer with a
/// status line, or with a bare HTML page as HTTP/0.9).
pub(crate) fn plain_text_answer(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"HTTP/") {
        return Some(
            "the server answered in plain HTTP, not TLS: use an http:// URL (or the port that speaks TLS)",
        );
    }
    // A TLS record starts with a content type of 20 to 24, never a printable character.
    let head = &bytes[..bytes.len().min(5)];
    let text = !head.is_empty() && head.iter().all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace());
    text.then_some("the server answered in plain text, not TLS (plain HTTP?): use an http:// URL (or the port that speaks TLS)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::AlertDescription;

    #[test]
    fn alerts_are_named_as_in_the_rfc() {
        let text = describe_tls_error(&Error::AlertReceived(AlertDescription::HandshakeFailure));
        assert_eq!(text, "TLS handshake failed: the server sent the alert handshake_failure");
        let text = describe_tls_error(&Error::AlertReceived(AlertDescription::ProtocolVersion));
        assert!(text.ends_with("protocol_version"), "{text}");
    }

    #[test]
    fn a_name_mismatch_lists_the_certificate_names() {
        let error = CertificateError::NotValidForNameContext {
            expected: rustls::pki_types::ServerName::try_from("example.com").unwrap().to_owned(),
            presented: vec![
                "DnsName(\"localhost\")".into(),
                "IpAddress(127.0.0.1)".into(),
                "DirectoryName".into(),
                "a.example".into(),
            ],
        };
        let text = describe_tls_error(&Error::InvalidCertificate(error));
        assert!(
            text.contains("the certificate is for: localhost, 127.0.0.1, a.example (not example.com)"),
            "{text}"
        );
        assert!(text.contains("--sni"), "{text}");
    }

    #[test]
    fn first_bytes_tell_tls_from_http() {
        assert!(looks_like_tls_record(&[0x15, 0x03, 0x03, 0x00, 0x02]));
        assert!(looks_like_tls_record(&[0x16, 0x03, 0x01]));
        assert!(!looks_like_tls_record(b"HTTP/1.1 200 OK"));
        assert!(plain_text_answer(b"HTTP/1.0 400 Bad request").unwrap().contains("plain HTTP"));
        assert!(plain_text_answer(b"<!DOCTYPE HTML>").unwrap().contains("plain text"));
        assert!(plain_text_answer(&[0x16, 0x03, 0x03, 0x00, 0x7a]).is_none());
        assert!(plain_text_answer(&[0x15, 0x03]).is_none());
    }
}
