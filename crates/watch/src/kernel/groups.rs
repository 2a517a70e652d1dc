//! The kernel's running totals turned into watch's findings: each read of the programs' map
//! (cumulative per process and pair of ports) is compared with the last one, and what is new
//! is added to groups by (finding, process, server port), as the capture's holds are. Deltas,
//! not totals: an entry the kernel's LRU map evicted and made again restarts at zero, and the
//! findings never go back. The side (server or client) and the descriptor are looked up once
//! per entry in the sending process's own network namespace ([`Sockets`]).

use crate::event::{FindingId, KernelCounts, Peer, Process, Side, Stalls};
use crate::findings::{GROUPS_MAX, is_ephemeral};
use nodelay_ebpf::{HOLD_BUCKETS, HoldStats, HoldTotals};
use nodelay_host::{LocalPeer, PeerQuery, ProcessSocket};
use nodelay_tcp::HoldKind;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Processes whose new entries are looked up per read: past this, the rest wait for the next
/// read (each process's lookup reads its namespace's socket table and its descriptors once,
/// for all its new entries).
pub const PROCESSES_LOOKED_UP_PER_READ: usize = 32;

/// Peers looked up per read, together: one walk of every process's descriptors.
const PEERS_LOOKED_UP_PER_READ: usize = 32;

/// Where entries' sockets are looked up (the host's /proc, or a test's table).
pub trait Sockets {
    /// Process `pid`'s connections, one for each (local, remote) asked, in order; `None` if
    /// the process cannot be read.
    fn sockets(&mut self, pid: u32, connections: &[(SocketAddr, SocketAddr)]) -> Option<Vec<ProcessSocket>>;

    /// The other end of each (pid, local, remote) connection asked, in order, when it runs on
    /// this host in that pid's namespace.
    fn peers(&mut self, queries: &[PeerQuery]) -> Vec<Option<LocalPeer>>;
}

/// The host's processes.
pub struct HostSockets;

impl Sockets for HostSockets {
    fn sockets(&mut self, pid: u32, connections: &[(SocketAddr, SocketAddr)]) -> Option<Vec<ProcessSocket>> {
        nodelay_host::process_sockets(pid, connections)
    }

    fn peers(&mut self, queries: &[PeerQuery]) -> Vec<Option<LocalPeer>> {
        nodelay_host::local_peers(queries)
    }
}

/// One entry of the programs' map: a process's connections on one pair of ports.
type EntryKey = (u32, u16, u16);

/// What an entry is, once looked up.
#[derive(Debug, Clone)]
struct Entry {
    side: Side,
    process: Process,
    /// The server's end (the local one for a server, else the peer's).
    server: SocketAddr,
    /// The entry's figures at the last read.
    last: HoldStats,
}

