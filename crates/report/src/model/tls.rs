//! What a run over TLS reports: how the server was trusted (in the settings, known before the
//! run) and what the handshakes settled on and cost (after it). Part of the bench, compare
//! and doctor JSON contracts.

use crate::model::percentiles::Percentiles;
use nodelay_engine::{Stats, TlsClient, TlsSummary, TlsTrust};
use nodelay_flags::Flag;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// `resume` for a run saved without it: the default.
fn resume_when_unsaid() -> bool {
    true
}

/// The TLS options of an https:// run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSettings {
    /// How the certificate is checked: `system` (trust store), `ca_file` (--cacert) or
    /// `insecure` (not at all).
    pub trust: TlsTrust,
    /// New connections offer an earlier session (false with --no-tls-resume; true, the
    /// default, in a run saved without it).
    #[serde(default = "resume_when_unsaid")]
    pub resume: bool,
}

impl TlsSettings {
    /// The settings of a TLS client.
    pub fn of(client: &TlsClient) -> Self {
        TlsSettings { trust: client.trust, resume: client.resume }
    }

    /// The header's line about trust, e.g. "TLS, certificate checked against the system's
    /// trust store".
    pub fn describe(&self) -> String {
        let trust = trust_phrase(self.trust);
        let resume = if self.resume { "sessions resumed" } else { "no session resumption" };
        format!("TLS, {trust}, {resume}")
    }
}

/// How the server's certificate was checked, as the headers say it.
fn trust_phrase(trust: TlsTrust) -> String {
    match trust {
        TlsTrust::System => "certificate checked against the system's trust store".to_string(),
        TlsTrust::CaFile => format!("certificate checked against {}", Flag::Cacert),
        TlsTrust::Insecure => format!("certificate NOT checked ({})", Flag::Insecure),
    }
}

/// How a doctor's connections were trusted and what they settled on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsNegotiated {
    /// How the certificate was checked.
    pub trust: TlsTrust,
    /// `TLSv1.3` or `TLSv1.2`; null when no handshake completed.
    pub version: Option<Cow<'static, str>>,
    /// IANA cipher suite name; null when no handshake completed.
    pub cipher: Option<Cow<'static, str>>,
    /// The protocol the server chose by ALPN (`http/1.1`); null when it ignored ALPN.
    pub alpn: Option<Cow<'static, str>>,
}

impl TlsNegotiated {
    /// What a client's handshakes settled on (`summary`; none when no handshake completed).
    pub fn of(client: &TlsClient, summary: Option<TlsSummary>) -> Self {
        TlsNegotiated {
            trust: client.trust,
            version: summary.map(|s| Cow::Borrowed(s.version)),
            cipher: summary.map(|s| Cow::Borrowed(s.cipher)),
            alpn: summary.and_then(alpn_name).map(Cow::Borrowed),
        }
    }

    /// "TLSv1.3 TLS_AES_256_GCM_SHA384, certificate checked against --cacert".
    pub fn describe(&self) -> String {
        let negotiated = match (&self.version, &self.cipher) {
            (Some(version), Some(cipher)) => format!("{version} {cipher}"),
            _ => "TLS (no handshake completed)".to_string(),
        };
        format!("{negotiated}, {}", trust_phrase(self.trust))
    }
}

/// What the TLS handshakes of a run settled on and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsReport {
    /// `TLSv1.3` or `TLSv1.2`; null when no handshake completed.
    pub version: Option<Cow<'static, str>>,
    /// IANA cipher suite name.
    pub cipher: Option<Cow<'static, str>>,
    /// The protocol the server chose by ALPN (`http/1.1`), null if it ignored ALPN.
    pub alpn: Option<Cow<'static, str>>,
    /// Handshakes that exchanged certificates.
    pub full_handshakes: u64,
    /// Handshakes that resumed an earlier session.
    pub resumed_handshakes: u64,
    /// Handshakes that exchanged certificates (after the TCP handshake).
    pub full_handshake_ms: Option<Percentiles>,
    /// Handshakes that resumed an earlier session.
    pub resumed_handshake_ms: Option<Percentiles>,
}

impl TlsReport {
    /// What the TLS handshakes of a run settled on and cost.
    pub fn of(stats: &Stats) -> Self {
        let summary = stats.tls();
        TlsReport {
            version: summary.map(|s| Cow::Borrowed(s.version)),
            cipher: summary.map(|s| Cow::Borrowed(s.cipher)),
            alpn: summary.and_then(alpn_name).map(Cow::Borrowed),
            full_handshakes: stats.tls_full_handshake_ns.len(),
            resumed_handshakes: stats.tls_resumed_handshake_ns.len(),
            full_handshake_ms: Percentiles::from_ns(&stats.tls_full_handshake_ns),
            resumed_handshake_ms: Percentiles::from_ns(&stats.tls_resumed_handshake_ns),
        }
    }

    /// One sentence: "TLSv1.3 TLS_AES_256_GCM_SHA384, ALPN http/1.1; 12 handshakes: 2 full
    /// (p50 1.20 ms), 10 resumed (p50 0.41 ms)".
    pub fn describe(&self) -> String {
        let negotiated = match (&self.version, &self.cipher) {
            (Some(version), Some(cipher)) => format!("{version} {cipher}"),
            _ => "no handshake completed".to_string(),
        };
        let alpn = match &self.alpn {
            Some(protocol) => format!(", ALPN {protocol}"),
            None if self.version.is_some() => ", no ALPN answer".to_string(),
            None => String::new(),
        };
        let p50 = |p: &Option<Percentiles>| {
            p.map(|p| format!(" (p50 {})", crate::format::format_duration_ms(p.p50))).unwrap_or_default()
        };
        let total = self.full_handshakes + self.resumed_handshakes;
        if total == 0 {
            return format!("{negotiated}{alpn}");
        }
        format!(
            "{negotiated}{alpn}; {}: {} full{}, {} resumed{}",
            crate::format::plural(total as usize, "handshake", "handshakes"),
            self.full_handshakes,
            p50(&self.full_handshake_ms),
            self.resumed_handshakes,
            p50(&self.resumed_handshake_ms),
        )
    }
}

/// The protocol the server chose by ALPN, as the JSON names it.
fn alpn_name(summary: TlsSummary) -> Option<&'static str> {
    match (summary.alpn_h2, summary.alpn_http11) {
        (true, _) => Some("h2"),
        (false, true) => Some("http/1.1"),
        (false, false) => None,
    }
}
