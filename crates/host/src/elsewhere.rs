//! Other systems have neither /proc nor pidfd_getfd: every call says so.

use crate::{HostError, Inspection, NewConnection, NodelayChange, Restored, ServerView, Target};
use std::convert::Infallible;

const WHY: &str = "reading another process's sockets needs Linux (pidfd_getfd)";

/// Fails with [`HostError::Unsupported`]: reading another process's sockets needs Linux.
pub fn inspect(_target: Target) -> Result<Inspection, HostError> {
    Err(HostError::Unsupported(WHY))
}

/// Fails with [`HostError::Unsupported`]: setting another process's sockets needs Linux.
pub fn set_nodelay(_target: Target, _dry_run: bool) -> Result<NodelayChange, HostError> {
    Err(HostError::Unsupported(WHY))
}

/// Nothing is checked here: no change was ever made.
pub fn check_new_connection(_change: &NodelayChange) -> Option<NewConnection> {
    None
}

/// Unknown here: no socket table is read.
pub fn listens_on(_port: u16) -> bool {
    false
}

/// Nothing was ever changed here.
pub fn restore(_change: &NodelayChange) -> Restored {
    Restored::default()
}

/// Fails with [`HostError::Unsupported`]: setting another process's sockets needs Linux.
pub fn force_nodelay(_pid: i32) -> Result<usize, HostError> {
    Err(HostError::Unsupported(WHY))
}

/// Never built here: `start` says why.
pub struct ServerWatch {
    never: Infallible,
}

impl ServerWatch {
    /// Fails with [`HostError::Unsupported`]: the server view reads /proc, which only Linux has.
    pub fn start(target: Target) -> Result<ServerWatch, HostError> {
        ServerWatch::start_paced(target, crate::SamplerPace::Steady)
    }

    /// Fails with [`HostError::Unsupported`]: the server view reads /proc, which only Linux has.
    pub fn start_paced(_target: Target, _pace: crate::SamplerPace) -> Result<ServerWatch, HostError> {
        Err(HostError::Unsupported("the server view reads /proc, which only Linux has"))
    }

    /// Never called: no watch exists.
    pub fn ending(&self) {
        match self.never {}
    }

    /// Never called: no watch exists.
    pub fn samples_taken(&self) -> u64 {
        match self.never {}
    }

    /// Never called: no watch exists.
    pub fn finish(self) -> Result<ServerView, HostError> {
        match self.never {}
    }
}
