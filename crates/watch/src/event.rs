//! What `nodelay watch` tells, as typed events: the mode it runs in, each finding when it is
//! found, a summary every second, the final summary, and in the sock_diag-only mode the
//! socket survey. The CLI renders them (text lines, the terminal view, JSON lines); the JSON
//! form is the contract of `schema/watch.schema.json`.

use nodelay_host::socket_survey::ProcessSockets;
use nodelay_tcp::Role;
use serde::Serialize;
use std::time::Duration;

/// How often a summary (or in the sock_diag mode, a survey) is told.
pub const TICK: Duration = Duration::from_secs(1);

/// One event, as one JSON line: `{"event": "finding", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Which mode runs and why: the first event.
    Mode(ModeLine),
    /// A (process, port, finding) seen stalling for the first time, with its first second.
    Finding(Stalls),
    /// Every second: what was seen so far.
    Summary(Summary),
    /// Every second in the sock_diag-only mode: the sockets that can stall.
    Survey(Survey),
    /// The last event, when watch stops (Ctrl-C or `--duration`).
    Final(Summary),
    /// The last event in the sock_diag-only mode: the last survey.
    FinalSurvey(Survey),
}

/// How watch sees the host's TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A live packet capture: stalls are seen and timed.
    Capture,
    /// eBPF programs on the kernel's tracepoints: holds timed where the kernel decides them,
    /// the sending process named by the kernel, no packet copied.
    Ebpf,
    /// sock_diag only: socket states every second, no packets.
    SockDiag,
}

/// The mode line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeLine {
    /// The mode.
    pub mode: Mode,
    /// The interface captured on (`any`: all); none in the sock_diag and eBPF modes.
    pub interface: Option<String>,
    /// The TCP ports followed (empty: all).
    pub ports: Vec<u16>,
    /// The process whose sockets are followed (`--pid`).
    pub pid: Option<u32>,
    /// Why this mode (in the sock_diag mode: why there is no capture).
    pub why: String,
    /// What this mode sees and does not see.
    pub sees: String,
    /// Where `--prometheus` serves the metrics: `http://ADDR/metrics`.
    pub metrics_url: Option<String>,
}

/// Which end of a connection held its data (the Nagling sender).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The server held (part of) its responses.
    Server,
    /// The client held (part of) its requests.
    Client,
}

impl From<Role> for Side {
    fn from(role: Role) -> Self {
        match role {
            Role::Server => Side::Server,
            Role::Client => Side::Client,
        }
    }
}

impl Side {
    /// The capture crate's role.
    pub fn role(self) -> Role {
        match self {
            Side::Server => Role::Server,
            Side::Client => Role::Client,
        }
    }
}

/// The finding ids watch reports: `pcap`'s and the doctor's, one vocabulary
/// ([`FindingId::nagle_hold`]).
pub use nodelay_tcp::FindingId;

/// A local process and one of its sockets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Process {
    /// Its PID.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
    /// The descriptor of the socket of its latest stalled connection (its listener's once that
    /// socket closed); none when neither is held any more (the eBPF mode names processes whose
    /// sockets closed).
    pub fd: Option<i32>,
}

/// The stalls of one (finding, local process, server port).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stalls {
    /// The finding.
    pub finding: FindingId,
    /// The side that held its data.
    pub side: Side,
    /// The local process of these connections: the holder's when it runs here, else the
    /// other end's; none when no local socket was found for them.
    pub process: Option<Process>,
    /// The process named is the one that held (else its peer, on another host, did).
    pub holder_is_local: bool,
    /// The server end of the latest stalled connection, as `IP:PORT`.
    pub server: String,
    /// The server's port.
    pub port: u16,
    /// Holds counted.
    pub stalls: u64,
    /// Connections with at least one.
    pub flows: u64,
    /// Request/response exchanges seen on the server's port, every connection counted:
    /// what the stalls are out of.
    pub exchanges: u64,
    /// Time held, summed, in milliseconds.
    pub lost_ms: f64,
    /// The mean hold, in milliseconds.
    pub mean_stall_ms: f64,
    /// The mean delay of the peer's ACK that released a hold (net of its side of the round
    /// trip), in milliseconds: 40 for Linux's delayed-ACK timer, 200 for Windows'.
    pub mean_ack_delay_ms: f64,
    /// Seconds since watch started, at the first hold.
    pub first_s: f64,
    /// Seconds since watch started, at the latest hold.
    pub last_s: f64,
    /// The other end of the group's first stalled connection when it runs on this host, in
    /// the holder's network namespace: whose delayed-ACK timer released those holds (the eBPF
    /// mode's delayed-ACK findings; none otherwise). A server's group may have other clients.
    pub peer: Option<Peer>,
}

