//! TCP_NODELAY and TCP_CORK of another process's socket: sock_diag does not report them, so
//! they are read through a copy of the owner's descriptor (`pidfd_getfd`, as `inspect` does),
//! closed at once. Where no copy may be taken the option is unknown, with the reason.

use crate::pidfd::{self, PidFd};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::os::fd::OwnedFd;

/// TCP_NODELAY of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nodelay {
    /// On: small writes leave at once.
    On,
    /// Off: Nagle may hold a small write while an earlier small segment is unacknowledged.
    Off,
    /// Not read; why.
    Unknown(UnknownWhy),
}

/// Why a socket option could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownWhy {
    /// No descriptor holds the socket (an orphan closing, or a kernel socket).
    NotHeld,
    /// The process that holds it could not be read (another user's, without root or
    /// CAP_SYS_PTRACE), or only another process was asked about.
    OwnerUnreadable,
    /// The owner may not be copied from: pidfd_getfd needs ptrace rights over it.
    NoPermission,
    /// The socket or its process went away between the table and the copy.
    Gone,
    /// This kernel has no pidfd_getfd (Linux < 5.6), or it is blocked.
    Unsupported,
    /// Options were not asked for.
    NotAsked,
}

impl fmt::Display for UnknownWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnknownWhy::NotHeld => "no process holds the socket",
            UnknownWhy::OwnerUnreadable => "its process's descriptors cannot be read here",
            UnknownWhy::NoPermission => "no permission to copy its descriptor (needs root or CAP_SYS_PTRACE)",
            UnknownWhy::Gone => "closed before it could be read",
            UnknownWhy::Unsupported => "pidfd_getfd is missing (Linux < 5.6) or blocked",
            UnknownWhy::NotAsked => "not asked for",
        })
    }
}

/// TCP_NODELAY and TCP_CORK of one socket; both unknown for the same reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    pub(crate) nodelay: Nodelay,
    pub(crate) corked: Option<bool>,
}

impl Options {
    pub(crate) fn unknown(why: UnknownWhy) -> Options {
        Options { nodelay: Nodelay::Unknown(why), corked: None }
    }
}

/// Reads options of many sockets, one pidfd per process.
#[derive(Default)]
pub(crate) struct OptionReader {
    /// A process's handle, or why none could be had.
    handles: HashMap<u32, Result<PidFd, UnknownWhy>>,
}

impl OptionReader {
    /// The options of socket `inode`, held as descriptor `fd` by process `pid`.
    pub(crate) fn read(&mut self, pid: u32, fd: i32, inode: u64) -> Options {
        let handle = self
            .handles
            .entry(pid)
            .or_insert_with(|| PidFd::open(pid as i32).map_err(|error| unknown_why(error.raw_os_error())));
        let handle = match handle {
            Ok(handle) => handle,
            Err(why) => return Options::unknown(*why),
        };
        let copy: OwnedFd = match handle.take(fd) {
            Ok(copy) => copy,
            Err(error) => {
                let why = unknown_why(error.raw_os_error());
                if why == UnknownWhy::NoPermission {
                    // Every descriptor of this process would be refused alike.
                    self.handles.insert(pid, Err(why));
                }
                return Options::unknown(why);
            }
        };
        // The number may name another file since the table was read.
        if pidfd::inode(&copy).ok() != Some(inode) {
            return Options::unknown(UnknownWhy::Gone);
        }
        match pidfd::tcp_flag(&copy, libc::TCP_NODELAY) {
            Ok(on) => Options {
                nodelay: if on { Nodelay::On } else { Nodelay::Off },
                corked: pidfd::tcp_flag(&copy, libc::TCP_CORK).ok(),
            },
            Err(_) => Options::unknown(UnknownWhy::Gone),
        }
    }
}

fn unknown_why(errno: Option<i32>) -> UnknownWhy {
    match errno {
        Some(libc::EPERM | libc::EACCES) => UnknownWhy::NoPermission,
        Some(libc::ENOSYS) => UnknownWhy::Unsupported,
        _ => UnknownWhy::Gone,
    }
}
