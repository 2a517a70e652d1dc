//! Other systems have neither /proc nor pidfd_getfd: every call says so.

use crate::{HostError, Inspection, NodelayChange, Restored, ServerView, Target};
use std::convert::Infallible;

const WHY: &str = "reading another process's sockets needs Linux (pidfd_getfd)";

pub fn inspect(_target: Target) -> Result<Inspection, HostError> {
    Err(HostError::Unsupported(WHY))
}

pub fn set_nodelay(_target: Target, _dry_run: bool) -> Result<NodelayChange, HostError> {
    Err(HostError::Unsupported(WHY))
}

/// Nothing was ever changed here.
pub fn restore(_change: &NodelayChange) -> Restored {
    Restored::default()
}

pub fn force_nodelay(_pid: i32) -> Result<usize, HostError> {
    Err(HostError::Unsupported(WHY))
}

/// Never built here: `start` says why.
pub struct ServerWatch {
    never: Infallible,
}

impl ServerWatch {
    pub fn start(target: Target) -> Result<ServerWatch, HostError> {
        ServerWatch::start_paced(target, crate::SamplerPace::Steady)
    }

    pub fn start_paced(_target: Target, _pace: crate::SamplerPace) -> Result<ServerWatch, HostError> {
        Err(HostError::Unsupported("the server view reads /proc, which only Linux has"))
    }

    pub fn ending(&self) {
        match self.never {}
    }

    pub fn samples_taken(&self) -> u64 {
        match self.never {}
    }

    pub fn finish(self) -> Result<ServerView, HostError> {
        match self.never {}
    }
}
