//! What `nodelay watch` can see of a host's TCP sockets without capturing packets (no
//! CAP_NET_RAW): one sock_diag dump with TCP_INFO (what `ss -tio` reads), each socket's owner
//! from /proc ([`crate::socket_owner::OwnerIndex`]), and TCP_NODELAY read through a copy of the owner's descriptor.
//!
//! **What it sees**, per socket, at the instant of the survey:
//! - the 4-tuple, state, owner (PID, command, fd) when its process can be read;
//! - TCP_NODELAY and TCP_CORK when the owner may be copied from (root, CAP_SYS_PTRACE, or
//!   the same user without yama restrictions), else [`Nodelay::Unknown`] with the reason;
//! - the kernel's TCP_INFO figures ([`DiagTcpInfo`]): srtt against min_rtt (a peer's delayed
//!   ACKs inflate the first, not the second), unacknowledged segments, bytes not yet sent,
//!   retransmissions, bytes acknowledged and received, `ato`, the delivery rate;
//! - the send and receive queues, and the one timer sock_diag reports (retransmission,
//!   keep-alive, zero-window probe);
//! - a Nagle hold in progress ([`SurveyedSocket::nagle_holding`]): a sub-MSS tail not sent
//!   while a small segment is unacknowledged, the congestion window not full;
//! - a delayed ACK pending ([`SurveyedSocket::delayed_ack_pending`]), only when the peer is on
//!   this host too (loopback, a sidecar): bytes the peer sent and has not seen acknowledged
//!   arrived here at once, so their ACK is being held;
//! - the host's delayed-ACK timer count (`TcpExt: DelayedACKs` of /proc/net/netstat, for this
//!   network namespace): [`Survey::compare`] turns it into a rate.
//!
//! **What it cannot see:** a stall's duration, or whether one happened between two surveys
//! (a 40 ms hold is caught only if a survey falls inside it); request or response
//! boundaries; which packet waited for which ACK; whether a delayed-ACK timer runs on a
//! socket whose peer is remote (sock_diag never reports `ICSK_TIME_DACK`, and `ss -o` cannot
//! either); the peer's TCP_NODELAY; sockets of another network namespace; TCP_NODELAY of a
//! process it may not copy from. So it names Nagle-prone sockets
//! ([`SurveyedSocket::nagle_prone`]: TCP_NODELAY off, and a hold seen or srtt inflated by ACK
//! delays), not stalls.
//!
//! Cost, measured here (2 cores, release build, load average ~4, figures vary ±30 % with
//! it): with 10 000 TCP sockets open, ~95-140 ms for a [`survey`] of all of them (~10-14 µs
//! a socket: the /proc walk for owners, TCP_INFO in the dump, and a pidfd copy, two
//! getsockopt and a close for TCP_NODELAY and TCP_CORK); ~20-30 ms for a [`Surveyor`]'s next
//! survey when no socket is new (the dump, what was read kept); ~2 ms for a port none of
//! them uses (the kernel filters the ports, and /proc is not walked for nothing). By `cargo
//! test --release -p nodelay-host --test socket_survey -- --ignored --nocapture survey_time`.
//!
//! [`capture_allowed`] says whether the capture mode may run instead.

mod capture_rights;
pub(crate) mod diag;
mod host_counters;
mod options;
pub(crate) mod port_filter;
mod summary;
mod surveyor;
mod tcp_info;

pub use capture_rights::capture_allowed;
pub use diag::SocketTimer;
pub use host_counters::HostTcpCounters;
pub use options::{Nodelay, UnknownWhy};
pub use summary::{ProcessActivity, ProcessSockets, SurveyChange};
pub use surveyor::{FULL_SURVEY_EVERY, Surveyor};
pub use tcp_info::DiagTcpInfo;

use crate::SocketState;
use crate::socket_owner::{SocketOwner, canonical};
use nodelay_tcp::ListenQueue;
use options::Options;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

/// srtt above min_rtt by this much or more reads as a peer delaying its ACKs (Linux's
/// delayed-ACK timer is 40 ms at least; srtt moves an eighth of the way per sample).
pub const ACK_DELAY_INFLATION_MIN_US: u32 = 10_000;