impl Entry {
    fn port(&self) -> u16 {
        self.server.port()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct GroupKey {
    finding: FindingId,
    pid: u32,
    port: u16,
}

#[derive(Debug, Clone)]
struct Group {
    stalls: Stalls,
    held: Duration,
    round_trips: Duration,
    announced: bool,
    /// A connection of a delayed-ACK group whose peer is yet to be looked for (once).
    peer_wanted: Option<(u32, SocketAddr, SocketAddr)>,
}

/// What is new since the last read, for the metrics: one (finding or exchanges) per holder.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// The finding, or `None` for exchanges.
    pub finding: Option<FindingId>,
    /// The process.
    pub process: Process,
    /// The server's port.
    pub port: u16,
    /// The process's side.
    pub side: Side,
    /// New holds (or exchanges).
    pub count: u64,
    /// Their time.
    pub held: Duration,
    /// The new holds by length, per bucket of the stall histogram (none for exchanges).
    pub buckets: [u64; HOLD_BUCKETS],
}

/// The findings so far from the kernel's totals.
pub struct KernelFindings {
    /// `--pid`: only this process's holds are grouped.
    pid: Option<u32>,
    /// Only connections with one of these ports on either side; empty: all.
    ports: Vec<u16>,
    entries: HashMap<EntryKey, Entry>,
    /// Other processes' classified holds at the last read (`--pid`), to count what is new.
    others: HashMap<EntryKey, u64>,
    groups: HashMap<GroupKey, Group>,
    exchanges_by: HashMap<(u32, u16, Side), u64>,
    /// The kernel's counts, summed from the deltas.
    pub counts: KernelCounts,
    /// Exchanges on the connections followed.
    pub exchanges: u64,
    /// Holds not grouped: [`GROUPS_MAX`] groups existed.
    pub not_grouped: u64,
    /// Holds of processes other than `--pid`'s.
    pub other_processes: u64,
}

/// The holds of one kind, by the finding they make on `side`.
fn kinds(stats: &HoldStats) -> [(HoldKind, HoldTotals); 2] {
    [(HoldKind::DelayedAck, stats.delayed_ack), (HoldKind::RoundTrip, stats.round_trip)]
}

/// `now` less `before`, or all of `now` when the kernel's entry restarted (fewer than before).
fn since(now: HoldTotals, before: HoldTotals) -> HoldTotals {
    if now.holds < before.holds {
        return now;
    }
    HoldTotals {
        holds: now.holds - before.holds,
        held: now.held.saturating_sub(before.held),
        round_trips: now.round_trips.saturating_sub(before.round_trips),
        buckets: std::array::from_fn(|i| now.buckets[i].saturating_sub(before.buckets[i])),
    }
}

/// The counter's growth, or all of it when the entry restarted.
fn grown(now: u64, before: u64) -> u64 {
    if now < before { now } else { now - before }
}

/// A side for a process that could not be read (it ended): a port of the ephemeral range
/// facing one that is not is a client's; otherwise a server's.
fn guessed_side(local: SocketAddr, remote: SocketAddr) -> Side {
    if is_ephemeral(local.port()) && !is_ephemeral(remote.port()) { Side::Client } else { Side::Server }
}

impl KernelFindings {
    /// Findings of `pid`'s connections only when given, on `ports` only when not empty.
    pub fn new(pid: Option<u32>, ports: Vec<u16>) -> Self {
        KernelFindings {
            pid,
            ports,
            entries: HashMap::new(),
            others: HashMap::new(),
            groups: HashMap::new(),
            exchanges_by: HashMap::new(),
            counts: KernelCounts::default(),
            exchanges: 0,
            not_grouped: 0,
            other_processes: 0,
        }
    }

    /// One read of the programs' map: what is new is added, and returned for the metrics.
    pub fn update(&mut self, read: &[HoldStats], sockets: &mut impl Sockets) -> Vec<Delta> {
        let followed: Vec<&HoldStats> = read.iter().filter(|stats| self.follows(stats)).collect();
        let mut others = HashMap::new();
        for stats in followed.iter().filter(|stats| self.pid.is_some_and(|pid| pid != stats.pid)) {
            let key = (stats.pid, stats.local.port(), stats.remote.port());
            let classified = stats.delayed_ack.holds + stats.round_trip.holds;
            self.other_processes += grown(classified, self.others.get(&key).copied().unwrap_or(0));
            others.insert(key, classified);
        }
        self.others = others;
        let mine: Vec<&HoldStats> =
            followed.into_iter().filter(|stats| self.pid.is_none_or(|pid| pid == stats.pid)).collect();
        self.look_up_new(&mine, sockets);
        let mut deltas = Vec::new();
        let mut present = HashMap::with_capacity(mine.len());
        for stats in mine {
            let key = (stats.pid, stats.local.port(), stats.remote.port());
            present.insert(key, ());
            // Not looked up yet (past the bound): counted from zero at the next read.
            let Some(entry) = self.entries.get_mut(&key) else { continue };
            let before = std::mem::replace(&mut entry.last, stats.clone());
            // A kind with no new hold keeps its last figures: a read between a hold's counters
            // (the kernel adds its length and bucket, then its count) leaves them for the next.
            if since(stats.delayed_ack, before.delayed_ack).holds == 0 {
                entry.last.delayed_ack = before.delayed_ack;
            }
            if since(stats.round_trip, before.round_trip).holds == 0 {
                entry.last.round_trip = before.round_trip;
            }
            let entry = entry.clone();
            self.add(&entry, stats, &before, &mut deltas);
        }
        // Entries the kernel evicted: forgotten, so a new one on the same ports counts from zero.
        self.entries.retain(|key, _| present.contains_key(key));
        self.look_up_peers(sockets);
        deltas
    }

