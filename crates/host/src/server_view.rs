//! The server's side of a run, for a target on this machine: what the processes behind a
//! listening port spent on CPU, which of their threads were busy or waiting for a CPU, the
//! outgoing connections they opened (their upstreams), and the machine's CPU pressure.
//! Read from /proc at the start and end of a run (plus a light sample during it to learn
//! where the server connects); serialized as-is in JSON.

use crate::ProcessInfo;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// /proc/PID/stat counts CPU in clock ticks (10 ms at the usual 100 Hz): two of them, one at
/// each end of the run.
const TICK_ROUNDING_US: u64 = 20_000;

/// One thread of the server and how it spent the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadLoad {
    /// The process the thread belongs to.
    pub pid: i32,
    /// The thread's ID.
    pub tid: i32,
    /// The thread's name (`comm`).
    pub name: String,
    /// Time on a CPU during the run (`/proc/PID/task/TID/schedstat`, first field).
    pub on_cpu_us: u64,
    /// Time runnable but waiting for a CPU (second field): cores taken by someone else.
    pub waiting_for_cpu_us: u64,
}

/// A destination the server connects to (it held a connection to it whose local port is not
/// one of its listening ports), and what the run did there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream {
    /// The address the server connected to.
    pub destination: SocketAddr,
    /// TCP connections to `destination` that appeared during the run (new 4-tuples in
    /// the TCP socket table in any state, TIME-WAIT included, between the start and the end).
    pub opened: u64,
    /// Connections from the server to `destination` established at the end of the run.
    pub open_at_end: u64,
    /// Segments the server sent on connections to `destination` that existed both at the
    /// start and at the end (a keep-alive pool): traffic without new connections.
    pub pooled_segments_out: u64,
    /// `opened` reached a round of the local port range (an eighth of `ip_local_port_range`
    /// since Linux 5.17, half before; known when the server shares nodelay's namespace): the
    /// kernel's choice of local port has gone round the range, so 4-tuples may have been used
    /// again, each counting once unless the sampler met each of its sockets (where the side
    /// holding TIME-WAIT lets a 4-tuple be reused, as loopback does). `opened` may then be far below the true count (a third of it at 40 k
    /// connects to one destination over the default 28 k ports);
    /// `ServerView::namespace_connects_by_others` bounds it from above.
    pub ports_cycled: bool,
}

impl Upstream {
    /// Whether the run sent anything there.
    pub fn carried_traffic(&self) -> bool {
        self.opened > 0 || self.pooled_segments_out > 0
    }
}

/// Share of the run during which at least one task on this machine waited for a CPU
/// (`/proc/pressure/cpu`, the `some` line's `total`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuPressure {
    /// Fraction of the run (0 to 1) during which some task waited for a CPU.
    pub some_waiting_share: f64,
}

/// The server's accept queue over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ListenQueueView {
    /// The listening socket's queue limit (the `listen()` backlog, capped by
    /// `net.core.somaxconn`) at the end; `None` when its descriptor could not be copied.
    pub backlog: Option<u32>,
    /// Connections waiting for `accept()` at the end.
    pub queued_at_end: Option<u32>,
    /// `TcpExtListenOverflows` during the run: handshakes that found an accept queue full
    /// (the server's network namespace, every listener in it).
    pub overflows: u64,
    /// `TcpExtListenDrops` during the run: SYNs and handshake ACKs dropped at a listener.
    pub drops: u64,
}

/// The server's side of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    /// Every process that holds the listening socket (nginx: master and workers).
    pub processes: Vec<ProcessInfo>,
    /// From start to finish of the watch.
    pub wall_us: u64,
    /// User CPU time of all the processes during the run, exited threads included.
    pub cpu_user_us: u64,
    /// System CPU time of all the processes during the run, exited threads included.
    pub cpu_system_us: u64,
    /// Threads that ran during the run, busiest first (at most 16).
    pub threads: Vec<ThreadLoad>,
    /// Destinations the server connects to, most connections opened first.
    pub upstreams: Vec<Upstream>,
    /// `None` where the kernel has no PSI (/proc/pressure/cpu absent).
    pub cpu_pressure: Option<CpuPressure>,
    /// The listening socket's accept queue and the handshakes dropped while it was full;
    /// `None` where /proc/PID/net/netstat could not be read.
    pub listen_queue: Option<ListenQueueView>,
    /// CPUs this machine has online.
    pub online_cpus: u32,
    /// The ports the processes listened on, at the start or the end, in order.
    pub listening_ports: Vec<u16>,
    /// connect()s in the server's network namespace during the run (`Tcp: ActiveOpens` of
    /// /proc/PID/net/snmp) less the run's own when nodelay shares that namespace: every
    /// connection the server opened is among them, with any other process's. `None` where
    /// the counters could not be read.
    pub namespace_connects_by_others: Option<u64>,
    /// Parts that could not be read, each said in a few words (a process that ended, ...).
    pub unread: Vec<String>,
}

impl ServerView {
    /// CPU time of the run: the threads' own (schedstat, exact), unless /proc/PID/stat's
    /// count (10 ms ticks, but including threads that came and went between two samples)
    /// is larger by more than its rounding.
    pub fn cpu_us(&self) -> u64 {
        let ticks = self.cpu_user_us + self.cpu_system_us;
        let threads: u64 = self.threads.iter().map(|t| t.on_cpu_us).sum();
        if ticks > threads + TICK_ROUNDING_US { ticks } else { threads }
    }

    /// The thread that spent the most time on a CPU, when any ran.
    pub fn busiest_thread(&self) -> Option<&ThreadLoad> {
        self.threads.first()
    }
}
