//! The command-line options that nodelay's libraries name in what they say (an error about a
//! value, a suggested command, a fix to paste), typed. A library names a [`Flag`]; the CLI,
//! which owns the flags, installs how each is spelled ([`install_spelling`]), taken from its
//! own argument definitions, so a flag renamed there is renamed in every message.
//!
//! A leaf: it depends on nothing, so every library that talks to the user can name a flag.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::sync::OnceLock;

/// One of nodelay's options, named by the id of its argument in the CLI's definitions: the
/// field's name, or the flag's where they differ (`http1.1`, `port` for the field `ports`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)] // each variant is the option of the same name
pub enum Flag {
    Alpha,
    Baseline,
    Budget,
    BusyPoll,
    Cacert,
    Diagnose,
    Epoll,
    FailIf,
    Frame,
    Grpc,
    GrpcMessage,
    GrpcProto,
    H2,
    H2Window,
    HdrLog,
    Html,
    Http11,
    Insecure,
    IoUring,
    Json,
    KeepFix,
    Labels,
    NoKeepalive,
    NoTlsResume,
    Pid,
    Port,
    Prometheus,
    Rate,
    Rounds,
    Scenario,
    SendBytes,
    Sni,
    Streams,
    SuccessStatus,
    Summary,
    Timeout,
    Top,
    WriteSplit,
}

impl Flag {
    /// Every flag, for the CLI to check that each names one of its arguments.
    pub const ALL: &[Flag] = &[
        Flag::Alpha,
        Flag::Baseline,
        Flag::Budget,
        Flag::BusyPoll,
        Flag::Cacert,
        Flag::Diagnose,
        Flag::Epoll,
        Flag::FailIf,
        Flag::Frame,
        Flag::Grpc,
        Flag::GrpcMessage,
        Flag::GrpcProto,
        Flag::H2,
        Flag::H2Window,
        Flag::HdrLog,
        Flag::Html,
        Flag::Http11,
        Flag::Insecure,
        Flag::IoUring,
        Flag::Json,
        Flag::KeepFix,
        Flag::Labels,
        Flag::NoKeepalive,
        Flag::NoTlsResume,
        Flag::Pid,
        Flag::Port,
        Flag::Prometheus,
        Flag::Rate,
        Flag::Rounds,
        Flag::Scenario,
        Flag::SendBytes,
        Flag::Sni,
        Flag::Streams,
        Flag::SuccessStatus,
        Flag::Summary,
        Flag::Timeout,
        Flag::Top,
        Flag::WriteSplit,
    ];

    /// The id of the CLI argument this flag is: the field's name in its definition.
    pub fn arg_id(self) -> &'static str {
        match self {
            Flag::Alpha => "alpha",
            Flag::Baseline => "baseline",
            Flag::Budget => "budget",
            Flag::BusyPoll => "busy_poll",
            Flag::Cacert => "cacert",
            Flag::Diagnose => "diagnose",
            Flag::Epoll => "epoll",
            Flag::FailIf => "fail_if",
            Flag::Frame => "frame",
            Flag::Grpc => "grpc",
            Flag::GrpcMessage => "grpc_message",
            Flag::GrpcProto => "grpc_proto",
            Flag::H2 => "h2",
            Flag::H2Window => "h2_window",
            Flag::HdrLog => "hdr_log",
            Flag::Html => "html",
            Flag::Http11 => "http1.1",
            Flag::Insecure => "insecure",
            Flag::IoUring => "io_uring",
            Flag::Json => "json",
            Flag::KeepFix => "keep_fix",
            Flag::Labels => "labels",
            Flag::NoKeepalive => "no_keepalive",
            Flag::NoTlsResume => "no_tls_resume",
            Flag::Pid => "pid",
            Flag::Port => "port",
            Flag::Prometheus => "prometheus",
            Flag::Rate => "rate",
            Flag::Rounds => "rounds",
            Flag::Scenario => "scenario",
            Flag::SendBytes => "send",
            Flag::Sni => "sni",
            Flag::Streams => "streams",
            Flag::SuccessStatus => "success_status",
            Flag::Summary => "summary",
            Flag::Timeout => "timeout",
            Flag::Top => "top",
            Flag::WriteSplit => "write_split",
        }
    }

    /// The flag as its argument id reads with dashes: what a flag shows before the CLI
    /// installs its spelling, and what the CLI's tests hold that spelling to.
    pub fn id_spelling(self) -> String {
        format!("--{}", self.arg_id().replace('_', "-"))
    }
}

/// How the CLI spells a flag (with its dashes).
pub type Spelling = fn(Flag) -> &'static str;

static SPELLING: OnceLock<Spelling> = OnceLock::new();

/// Installs the CLI's spelling, once per process; a second call changes nothing.
pub fn install_spelling(spelling: Spelling) {
    let _ = SPELLING.set(spelling);
}

/// The CLI's spelling when it installed one. Without it (a library's own tests, a program that
/// uses the libraries), a flag is shown as its argument id with dashes; the CLI's tests hold
/// each id to its flag's spelling, so the two read the same.
impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match SPELLING.get() {
            Some(spelling) => f.write_str(spelling(*self)),
            None => f.write_str(&self.id_spelling()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_is_listed_once_with_its_own_id() {
        let mut ids: Vec<&str> = Flag::ALL.iter().map(|f| f.arg_id()).collect();
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count);
        // In declaration order with none missing: the last variant's index ends the list.
        assert!(Flag::ALL.iter().enumerate().all(|(index, flag)| *flag as usize == index));
        assert_eq!(Flag::ALL.len(), Flag::WriteSplit as usize + 1);
    }

    #[test]
    fn without_the_cli_a_flag_reads_as_its_id_with_dashes() {
        assert_eq!(Flag::NoTlsResume.to_string(), "--no-tls-resume");
        assert_eq!(Flag::Http11.to_string(), "--http1.1");
    }
}

#[cfg(test)]
mod capture_check {
    use super::Flag::{Cacert, Insecure};

    #[test]
    fn a_variant_in_scope_is_captured_by_a_format_string() {
        let shown = "a.pem";
        assert_eq!(format!("use {Cacert} {shown} or {Insecure}"), "use --cacert a.pem or --insecure");
    }
}
