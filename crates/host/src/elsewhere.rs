//! Other systems have neither /proc nor pidfd_getfd: every call says so.

use crate::{HostError, Inspection, NodelayChange, Restored, Target};

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
