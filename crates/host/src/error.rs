//! What can go wrong when reading another process's sockets, each as one line for the user.

use thiserror::Error;

/// What can go wrong when reading or changing another process's sockets; each displays as one
/// line for the user.
#[derive(Debug, Error)]
pub enum HostError {
    /// No process has this PID.
    #[error("no process with PID {0}")]
    NoSuchProcess(i32),
    /// No socket listens on this TCP port.
    #[error("nothing listens on TCP port {0} on this machine")]
    NobodyListens(u16),
    /// The port's listener belongs to another user, whose processes cannot be read here.
    #[error(
        "TCP port {port} is listened on by uid {uid}, but no process of it can be read here: \
         another user's /proc/PID/fd needs root or CAP_SYS_PTRACE; `nodelay exec` needs none"
    )]
    PortOwnerHidden {
        /// The listening port.
        port: u16,
        /// The user that owns the listening socket.
        uid: u32,
    },
    /// The process exists but its sockets may not be copied.
    #[error("no permission to take the sockets of PID {pid} ({command}): {why}; `nodelay exec` needs none")]
    NoPermission {
        /// The process.
        pid: i32,
        /// Its name (`comm`).
        command: String,
        /// Which permission is missing, in words.
        why: String,
    },
    /// Not possible on this system; the text says why.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The PID named is a thread of another process.
    #[error("{tid} is a thread of PID {pid}, not a process: name PID {pid}")]
    Thread {
        /// The thread ID that was named.
        tid: i32,
        /// The process it belongs to.
        pid: i32,
    },
    /// The process is a zombie, with no sockets left.
    #[error("PID {0} has exited (a zombie its parent has not reaped): it has no sockets")]
    Exited(i32),
    /// A read or system call failed. `error` is not a `source`: the message carries it, once.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, in words.
        what: String,
        /// The failure.
        error: std::io::Error,
    },
}

impl HostError {
    // Only the Linux implementation meets I/O failures; elsewhere every call is Unsupported.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        HostError::Io { what: what.into(), error: source }
    }

    /// Errors that mean "you may not", as opposed to "there is nothing there".
    pub fn is_permission(&self) -> bool {
        matches!(self, HostError::NoPermission { .. } | HostError::PortOwnerHidden { .. })
    }
}
