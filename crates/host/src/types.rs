//! What this crate reports about processes and their sockets (serialized as-is in JSON).

use nodelay_tcp::TcpInfo;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// A process that holds a socket.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessInfo {
    /// Its process ID.
    pub pid: i32,
    /// The kernel's name for it (`comm`, at most 15 bytes).
    pub command: String,
    /// The user that owns it (the owner of /proc/PID).
    pub uid: u32,
}

/// How often the server view's sampler looks while a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplerPace {
    /// Every 10 ms or more once its first 100 ms (at 1 ms) are over: for a run whose end is
    /// not known beforehand (a request count) and for the doctor, whose verdicts weigh each
    /// thread's CPU.
    Steady,
    /// As steady, but every 160 ms once the namespace's TCP open counts and the server's
    /// threads have stood still for a second and no socket is connecting (a keep-alive run
    /// past its connects); quick again as soon as they move, after `ServerWatch::ending`, and
    /// over the last 250 ms before the run is due to end at this instant, when its connections
    /// close and a thread per connection ends: each wake-up on the generator's core costs the
    /// server requests.
    RelaxedUntil(std::time::Instant),
}

/// A TCP socket's state as `ss` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SocketState {
    /// Listening for connections.
    Listen,
    /// Connected.
    Established,
    /// Connecting: SYN sent, no answer yet.
    SynSent,
    /// A half-open connection: SYN received, SYN-ACK sent.
    SynRecv,
    /// Closed by this side, its FIN not yet acknowledged.
    FinWait1,
    /// Closed by this side and acknowledged, waiting for the peer's FIN.
    FinWait2,
    /// Closed on both sides, waiting out the peer's last retransmissions.
    TimeWait,
    /// Closed.
    Close,
    /// Closed by the peer, not yet by this side.
    CloseWait,
    /// Closed by the peer then by this side, waiting for the ACK of its FIN.
    LastAck,
    /// Both sides closed at once, waiting for the ACK of this side's FIN.
    Closing,
}

impl SocketState {
    /// `ss`'s abbreviation, for tables.
    pub fn short(self) -> &'static str {
        match self {
            SocketState::Listen => "LISTEN",
            SocketState::Established => "ESTAB",
            SocketState::SynSent => "SYN-SENT",
            SocketState::SynRecv => "SYN-RECV",
            SocketState::FinWait1 => "FIN-WAIT-1",
            SocketState::FinWait2 => "FIN-WAIT-2",
            SocketState::TimeWait => "TIME-WAIT",
            SocketState::Close => "CLOSE",
            SocketState::CloseWait => "CLOSE-WAIT",
            SocketState::LastAck => "LAST-ACK",
            SocketState::Closing => "CLOSING",
        }
    }
}

/// One TCP socket of a process, as read through a copy of its descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketView {
    /// The process that holds the descriptor.
    pub pid: i32,
    /// The descriptor number in that process.
    pub fd: i32,
    /// The socket's inode: the same socket shared by several processes has one inode.
    pub inode: u64,
    /// Its TCP state.
    pub state: SocketState,
    /// Its local address.
    pub local: SocketAddr,
    /// `None` for a listening socket.
    pub peer: Option<SocketAddr>,
    /// Whether TCP_NODELAY is on.
    pub nodelay: bool,
    /// Whether TCP_CORK is on.
    pub cork: bool,
    /// Only for connected sockets.
    pub tcp_info: Option<TcpInfo>,
}

/// The TCP sockets of a target: its processes and one entry per socket (shared sockets
/// once, under the first process that holds them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    /// The processes that hold the sockets.
    pub processes: Vec<ProcessInfo>,
    /// The sockets, shared ones once.
    pub sockets: Vec<SocketView>,
}

/// What setting TCP_NODELAY did (or, on a dry run, would do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodelayChange {
    /// The processes whose sockets were set.
    pub processes: Vec<ProcessInfo>,
    /// Nothing was set: the change says what would have been.
    pub dry_run: bool,
    /// The sockets whose TCP_NODELAY was off, as they were before (`nodelay: false`).
    pub changed: Vec<SocketView>,
    /// Sockets that had it on already.
    pub already_on: usize,
    /// Where the target's listening sockets are bound, changed or not: where a connection
    /// opened afterwards shows whether the program keeps what the listener passes on.
    pub listening: Vec<SocketAddr>,
}

impl NodelayChange {
    /// How many of the changed sockets were listening ones (connections they accept later
    /// inherit TCP_NODELAY).
    pub fn listening_changed(&self) -> usize {
        self.changed.iter().filter(|s| s.state == SocketState::Listen).count()
    }
}

/// What restoring a [`NodelayChange`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Sockets set back to TCP_NODELAY off.
    pub restored: usize,
    /// Sockets that no longer exist (closed, or their process ended): nothing to restore.
    pub gone: usize,
    /// Sockets that exist but could not be set back, each with why.
    pub failed: Vec<String>,
}

/// A connection opened to the program after a fix, and TCP_NODELAY on the program's side of
/// it: connections accepted from a listener inherit its TCP_NODELAY, unless the program turns
/// it off on each one it accepts (Node's `socket.setNoDelay(false)`, Go's
/// `SetNoDelay(false)`), and then no fix from outside holds for the connections to come.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewConnection {
    /// Where it connected (a listener's address; loopback for a wildcard one).
    pub address: SocketAddr,
    /// The process that accepted it; `None` when none of the target's did in time.
    pub accepted_by: Option<i32>,
    /// TCP_NODELAY on the program's side, off as soon as one reading found it off while it
    /// was watched; `None` when it could not be read.
    pub nodelay: Option<bool>,
    /// How long it was watched after the program accepted it, in milliseconds.
    pub watched_ms: f64,
    /// What it means, in one line: the fix holds, or cannot hold and what to do instead, or
    /// why it could not be read.
    pub summary: String,
}

impl NewConnection {
    /// The program turned TCP_NODELAY off on the new connection: the fix cannot hold.
    pub fn turned_off(&self) -> bool {
        self.nodelay == Some(false)
    }
}

/// A report followed by the check of a new connection (`nodelay fix`), flattened into it: the
/// report's own fields stay where they are, and `new_connection` is added beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WithNewConnection<R> {
    /// The report.
    #[serde(flatten)]
    pub report: R,
    /// `None` on a dry run, and when the target has no listening socket.
    pub new_connection: Option<NewConnection>,
}
