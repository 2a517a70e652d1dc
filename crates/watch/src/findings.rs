//! The stalls seen so far, grouped by (finding, local process, server port): each hold the
//! flow table reports is attributed to a local process (the holder's when it runs here,
//! else its peer's), added to its group, and counted in the Prometheus metrics. A hold whose
//! socket is not in the owner index waits for the next second's scan; still missing then, it
//! is counted under an unknown process. Groups and waiting holds are bounded.

use crate::event::{FindingId, Process, Side, Stalls};
use crate::owners::Owners;
use crate::prometheus::{Holder, WatchMetrics};
use nodelay_capture::{Endpoint, Hold, Role};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Groups kept: past this, holds of new groups are only counted.
pub const GROUPS_MAX: usize = 1024;
/// Holds waiting for the next scan: past this, they go to the unknown process at once.
const PENDING_MAX: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct GroupKey {
    finding: FindingId,
    pid: Option<u32>,
    port: u16,
}

#[derive(Debug, Clone)]
struct Group {
    stalls: Stalls,
    lost_ns: u64,
    ack_delay_ns: u64,
    announced: bool,
}

/// The stalls so far.
pub struct Findings {
    /// The wall clock when watch started, in nanoseconds since the Unix epoch (packets are
    /// timed on it).
    started_ns: u64,
    /// `--pid`: only holds on connections of this process count.
    pid: Option<u32>,
    groups: HashMap<GroupKey, Group>,
    exchanges_by_port: HashMap<u16, u64>,
    /// Exchanges seen, every connection counted.
    pub exchanges: u64,
    /// Holds waiting for a scan newer than when they were found.
    pending: Vec<(Hold, bool, Instant)>,
    /// Holds not grouped because [`GROUPS_MAX`] groups exist.
    pub not_grouped: u64,
    /// Holds left out by `--pid`.
    pub other_processes: u64,
    metrics: Option<Arc<WatchMetrics>>,
}

fn address((ip, port): Endpoint) -> SocketAddr {
    SocketAddr::new(ip, port)
}

impl Findings {
    /// Groups for a watch that started at `started_ns`, keeping only `pid`'s connections
    /// when given, counting each hold in `metrics` too.
    pub fn new(started_ns: u64, pid: Option<u32>, metrics: Option<Arc<WatchMetrics>>) -> Self {
        Findings {
            started_ns,
            pid,
            groups: HashMap::new(),
            exchanges_by_port: HashMap::new(),
            exchanges: 0,
            pending: Vec::new(),
            not_grouped: 0,
            other_processes: 0,
            metrics,
        }
    }

    /// `count` new exchanges between `client` and `server` (as the flow judged them; the
    /// listening end is the server).
    /// Counted in the metrics for the server's local process, else the client's.
    pub fn exchanges(&mut self, client: Endpoint, server: Endpoint, count: u32, owners: &impl Owners) {
        let (client, server) = orient(client, server, owners);
        self.exchanges += u64::from(count);
        *self.exchanges_by_port.entry(server.1).or_default() += u64::from(count);
        let Some(metrics) = &self.metrics else { return };
        let (process, side) = match owners.owner(address(server), address(client), true) {
            Some(process) => (Some(process), Role::Server),
            None => (owners.owner(address(client), address(server), false), Role::Client),
        };
        let holder = Holder {
            command: process.as_ref().map_or("", |p| p.command.as_str()),
            pid: process.as_ref().map(|p| p.pid),
        };
        metrics.exchanges(holder, server.1, side, u64::from(count));
    }

    /// A hold; `first_in_flow` for its connection's first.
    pub fn hold(&mut self, hold: Hold, first_in_flow: bool, owners: &mut impl Owners, now: Instant) {
        let hold = oriented(hold, owners);
        if let Some(found) = attribute(&hold, owners, false) {
            return self.add(hold, first_in_flow, Some(found));
        }
        if owners.rescan(now) {
            // Still missing from a fresh scan: its socket is gone (a server's listener then
            // names the process), or it lives in another network namespace.
            let found = attribute(&hold, owners, true);
            return self.add(hold, first_in_flow, found);
        }
        if self.pending.len() < PENDING_MAX {
            self.pending.push((hold, first_in_flow, now));
        } else {
            let found = attribute(&hold, owners, true);
            self.add(hold, first_in_flow, found);
        }
    }