/// Which sockets a survey lists. The default lists every TCP socket of the namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SurveyFilter {
    /// Sockets whose local or remote port is one of these; any port when empty.
    pub ports: Vec<u16>,
    /// Only the sockets this process holds (only its descriptors are read, which is cheap).
    pub pid: Option<u32>,
}

impl SurveyFilter {
    /// Sockets whose local or remote port is one of `ports`.
    pub fn ports(ports: impl IntoIterator<Item = u16>) -> SurveyFilter {
        SurveyFilter { ports: ports.into_iter().collect(), pid: None }
    }

    /// The sockets process `pid` holds.
    pub fn pid(pid: u32) -> SurveyFilter {
        SurveyFilter { ports: Vec::new(), pid: Some(pid) }
    }

    fn port_matches(&self, local: SocketAddr, remote: SocketAddr) -> bool {
        self.ports.is_empty() || self.ports.contains(&local.port()) || self.ports.contains(&remote.port())
    }
}

/// One TCP socket as the survey saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SurveyedSocket {
    /// Its local address (IPv4-mapped IPv6 addresses as IPv4).
    pub local: SocketAddr,
    /// Its peer; `None` for a listening socket.
    pub remote: Option<SocketAddr>,
    /// Its TCP state.
    pub state: SocketState,
    /// Its inode; 0 for a socket no descriptor holds (an orphan closing).
    pub inode: u64,
    /// The user that owns it.
    pub uid: u32,
    /// The process and descriptor holding it, when its process could be read.
    pub owner: Option<SocketOwner>,
    /// TCP_NODELAY.
    pub nodelay: Nodelay,
    /// TCP_CORK, when it could be read.
    pub corked: Option<bool>,
    /// Bytes written and not yet acknowledged (sent or not): `idiag_wqueue`; 0 for a listener.
    pub send_queue_bytes: u32,
    /// Bytes received and not yet read by the program: `idiag_rqueue`; 0 for a listener.
    pub receive_queue_bytes: u32,
    /// A listener's accept queue.
    pub accept_queue: Option<ListenQueue>,
    /// The timer the kernel reports (never the delayed-ACK timer).
    pub timer: SocketTimer,
    /// Time until that timer fires; 0 when none runs.
    pub timer_expires_ms: u32,
    /// Retransmissions or probes that timer has sent.
    pub timer_retransmits: u8,
    /// The kernel's TCP_INFO figures (none for an orphan the kernel gives none for).
    pub tcp: Option<DiagTcpInfo>,
    /// Whether this socket owes its peer an ACK now (received data not yet acknowledged, so
    /// a delayed-ACK timer runs); `None` unless the peer is on this host and listed too.
    pub delayed_ack_pending: Option<bool>,
}

impl SurveyedSocket {
    /// Bytes sent and not yet acknowledged: the send queue less what is not yet sent.
    pub fn unacked_bytes(&self) -> u32 {
        let notsent = self.tcp.map_or(0, |tcp| tcp.notsent_bytes);
        self.send_queue_bytes.saturating_sub(notsent)
    }

    /// Bytes written and not yet sent.
    pub fn notsent_bytes(&self) -> u32 {
        self.tcp.map_or(0, |tcp| tcp.notsent_bytes)
    }

    /// A Nagle hold in progress: less than an MSS written and not sent, while segments smaller
    /// than the MSS are unacknowledged and the congestion window has room. True as well for a
    /// socket whose TCP_NODELAY is unknown (the hold itself shows it off); false when
    /// TCP_NODELAY is on or TCP_CORK holds it instead.
    pub fn nagle_holding(&self) -> bool {
        let Some(tcp) = self.tcp else { return false };
        let unacked_bytes = u64::from(self.unacked_bytes());
        self.state == SocketState::Established
            && self.nodelay != Nodelay::On
            && self.corked != Some(true)
            && tcp.notsent_bytes > 0
            && tcp.notsent_bytes < tcp.snd_mss_bytes
            && tcp.unacked_segments > 0
            && tcp.unacked_segments < tcp.snd_cwnd_segments
            && unacked_bytes < u64::from(tcp.unacked_segments) * u64::from(tcp.snd_mss_bytes)
    }