/// The process at the other end of a connection, on this host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peer {
    /// Its PID.
    pub pid: u32,
    /// Its command name.
    pub command: String,
    /// The delay its delayed ACKs get now (TCP_INFO's `tcpi_ato`, capped as Linux does at its
    /// smoothed round trip or 40 ms), in milliseconds; none before it received data.
    pub ack_timeout_ms: Option<f64>,
}

/// Sorts findings as they are told: most time held first, then by port.
pub fn most_held_first(stalls: &mut [Stalls]) {
    stalls.sort_by(|a, b| b.lost_ms.total_cmp(&a.lost_ms).then(a.port.cmp(&b.port)));
}

/// What the capture counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PacketCounts {
    /// Packets the kernel filter kept (TCP, on the ports asked for).
    pub captured: u64,
    /// Of those, dropped by the kernel before watch read them.
    pub dropped: u64,
    /// TCP segments analysed.
    pub tcp: u64,
    /// Packets that did not decode as TCP.
    pub undecoded: u64,
}

/// What the flow table counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FlowCounts {
    /// Connections followed now.
    pub open: u64,
    /// Connections followed since watch started.
    pub seen: u64,
    /// Of those, closed (FIN or RST).
    pub closed: u64,
    /// Forgotten after 2 minutes of silence.
    pub idle: u64,
    /// Evicted from the full table (the longest idle first).
    pub evicted: u64,
}

/// What the kernel's programs counted (the eBPF mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounts {
    /// Sends (write, send, sendmsg calls) on sockets with Nagle on; a socket with TCP_NODELAY
    /// never holds, so its sends are not counted.
    pub sends: u64,
    /// Connections followed: (process, local port, remote port) with Nagle on that sent.
    pub connections: u64,
    /// Holds of neither kind, not in the findings: shorter than the round-trip floor
    /// (0.5 ms), or longer than any delayed-ACK timer.
    pub holds_unclassed: u64,
    /// Holds during which the socket resent data or sent a loss probe, not in the findings: a
    /// loss's or a stalled path's wait, however long (an RTO's 200 ms would otherwise pass for a delayed ACK).
    pub holds_resent: u64,
    /// Retransmissions on the connections followed (timeouts, fast retransmits, loss probes),
    /// each of one or more segments; failed tries are not counted.
    pub resends: u64,
    /// Connections followed that ended.
    pub closes: u64,
    /// Of those, ended with no closing handshake: a reset sent or received, or the kernel
    /// giving up on a timeout.
    pub resets: u64,
}

/// What watch saw so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Seconds since watch started.
    pub elapsed_s: f64,
    /// The packets (the capture mode).
    pub packets: Option<PacketCounts>,
    /// The connections (the capture mode).
    pub flows: Option<FlowCounts>,
    /// What the kernel's programs counted (the eBPF mode).
    pub kernel: Option<KernelCounts>,
    /// Request/response exchanges seen, every connection counted.
    pub exchanges: u64,
    /// The stalls, most time held first.
    pub findings: Vec<Stalls>,
    /// Holds not grouped because the number of groups reached its bound.
    pub stalls_not_grouped: u64,
    /// Holds whose connection matched no socket of `--pid`'s process, left out.
    pub stalls_of_other_processes: u64,
}

impl Summary {
    /// No stall was seen.
    pub fn is_healthy(&self) -> bool {
        self.findings.is_empty() && self.stalls_not_grouped == 0
    }
}

/// One second's survey.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Survey {
    /// Seconds since watch started.
    pub elapsed_s: f64,
    /// TCP sockets surveyed.
    pub sockets: u64,
    /// The processes with a socket that can stall (TCP_NODELAY off), most Nagle-prone first.
    pub processes: Vec<ProcessSockets>,
    /// Processes whose descriptors could not be read (their sockets have no process).
    pub unreadable_processes: u64,
    /// The host's delayed-ACK timers fired per second since the last survey (this network
    /// namespace's TcpExt DelayedACKs), when it could be read.
    pub delayed_acks_per_s: Option<f64>,
}

impl Survey {
    /// Sockets that show a stall's signs (TCP_NODELAY off, and a hold seen or an RTT inflated
    /// by a peer's delayed ACKs).
    pub fn nagle_prone(&self) -> u64 {
        self.processes.iter().map(|p| p.nagle_prone as u64).sum()
    }
}
