//! How a watch ends: its errors (a usage mistake, a failure, an output that went away) and
//! what the caller needs for its exit status.

use std::io;

/// Why watch could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A mistake in what was asked (a bad interface, a process that does not exist).
    #[error("{0}")]
    Usage(String),
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