    /// The holds waiting for a scan get one if it is due (or go to the unknown process once
    /// a scan newer than them still lacks their socket).
    pub fn resolve(&mut self, owners: &mut impl Owners, now: Instant) {
        if self.pending.is_empty() {
            return;
        }
        owners.rescan(now);
        let scanned_at = owners.scanned_at();
        // Only a scan taken after a hold was found can tell its socket is gone.
        let (ready, waiting) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(_, _, found_at)| scanned_at.is_some_and(|at| at > *found_at));
        self.pending = waiting;
        for (hold, first_in_flow, _) in ready {
            let found = attribute(&hold, owners, true);
            self.add(hold, first_in_flow, found);
        }
    }

    /// Once a second: the waiting holds resolved if a scan is due, and the groups found since
    /// the last tick returned, to be announced.
    pub fn tick(&mut self, owners: &mut impl Owners, now: Instant) -> Vec<Stalls> {
        self.resolve(owners, now);
        let mut new: Vec<Stalls> = Vec::new();
        for group in self.groups.values_mut().filter(|group| !group.announced) {
            group.announced = true;
            new.push(report(group, &self.exchanges_by_port));
        }
        crate::event::most_held_first(&mut new);
        new
    }

    /// Every group, most time held first.
    pub fn all(&self) -> Vec<Stalls> {
        let mut all: Vec<Stalls> =
            self.groups.values().map(|group| report(group, &self.exchanges_by_port)).collect();
        crate::event::most_held_first(&mut all);
        all
    }

    fn add(&mut self, hold: Hold, first_in_flow: bool, found: Option<(Process, bool)>) {
        let side = Side::from(hold.held_by);
        let finding = FindingId::nagle_hold(side.role(), hold.stall.kind);
        let (process, holder_is_local) = match found {
            Some((process, holder_is_local)) => (Some(process), holder_is_local),
            None => (None, false),
        };
        if let Some(pid) = self.pid
            && process.as_ref().is_none_or(|p| p.pid != pid)
        {
            self.other_processes += 1;
            return;
        }
        let port = hold.server.1;
        if let Some(metrics) = &self.metrics {
            let command = process.as_ref().map_or("", |p| p.command.as_str());
            // The side of the local socket: the holder's, unless the holder is the remote peer.
            let local_side = match (side, holder_is_local) {
                (side, true) => side,
                (Side::Server, false) => Side::Client,
                (Side::Client, false) => Side::Server,
            };
            let held = Duration::from_nanos(hold.stall.lost_ns);
            let holder = Holder { command, pid: process.as_ref().map(|p| p.pid) };
            metrics.stall(finding.as_str(), holder, port, local_side.role(), held);
        }
        let key = GroupKey { finding, pid: process.as_ref().map(|p| p.pid), port };
        if !self.groups.contains_key(&key) && self.groups.len() >= GROUPS_MAX {
            self.not_grouped += 1;
            return;
        }
        let at_s = hold.stall.at_ns.saturating_sub(self.started_ns) as f64 / 1e9;
        let group = self.groups.entry(key).or_insert_with(|| Group {
            stalls: Stalls {
                finding,
                side,
                process: None,
                holder_is_local,
                server: address(hold.server).to_string(),
                port,
                stalls: 0,
                flows: 0,
                exchanges: 0,
                lost_ms: 0.0,
                mean_stall_ms: 0.0,
                mean_ack_delay_ms: 0.0,
                first_s: at_s,
                last_s: at_s,
                peer: None,
            },
            lost_ns: 0,
            ack_delay_ns: 0,
            announced: false,
        });
        let stalls = &mut group.stalls;
        stalls.stalls += 1;
        stalls.flows += u64::from(first_in_flow);
        stalls.last_s = stalls.last_s.max(at_s);
        stalls.server = address(hold.server).to_string();
        if process.is_some() {
            stalls.process = process;
            stalls.holder_is_local = holder_is_local;
        }
        group.lost_ns = group.lost_ns.saturating_add(hold.stall.lost_ns);
        group.ack_delay_ns = group.ack_delay_ns.saturating_add(hold.stall.peer_ack_delay_ns);
    }
}

