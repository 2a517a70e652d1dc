//! How a watch ends: its errors (a usage mistake, a failure, an output that went away) and
//! what the caller needs for its exit status.

use nodelay_flags::Flag;
use std::io;

/// Why watch could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A mistake in what was asked (a bad interface, a process that does not exist).
    #[error("{0}")]
    Usage(String),
    /// A mistake in one option's value (`value` as given, empty where the mistake is not one
    /// value's): the front end puts the option, as it spells it, before it.
    #[error("{}{message}", if value.is_empty() { String::new() } else { format!("{value}: ") })]
    BadOption {
        /// The option (`--port`, `--pid` or `--prometheus`).
        option: Flag,
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
