//! One TCP socket as the kernel's socket table lists it, whichever way it was read:
//! `sock_diag` and `tcp_table` both produce it, and `tcp_table` falls back from one to the
//! other, so it lives apart from both.

use procfs::net::TcpState;
use std::net::SocketAddr;

/// What the server view and `inspect` need of one socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLine {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: TcpState,
    /// Microseconds left in TIME-WAIT; `None` for any other socket.
    pub time_wait_left_us: Option<u64>,
    /// 0 for a socket no process holds (TIME-WAIT, or closed and still closing).
    pub inode: u64,
    /// The user that owns it. A half-open connection (SYN-RECV) has the listener's in /proc
    /// and 0 in sock_diag: only listeners' owners are read.
    pub uid: u32,
}