    /// The local peers of new delayed-ACK groups, together, up to a bound a read: looked for
    /// once per group.
    fn look_up_peers(&mut self, sockets: &mut impl Sockets) {
        let mut wanted: Vec<&mut Group> =
            self.groups.values_mut().filter(|group| group.peer_wanted.is_some()).collect();
        wanted.truncate(PEERS_LOOKED_UP_PER_READ);
        if wanted.is_empty() {
            return;
        }
        let queries: Vec<PeerQuery> =
            wanted.iter_mut().filter_map(|group| group.peer_wanted.take()).collect();
        for (group, peer) in wanted.into_iter().zip(sockets.peers(&queries)) {
            group.stalls.peer = peer.map(|peer| Peer {
                pid: peer.pid,
                command: peer.command,
                ack_timeout_ms: peer.ack_timeout.map(|timeout| timeout.as_secs_f64() * 1e3),
            });
        }
    }

    /// Whether `--port` keeps the entry.
    fn follows(&self, stats: &HoldStats) -> bool {
        self.ports.is_empty()
            || self.ports.contains(&stats.local.port())
            || self.ports.contains(&stats.remote.port())
    }

    /// The entries not seen before, looked up one process at a time (up to the bound).
    fn look_up_new(&mut self, read: &[&HoldStats], sockets: &mut impl Sockets) {
        let mut by_process: HashMap<u32, Vec<&HoldStats>> = HashMap::new();
        for stats in read {
            if !self.entries.contains_key(&(stats.pid, stats.local.port(), stats.remote.port())) {
                by_process.entry(stats.pid).or_default().push(stats);
            }
        }
        for (pid, new) in by_process.into_iter().take(PROCESSES_LOOKED_UP_PER_READ) {
            let pairs: Vec<(SocketAddr, SocketAddr)> = new.iter().map(|s| (s.local, s.remote)).collect();
            let found = sockets.sockets(pid, &pairs);
            for (index, stats) in new.iter().enumerate() {
                let socket = found.as_ref().and_then(|all| all.get(index));
                self.counts.connections += 1;
                self.entries.insert((pid, stats.local.port(), stats.remote.port()), entry(stats, socket));
            }
        }
    }

