//! How a watch ends: its errors (a usage mistake, a failure, an output that went away) and
//! what the caller needs for its exit status.

use std::io;

/// An option of watch's that a usage error is about: the front end names it as its users
/// spell it (the library does not spell flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchOption {
    /// The ports followed.
    Port,
    /// The process followed.
    Pid,
    /// The address the metrics are served on.
    Prometheus,
}

/// Why watch could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A mistake in what was asked (a bad interface, a process that does not exist).
    #[error("{0}")]
    Usage(String),
    /// A mistake in one option's value (`value` as given, empty where the mistake is not one
    /// value's): the front end puts the option's name before it.
    #[error("{}{message}", if value.is_empty() { String::new() } else { format!("{value}: ") })]
    BadOption {
        /// The option.
        option: WatchOption,
        /// Its value as given; empty where the mistake is not one value's.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// Something else failed.
    #[error("{0}")]
    Failed(String),
    /// The sink refused an event (stdout closed).
    #[error("writing the output: {0}")]
    Output(io::Error),
}

/// How a watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEnd {
    /// A stall was found (capture mode) or a socket that can stall (sock_diag mode).
    pub findings: bool,
}