/// A group's figures, out of the exchanges seen on its port.
fn report(group: &Group, exchanges_by_port: &HashMap<u16, u64>) -> Stalls {
    let mut stalls = group.stalls.clone();
    stalls.exchanges = exchanges_by_port.get(&stalls.port).copied().unwrap_or(0).max(stalls.stalls);
    stalls.lost_ms = nodelay_tcp::time::ms_from_ns(group.lost_ns);
    let count = stalls.stalls.max(1) as f64;
    stalls.mean_stall_ms = stalls.lost_ms / count;
    stalls.mean_ack_delay_ms = nodelay_tcp::time::ms_from_ns(group.ack_delay_ns) / count;
    stalls
}

/// Client and server by who holds them: the end a local listening socket accepts for is the
/// server's, whatever the capture saw first (watch started on connections already open sees
/// a response before any request). Failing that, an end on a port of the local ephemeral
/// range is a client's. Otherwise, as the flow judged.
fn orient(client: Endpoint, server: Endpoint, owners: &impl Owners) -> (Endpoint, Endpoint) {
    let (client_serves, server_serves) = (owners.serves(address(client)), owners.serves(address(server)));
    let swapped = match (client_serves, server_serves) {
        (true, false) => true,
        (false, true) => false,
        _ => is_ephemeral(server.1) && !is_ephemeral(client.1),
    };
    if swapped { (server, client) } else { (client, server) }
}

