//! What can go wrong when reading another process's sockets, each as one line for the user.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HostError {
    #[error("no process with PID {0}")]
    NoSuchProcess(i32),
    #[error("nothing listens on TCP port {0} on this machine")]
    NobodyListens(u16),
    #[error(
        "TCP port {port} is listened on by uid {uid}, but no process of it can be read here: \
         another user's /proc/PID/fd needs root or CAP_SYS_PTRACE; `nodelay exec` needs none"
    )]
    PortOwnerHidden { port: u16, uid: u32 },
    /// `why` says which permission is missing, in words.
    #[error("no permission to take the sockets of PID {pid} ({command}): {why}; `nodelay exec` needs none")]
    NoPermission { pid: i32, command: String, why: String },
    #[error("{0}")]
    Unsupported(&'static str),
    #[error("{tid} is a thread of PID {pid}, not a process: name PID {pid}")]
    Thread { tid: i32, pid: i32 },
    #[error("PID {0} has exited (a zombie its parent has not reaped): it has no sockets")]
    Exited(i32),
    /// Not a `source`: the message carries it, once.
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
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