    /// What grew from `before` to `now` on `entry`.
    fn add(&mut self, entry: &Entry, now: &HoldStats, before: &HoldStats, deltas: &mut Vec<Delta>) {
        let new_exchanges = grown(now.exchanges, before.exchanges);
        self.counts.sends += grown(now.sends, before.sends);
        self.counts.holds_unclassed += since(now.unclassed, before.unclassed).holds;
        self.counts.holds_resent += since(now.resent, before.resent).holds;
        self.counts.resends += grown(now.resends, before.resends);
        self.counts.closes += grown(now.closes, before.closes);
        self.counts.resets += grown(now.resets, before.resets);
        self.exchanges += new_exchanges;
        *self.exchanges_by.entry((entry.process.pid, entry.port(), entry.side)).or_default() += new_exchanges;
        if new_exchanges > 0 {
            deltas.push(Delta {
                finding: None,
                process: entry.process.clone(),
                port: entry.port(),
                side: entry.side,
                count: new_exchanges,
                held: Duration::ZERO,
                buckets: [0; HOLD_BUCKETS],
            });
        }
        let first_s = now.first_hold.unwrap_or_default().as_secs_f64();
        let last_s = now.last_hold.unwrap_or_default().as_secs_f64();
        for ((kind, totals), (_, then)) in kinds(now).into_iter().zip(kinds(before)) {
            let new = since(totals, then);
            if new.holds == 0 {
                continue;
            }
            let finding = FindingId::nagle_hold(entry.side.role(), kind);
            let key = GroupKey { finding, pid: entry.process.pid, port: entry.port() };
            if !self.groups.contains_key(&key) && self.groups.len() >= GROUPS_MAX {
                self.not_grouped += new.holds;
                continue;
            }
            deltas.push(Delta {
                finding: Some(finding),
                process: entry.process.clone(),
                port: entry.port(),
                side: entry.side,
                count: new.holds,
                held: new.held,
                buckets: new.buckets,
            });
            let group = self.groups.entry(key).or_insert_with(|| Group {
                stalls: Stalls {
                    finding,
                    side: entry.side,
                    process: None,
                    holder_is_local: true,
                    server: entry.server.to_string(),
                    port: entry.port(),
                    stalls: 0,
                    flows: 0,
                    exchanges: 0,
                    lost_ms: 0.0,
                    mean_stall_ms: 0.0,
                    mean_ack_delay_ms: 0.0,
                    first_s,
                    last_s,
                    peer: None,
                },
                held: Duration::ZERO,
                round_trips: Duration::ZERO,
                announced: false,
                peer_wanted: (kind == HoldKind::DelayedAck).then_some((now.pid, now.local, now.remote)),
            });
            let stalls = &mut group.stalls;
            stalls.flows += u64::from(then.holds == 0);
            stalls.stalls += new.holds;
            stalls.process = Some(entry.process.clone());
            stalls.server = entry.server.to_string();
            stalls.first_s = stalls.first_s.min(first_s);
            stalls.last_s = stalls.last_s.max(last_s);
            group.held += new.held;
            group.round_trips += new.round_trips;
        }
    }

    /// The groups found since the last call, to be announced.
    pub fn new_findings(&mut self) -> Vec<Stalls> {
        let mut new = Vec::new();
        for group in self.groups.values_mut().filter(|group| !group.announced) {
            group.announced = true;
            new.push(report(group, &self.exchanges_by));
        }
        crate::event::most_held_first(&mut new);
        new
    }