/// `hold` with its ends [`orient`]ed: when they swap, so does the side that held.
fn oriented(hold: Hold, owners: &impl Owners) -> Hold {
    let (client, server) = orient(hold.client, hold.server, owners);
    if client == hold.client {
        return hold;
    }
    let held_by = match hold.held_by {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    Hold { held_by, client, server, ..hold }
}

/// The kernel's ephemeral port range (`ip_local_port_range`, 32768-60999 unless changed).
pub(crate) fn is_ephemeral(port: u16) -> bool {
    static RANGE: std::sync::OnceLock<(u16, u16)> = std::sync::OnceLock::new();
    let (low, high) = *RANGE.get_or_init(|| nodelay_host::local_port_range().unwrap_or((32768, 60999)));
    (low..=high).contains(&port)
}

/// The local process of a held connection: the holder's socket first, else the peer's; with
/// `or_listener`, for a connection whose socket is gone, the server's listener. With whether
/// it is the holder's. A server end a local listener accepts for is local: while its socket
/// is not found (not accepted yet), the client is not named in its place.
fn attribute(hold: &Hold, owners: &impl Owners, or_listener: bool) -> Option<(Process, bool)> {
    let (client, server) = (address(hold.client), address(hold.server));
    let (holder, peer) = match Side::from(hold.held_by) {
        Side::Server => ((server, client), (client, server)),
        Side::Client => ((client, server), (server, client)),
    };
    let server_holds = Side::from(hold.held_by) == Side::Server;
    if let Some(process) = owners.owner(holder.0, holder.1, or_listener && server_holds) {
        return Some((process, true));
    }
    if server_holds && owners.serves(server) {
        return None;
    }
    owners.owner(peer.0, peer.1, or_listener && !server_holds).map(|process| (process, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nodelay_capture::{HoldKind, Role, StallExample};
    use std::net::{IpAddr, Ipv4Addr};

    const MS: u64 = 1_000_000;

    /// Sockets by (local, remote); rescans allowed `scans` times and each adds `later`; the
    /// addresses listened on, and the listener's process.
    #[derive(Default)]
    struct Table {
        sockets: HashMap<(SocketAddr, SocketAddr), Process>,
        later: Vec<((SocketAddr, SocketAddr), Process)>,
        scans: u32,
        scanned_at: Option<Instant>,
        listening: Vec<SocketAddr>,
        listener: Option<Process>,
    }

    impl Owners for Table {
        fn owner(&self, local: SocketAddr, remote: SocketAddr, or_listener: bool) -> Option<Process> {
            let listener = || self.listener.clone().filter(|_| or_listener && self.serves(local));
            self.sockets.get(&(local, remote)).cloned().or_else(listener)
        }
        fn serves(&self, end: SocketAddr) -> bool {
            self.listening.contains(&end)
        }
        fn rescan(&mut self, now: Instant) -> bool {
            if self.scans == 0 {
                return false;
            }
            self.scans -= 1;
            self.scanned_at = Some(now);
            self.sockets.extend(self.later.drain(..));
            true
        }
        fn scanned_at(&self) -> Option<Instant> {
            self.scanned_at
        }
    }

    fn end(port: u16) -> Endpoint {
        (IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    }

    fn process(pid: u32, command: &str) -> Process {
        Process { pid, command: command.into(), fd: Some(5) }
    }

    fn hold(held_by: Role, client_port: u16, at_ns: u64) -> Hold {
        Hold {
            held_by,
            client: end(client_port),
            server: end(8080),
            stall: StallExample {
                exchange: 2,
                held_after_packet: 1,
                ack_packet: 2,
                release_packet: 3,
                at_ns,
                segment_bytes: 120,
                ack_delay_ns: 40 * MS,
                peer_ack_delay_ns: 40 * MS,
                release_after_ack_ns: 20_000,
                lost_ns: 40 * MS,
                rtt_ns: 0,
                kind: HoldKind::DelayedAck,
            },
        }
    }

    fn socket(local: u16, remote: u16) -> (SocketAddr, SocketAddr) {
        (address(end(local)), address(end(remote)))
    }

    #[test]
    fn a_server_hold_names_the_server_and_a_client_hold_the_client() {
        let mut table = Table::default();
        table.sockets.insert(socket(8080, 40000), process(812, "python3"));
        table.sockets.insert(socket(40000, 8080), process(913, "curl"));
        let mut findings = Findings::new(0, None, None);
        findings.exchanges(end(40000), end(8080), 40, &table);
        for i in 0..37 {
            findings.hold(hold(Role::Server, 40000, i * 100 * MS), i == 0, &mut table, Instant::now());
        }
        findings.hold(hold(Role::Client, 40000, 5000 * MS), true, &mut table, Instant::now());
        let new = findings.tick(&mut table, Instant::now());
        assert_eq!(new.len(), 2);
        let server = &new[0];
        assert_eq!(server.finding, FindingId::ServerNagleDelayedAck);
        assert_eq!(server.process.as_ref().map(|p| p.pid), Some(812));
        assert!(server.holder_is_local);
        assert_eq!((server.stalls, server.exchanges, server.flows), (37, 40, 1));
        assert!((server.mean_stall_ms - 40.0).abs() < 1e-9);
        assert_eq!(new[1].finding, FindingId::ClientNagleDelayedAck);
        assert_eq!(new[1].process.as_ref().map(|p| p.command.as_str()), Some("curl"));
        assert!(findings.tick(&mut table, Instant::now()).is_empty(), "announced once");
        assert_eq!(findings.all()[0].stalls, 37);
    }

    #[test]
    fn a_remote_holder_is_named_by_the_local_peer() {
        let mut table = Table::default();
        table.sockets.insert(socket(40000, 8080), process(913, "curl"));
        let mut findings = Findings::new(0, None, None);
        findings.hold(hold(Role::Server, 40000, 0), true, &mut table, Instant::now());
        let new = findings.tick(&mut table, Instant::now());
        assert_eq!(new[0].process.as_ref().map(|p| p.pid), Some(913));
        assert!(!new[0].holder_is_local);
    }

    #[test]
    fn a_socket_missing_waits_for_a_scan_newer_than_it_then_is_unknown() {
        let mut table = Table { scans: 0, ..Table::default() };
        table.later.push((socket(8080, 40000), process(812, "python3")));
        let mut findings = Findings::new(0, None, None);
        let found_at = Instant::now();
        findings.hold(hold(Role::Server, 40000, 0), true, &mut table, found_at);
        findings.hold(hold(Role::Server, 40001, 0), true, &mut table, found_at);
        // A tick with no new scan: they wait.
        assert!(findings.tick(&mut table, found_at).is_empty());
        table.scans = 1;
        let new = findings.tick(&mut table, found_at + Duration::from_secs(1));
        let pids: Vec<Option<u32>> = new.iter().map(|s| s.process.as_ref().map(|p| p.pid)).collect();
        assert_eq!(pids.len(), 2);
        assert!(pids.contains(&Some(812)) && pids.contains(&None), "{pids:?}");
    }

    /// A hold as the flow judged it when the first packet watch saw was the server's: the
    /// server's end taken for the client's, the server's hold for the client's.
    fn hold_judged_backwards(client_port: u16, at_ns: u64) -> Hold {
        let right = hold(Role::Server, client_port, at_ns);
        Hold { held_by: Role::Client, client: right.server, server: right.client, ..right }
    }

    #[test]
    fn the_listening_end_is_the_server_whatever_the_capture_saw_first() {
        let mut table = Table { listening: vec![address(end(8080))], ..Table::default() };
        table.sockets.insert(socket(8080, 40000), process(812, "python3"));
        table.sockets.insert(socket(40000, 8080), process(913, "curl"));
        let mut findings = Findings::new(0, None, None);
        findings.exchanges(end(8080), end(40000), 20, &table);
        findings.hold(hold_judged_backwards(40000, 0), true, &mut table, Instant::now());
        let new = findings.tick(&mut table, Instant::now());
        assert_eq!(new.len(), 1, "{new:?}");
        assert_eq!(
            (new[0].finding, new[0].port, new[0].exchanges),
            (FindingId::ServerNagleDelayedAck, 8080, 20)
        );
        assert_eq!(new[0].process.as_ref().map(|p| p.pid), Some(812));
        assert!(new[0].holder_is_local);
        // With no listener known (a remote server), a port of the ephemeral range is the
        // client's.
        let mut table = Table { scans: 1, ..Table::default() };
        let mut findings = Findings::new(0, None, None);
        findings.hold(hold_judged_backwards(40000, 0), true, &mut table, Instant::now());
        assert_eq!(findings.all()[0].port, 8080, "{:?}", findings.all());
    }

    #[test]
    fn a_local_server_not_yet_accepted_is_named_by_its_listener_never_as_remote() {
        // The client's socket is there; the server's is not accepted yet.
        let mut table = Table { listening: vec![address(end(8080))], ..Table::default() };
        table.sockets.insert(socket(40000, 8080), process(913, "curl"));
        table.listener = Some(process(812, "python3"));
        let mut findings = Findings::new(0, None, None);
        let found_at = Instant::now();
        findings.hold(hold(Role::Server, 40000, 0), true, &mut table, found_at);
        assert!(findings.tick(&mut table, found_at).is_empty(), "waits for a scan rather than name curl");
        table.scans = 1;
        let new = findings.tick(&mut table, found_at + Duration::from_secs(1));
        assert_eq!(new[0].process.as_ref().map(|p| p.pid), Some(812), "{new:?}");
        assert!(new[0].holder_is_local);
    }

    #[test]
    fn pid_keeps_only_that_process_and_counts_the_rest() {
        let mut table = Table::default();
        table.sockets.insert(socket(8080, 40000), process(812, "python3"));
        table.sockets.insert(socket(8080, 40001), process(900, "other"));
        let mut findings = Findings::new(0, Some(812), None);
        findings.hold(hold(Role::Server, 40000, 0), true, &mut table, Instant::now());
        findings.hold(hold(Role::Server, 40001, 0), true, &mut table, Instant::now());
        let all = findings.all();
        assert_eq!(all.len(), 1);
        assert_eq!(findings.other_processes, 1);
    }
}