    /// How much srtt exceeds min_rtt: the peer's ACK delay shows here on the side that waits
    /// for its ACKs. `None` before an RTT sample.
    pub fn rtt_inflation_us(&self) -> Option<u32> {
        let tcp = self.tcp?;
        (tcp.min_rtt_us > 0).then(|| tcp.rtt_us.saturating_sub(tcp.min_rtt_us))
    }

    /// TCP_NODELAY off, connected, and either a hold seen now or srtt inflated by the peer's
    /// ACK delays (at least [`ACK_DELAY_INFLATION_MIN_US`] and twice min_rtt): the next
    /// small write after a small one would wait for a delayed ACK.
    pub fn nagle_prone(&self) -> bool {
        let inflated = self.tcp.is_some_and(|tcp| {
            self.rtt_inflation_us().is_some_and(|extra| extra >= ACK_DELAY_INFLATION_MIN_US)
                && tcp.rtt_us >= 2 * tcp.min_rtt_us
        });
        self.nodelay == Nodelay::Off
            && self.state == SocketState::Established
            && (self.nagle_holding() || inflated)
    }
}

/// The sockets a filter names, at one instant.
#[derive(Debug, Clone, Serialize)]
pub struct Survey {
    /// When the survey began.
    #[serde(skip)]
    pub taken_at: Instant,
    /// The sockets, in the kernel's order (IPv4 then IPv6).
    pub sockets: Vec<SurveyedSocket>,
    /// Processes whose descriptors could not be read: their sockets have no owner.
    pub unreadable_processes: usize,
    /// The namespace's TCP counters, when /proc/net/netstat could be read.
    pub host: Option<HostTcpCounters>,
}

/// The TCP sockets `filter` names (TIME-WAIT and half-open connections left out), with their
/// owners, TCP_NODELAY and the kernel's figures. Fails only when sock_diag is refused or /proc
/// cannot be listed; sockets and processes that go away meanwhile are left out or unknown.
/// A caller surveying every second keeps a [`Surveyor`] instead, much cheaper.
pub fn survey(filter: &SurveyFilter) -> io::Result<Survey> {
    Surveyor::new(filter.clone()).survey()
}

fn surveyed(socket: diag::DiagSocket, owner: Option<SocketOwner>, options: Options) -> SurveyedSocket {
    let state = crate::linux::state(&socket.line.state);
    let listening = state == SocketState::Listen;
    SurveyedSocket {
        local: canonical(socket.line.local),
        remote: (!listening).then(|| canonical(socket.line.remote)),
        state,
        inode: socket.line.inode,
        uid: socket.line.uid,
        owner,
        nodelay: options.nodelay,
        corked: options.corked,
        send_queue_bytes: if listening { 0 } else { socket.wqueue },
        receive_queue_bytes: if listening { 0 } else { socket.rqueue },
        accept_queue: listening.then_some(ListenQueue { queued: socket.rqueue, backlog: socket.wqueue }),
        timer: socket.timer,
        timer_expires_ms: socket.timer_expires_ms,
        timer_retransmits: socket.timer_retransmits,
        tcp: socket.info,
        delayed_ack_pending: None,
    }
}

/// For each connection whose peer socket is listed too (both ends on this host): whether the
/// peer has bytes sent and not acknowledged. On one host a segment arrives as it leaves, so
/// those bytes wait for this side's ACK, which its delayed-ACK timer holds.
fn mark_pending_acks(sockets: &mut [SurveyedSocket]) {
    let by_tuple: HashMap<(SocketAddr, SocketAddr), usize> = sockets
        .iter()
        .enumerate()
        .filter_map(|(at, socket)| Some(((socket.local, socket.remote?), at)))
        .collect();
    let pending: Vec<(usize, bool)> = sockets
        .iter()
        .enumerate()
        .filter_map(|(at, socket)| {
            let peer = &sockets[*by_tuple.get(&(socket.remote?, socket.local))?];
            Some((at, peer.tcp?.unacked_segments > 0 && peer.unacked_bytes() > 0))
        })
        .collect();
    for (at, pending) in pending {
        sockets[at].delayed_ack_pending = Some(pending);
    }
}