    /// Every group, most time held first.
    pub fn all(&self) -> Vec<Stalls> {
        let mut all: Vec<Stalls> =
            self.groups.values().map(|group| report(group, &self.exchanges_by)).collect();
        crate::event::most_held_first(&mut all);
        all
    }
}

/// An entry's side and process, as its process's namespace shows its socket (`None`: the
/// process could not be read).
fn entry(stats: &HoldStats, found: Option<&ProcessSocket>) -> Entry {
    let side = match found {
        Some(socket) if socket.serves => Side::Server,
        Some(_) => Side::Client,
        None => guessed_side(stats.local, stats.remote),
    };
    let process = Process {
        pid: stats.pid,
        command: found.map_or_else(String::new, |s| s.command.clone()),
        fd: found.and_then(|s| s.fd.or(s.listener_fd)),
    };
    let server = if side == Side::Server { stats.local } else { stats.remote };
    Entry { side, process, server, last: zeroed(stats) }
}

/// `stats` with every figure zero: what an entry had before the programs counted anything.
fn zeroed(stats: &HoldStats) -> HoldStats {
    HoldStats {
        pid: stats.pid,
        local: stats.local,
        remote: stats.remote,
        delayed_ack: HoldTotals::default(),
        round_trip: HoldTotals::default(),
        unclassed: HoldTotals::default(),
        resent: HoldTotals::default(),
        longest: Duration::ZERO,
        sends: 0,
        exchanges: 0,
        resends: 0,
        closes: 0,
        resets: 0,
        first_hold: None,
        last_hold: None,
    }
}

/// A group's figures, out of the exchanges its process saw on its port and side.
fn report(group: &Group, exchanges_by: &HashMap<(u32, u16, Side), u64>) -> Stalls {
    let mut stalls = group.stalls.clone();
    let pid = stalls.process.as_ref().map_or(0, |p| p.pid);
    let exchanges = exchanges_by.get(&(pid, stalls.port, stalls.side)).copied().unwrap_or(0);
    stalls.exchanges = exchanges.max(stalls.stalls);
    stalls.lost_ms = group.held.as_secs_f64() * 1e3;
    let count = stalls.stalls.max(1) as f64;
    stalls.mean_stall_ms = stalls.lost_ms / count;
    stalls.mean_ack_delay_ms = group.held.saturating_sub(group.round_trips).as_secs_f64() * 1e3 / count;
    stalls
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    const MS: Duration = Duration::from_millis(1);

    /// Sockets by (pid, local port): (serves, fd); lookups (one per process) counted. A
    /// connection not in it is a process that could not be read.
    #[derive(Default)]
    struct Table {
        sockets: HashMap<(u32, u16), (bool, Option<i32>)>,
        lookups: u32,
        /// Local peers by the holder's (pid, remote port); the peer lookups asked.
        peers: HashMap<(u32, u16), LocalPeer>,
        peer_lookups: Vec<(u32, u16)>,
    }

    impl Sockets for Table {
        fn sockets(
            &mut self,
            pid: u32,
            connections: &[(SocketAddr, SocketAddr)],
        ) -> Option<Vec<ProcessSocket>> {
            self.lookups += 1;
            let found = connections.iter().map(|(local, _)| {
                let (serves, fd) = *self.sockets.get(&(pid, local.port()))?;
                Some(ProcessSocket { command: format!("cmd{pid}"), fd, serves, listener_fd: Some(3) })
            });
            found.collect()
        }

        fn peers(&mut self, queries: &[PeerQuery]) -> Vec<Option<LocalPeer>> {
            let asked = queries.iter().map(|(pid, _, remote)| (*pid, remote.port()));
            self.peer_lookups.extend(asked.clone());
            asked.map(|key| self.peers.get(&key).cloned()).collect()
        }
    }

    fn end(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    }

    /// `holds` of `each`, all in the histogram's bucket of that length.
    fn totals(holds: u64, each: Duration, round_trip: Duration) -> HoldTotals {
        let mut buckets = [0; HOLD_BUCKETS];
        buckets[crate::prometheus::bucket_of(each.as_secs_f64())] = holds;
        HoldTotals { holds, held: each * holds as u32, round_trips: round_trip * holds as u32, buckets }
    }

    /// A server on 8080 (PID 812) answering the client on 40000: `delayed` holds of 41 ms
    /// (the client's delayed ACK, the path 1 ms) in `exchanges` exchanges.
    fn server(delayed: u64, exchanges: u64) -> HoldStats {
        HoldStats {
            delayed_ack: totals(delayed, 41 * MS, MS),
            sends: exchanges * 2,
            exchanges,
            first_hold: Some(Duration::from_millis(100)),
            last_hold: Some(Duration::from_millis(900)),
            ..zeroed(&HoldStats { pid: 812, local: end(8080), remote: end(40000), ..client(0) })
        }
    }

    /// A client (PID 913) on 40001 holding its requests to a server on 9000: round trips of
    /// 10 ms.
    fn client(round_trips: u64) -> HoldStats {
        HoldStats {
            pid: 913,
            local: end(40001),
            remote: end(9000),
            delayed_ack: HoldTotals::default(),
            round_trip: totals(round_trips, 10 * MS, 10 * MS),
            unclassed: HoldTotals::default(),
            resent: HoldTotals::default(),
            longest: 10 * MS,
            sends: round_trips,
            exchanges: round_trips,
            resends: 0,
            closes: 0,
            resets: 0,
            first_hold: Some(Duration::from_millis(200)),
            last_hold: Some(Duration::from_millis(300)),
        }
    }

    fn table() -> Table {
        let mut table = Table::default();
        table.sockets.insert((812, 8080), (true, Some(7)));
        table.sockets.insert((913, 40001), (false, Some(4)));
        table
    }

    #[test]
    fn the_kernels_totals_become_a_finding_per_process_port_and_kind() {
        let mut table = table();
        let mut findings = KernelFindings::new(None, Vec::new());
        let deltas = findings.update(&[server(9, 10), client(5)], &mut table);
        let new = findings.new_findings();
        assert_eq!(new.len(), 2, "{new:?}");
        let server = &new[0];
        assert_eq!(server.finding, FindingId::ServerNagleDelayedAck);
        assert_eq!(server.process, Some(Process { pid: 812, command: "cmd812".into(), fd: Some(7) }));
        assert_eq!((server.port, server.server.as_str()), (8080, "127.0.0.1:8080"));
        assert_eq!((server.stalls, server.exchanges, server.flows), (9, 10, 1));
        assert!((server.mean_stall_ms - 41.0).abs() < 1e-9, "{server:?}");
        assert!((server.mean_ack_delay_ms - 40.0).abs() < 1e-9, "{server:?}");
        assert!((server.first_s, server.last_s) == (0.1, 0.9));
        // The client's side: named by its own process, its server's port.
        let client = &new[1];
        assert_eq!(client.finding, FindingId::ClientNagleRoundTrip);
        assert_eq!((client.port, client.side), (9000, Side::Client));
        assert!(client.mean_ack_delay_ms.abs() < 1e-9, "{client:?}");
        assert_eq!(findings.counts, KernelCounts { sends: 25, connections: 2, ..KernelCounts::default() });
        assert_eq!(deltas.iter().filter(|d| d.finding.is_some()).count(), 2);
        assert!(findings.new_findings().is_empty(), "announced once");
    }

    #[test]
    fn a_read_between_a_holds_counters_leaves_its_figures_for_the_next_read() {
        let mut table = table();
        let mut findings = KernelFindings::new(None, Vec::new());
        findings.update(&[server(9, 10)], &mut table);
        // The kernel added a 41 ms hold's length and bucket, not yet its count.
        let mut between = server(9, 11);
        between.delayed_ack.held += 41 * MS;
        between.delayed_ack.buckets[crate::prometheus::bucket_of(0.041)] += 1;
        let deltas = findings.update(std::slice::from_ref(&between), &mut table);
        assert!(deltas.iter().all(|d| d.finding.is_none()), "{deltas:?}");
        // Then its count: the hold comes whole.
        let deltas = findings.update(&[server(10, 11)], &mut table);
        let held = deltas.iter().find(|d| d.finding.is_some()).expect("the hold");
        assert_eq!((held.count, held.held, held.buckets.iter().sum::<u64>()), (1, 41 * MS, 1));
        assert_eq!(findings.all()[0].stalls, 10);
    }

    #[test]
    fn a_delayed_ack_finding_names_its_local_peer_looked_up_once() {
        let mut table = table();
        let curl = LocalPeer { pid: 4242, command: "curl".into(), ack_timeout: Some(40 * MS) };
        table.peers.insert((812, 40000), curl);
        let mut findings = KernelFindings::new(None, Vec::new());
        findings.update(&[server(9, 10), client(5)], &mut table);
        let new = findings.new_findings();
        let peer = new[0].peer.as_ref().expect("the server's delayed ACKs are a local peer's");
        assert_eq!((peer.pid, peer.command.as_str(), peer.ack_timeout_ms), (4242, "curl", Some(40.0)));
        // The round-trip group is no timer's: its peer is not looked for.
        assert_eq!(new[1].peer, None);
        findings.update(&[server(12, 14), client(6)], &mut table);
        assert_eq!(table.peer_lookups, [(812, 40000)], "looked for once");
        assert_eq!(findings.all()[0].peer.as_ref().map(|p| p.pid), Some(4242));
    }

    #[test]
    fn a_hold_ended_by_a_resend_is_counted_apart_and_makes_no_finding() {
        let mut table = table();
        let mut findings = KernelFindings::new(None, Vec::new());
        // A 300 ms hold the socket resent in: an RTO's length, which would pass for a delayed
        // ACK's were it classed by its length.
        let stalled =
            HoldStats { resent: totals(1, 300 * MS, MS), resends: 2, closes: 1, resets: 1, ..server(0, 10) };
        findings.update(std::slice::from_ref(&stalled), &mut table);
        assert!(findings.new_findings().is_empty());
        let counts = findings.counts;
        assert_eq!((counts.holds_resent, counts.resends, counts.closes, counts.resets), (1, 2, 1, 1));
        // Read again unchanged: nothing is counted twice.
        findings.update(&[stalled], &mut table);
        assert_eq!(findings.counts, counts);
    }

    #[test]
    fn only_what_is_new_is_added_and_an_entry_the_kernel_restarted_counts_from_zero() {
        let mut table = table();
        let mut findings = KernelFindings::new(None, Vec::new());
        findings.update(&[server(9, 10)], &mut table);
        let deltas = findings.update(&[server(12, 14)], &mut table);
        let held: Vec<(u64, Duration)> =
            deltas.iter().filter(|d| d.finding.is_some()).map(|d| (d.count, d.held)).collect();
        assert_eq!(held, [(3, 123 * MS)]);
        // The new holds' lengths, bucketed by the kernel: 41 ms is in the (38 ms, 50 ms] bucket.
        let buckets = deltas.iter().find(|d| d.finding.is_some()).unwrap().buckets;
        let mut expected = [0; HOLD_BUCKETS];
        expected[crate::prometheus::bucket_of(0.041)] = 3;
        assert_eq!(buckets, expected);
        assert_eq!((findings.all()[0].stalls, findings.all()[0].exchanges), (12, 14));
        // Evicted from the kernel's map (gone from a read), then made again: counted anew.
        findings.update(&[], &mut table);
        findings.update(&[server(2, 2)], &mut table);
        assert_eq!(findings.all()[0].stalls, 14);
        assert_eq!(table.lookups, 2, "looked up once per entry's life");
    }

    #[test]
    fn pid_and_ports_keep_only_what_was_asked_and_count_the_other_processes() {
        let mut table = table();
        let mut findings = KernelFindings::new(Some(913), Vec::new());
        findings.update(&[server(9, 10), client(5)], &mut table);
        findings.update(&[server(11, 12), client(5)], &mut table);
        let all = findings.all();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].process.as_ref().map(|p| p.pid), Some(913));
        assert_eq!(findings.other_processes, 11);
        let mut findings = KernelFindings::new(None, vec![8080]);
        findings.update(&[server(9, 10), client(5)], &mut table);
        assert_eq!(findings.all().len(), 1);
        assert_eq!(findings.all()[0].port, 8080);
    }

    #[test]
    fn a_process_gone_before_its_lookup_keeps_its_pid_and_gets_a_side_by_its_ports() {
        let mut findings = KernelFindings::new(None, Vec::new());
        let mut nobody = Table::default();
        findings.update(&[server(9, 10), client(5)], &mut nobody);
        let all = findings.all();
        let server = all.iter().find(|s| s.port == 8080).expect("the server's finding");
        assert_eq!(server.side, Side::Server);
        assert_eq!(server.process, Some(Process { pid: 812, command: String::new(), fd: None }));
        let client = all.iter().find(|s| s.port == 9000).expect("the client's finding");
        assert_eq!(client.side, Side::Client);
    }
}
