//! From socket tables to upstreams, as pure functions. A connection is an unordered address
//! pair (on loopback both ends of one connection are listed, once each way); IPv4-mapped
//! IPv6 addresses are written as IPv4. A destination's connections opened during the run
//! are the pairs with an end listed after the start that is another socket than the one
//! on the same addresses at the start, if any: a new 4-tuple, another inode, or a
//! TIME-WAIT whose timer restarted (the 4-tuple was reused, as loopback does after 1 s).

use crate::Upstream;
use crate::linux::mapped;
use crate::table_line::TableLine;
use procfs::net::TcpState;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;

/// One TCP connection whichever end lists it: the two addresses, the lower first.
pub type Pair = (SocketAddr, SocketAddr);

/// One end of a connection: (local, remote).
pub type Directed = (SocketAddr, SocketAddr);

/// A TIME-WAIT whose time left at the end exceeds its time left at the start, less the time
/// between, by more than this restarted. Tick rounding (10 ms) and the time a table takes to
/// read (~10 ms) stay below it; the kernel reuses a 4-tuple it picked only after 1 s of
/// TIME-WAIT (`tcp_tw_reuse_delay`), a port bound explicitly at once: a reuse within
/// 100 ms of the TIME-WAIT it replaced counts once.
const RESTARTED_MARGIN_US: u64 = 100_000;

/// Which socket a table line is, among those that had the same addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incarnation {
    /// A socket a process holds, by inode.
    Held(u64),
    /// Closed by its process and still closing (FIN-WAIT, LAST-ACK: inode 0).
    Closing,
    /// In TIME-WAIT, with this much time left.
    TimeWait { left_us: u64 },
}

/// An address as the kernel means it: `::ffff:127.0.0.1` is 127.0.0.1.
pub fn normal(address: SocketAddr) -> SocketAddr {
    SocketAddr::new(mapped(address.ip()), address.port())
}

pub fn directed(local: SocketAddr, remote: SocketAddr) -> Directed {
    (normal(local), normal(remote))
}

pub fn pair((one, other): Directed) -> Pair {
    if one <= other { (one, other) } else { (other, one) }
}

/// The connection ends in socket tables, any state but listening, TIME-WAIT included.
pub fn ends(lines: &[TableLine]) -> HashMap<Directed, Incarnation> {
    lines
        .iter()
        .filter(|line| line.state != TcpState::Listen && line.remote.port() != 0)
        .map(|line| (directed(line.local, line.remote), incarnation(line)))
        .collect()
}

fn incarnation(line: &TableLine) -> Incarnation {
    match (line.time_wait_left_us, line.inode) {
        (Some(left_us), _) => Incarnation::TimeWait { left_us },
        (None, 0) => Incarnation::Closing,
        (None, inode) => Incarnation::Held(inode),
    }
}

/// Whether an end listed `elapsed_us` after the start is another socket than the one with the
/// same addresses at the start (`then`).
fn is_new(then: Option<Incarnation>, now: Incarnation, elapsed_us: u64) -> bool {
    use Incarnation::*;
    match (then, now) {
        (None, _) => true,
        // The same TIME-WAIT has aged by the time between; a restarted timer is a reuse.
        (Some(TimeWait { left_us: before }), TimeWait { left_us: after }) => {
            after > before.saturating_sub(elapsed_us) + RESTARTED_MARGIN_US
        }
        // A socket where only a TIME-WAIT or a closing one was: the 4-tuple was reused.
        (Some(TimeWait { .. } | Closing), Held(_)) | (Some(TimeWait { .. }), Closing) => true,
        (Some(Held(before)), Held(after)) => before != after,
        // Held at the start and closed since: the same connection, ended during the run.
        (Some(Held(_) | Closing), Closing | TimeWait { .. }) => false,
    }
}

/// What the run's readings say about connections, gathered for [`upstreams`].
#[derive(Default, Clone)]
pub struct ConnectionReadings {
    /// Where the server's client sockets pointed, at the start, during the run, at the end.
    pub destinations: BTreeSet<SocketAddr>,
    pub at_start: HashMap<Directed, Incarnation>,
    pub at_end: HashMap<Directed, Incarnation>,
    /// The server's client sockets the sampler met during the run, with their inodes.
    pub sampled: HashSet<(Directed, u64)>,
    /// Between the start's and the end's reading of the tables.
    pub elapsed_us: u64,
    /// Established client connections at the end, by destination.
    pub established_at_end: HashMap<SocketAddr, u64>,
    /// Segments sent on connections that lived from start to end, by destination.
    pub pooled_segments_out: HashMap<SocketAddr, u64>,
    /// Connects to one destination after which the server's local ports have gone round
    /// their range (`local_ports::connects_per_round`), where known.
    pub connects_per_round: Option<u64>,
}

impl ConnectionReadings {
    /// The connections opened during the run, by address pair: those in the end's table or
    /// met by the sampler. A pair counts once per socket the sampler met on one of its ends
    /// (a 4-tuple used again during the run is two connections when both were met), and at
    /// least once; the end's TIME-WAIT or closing socket may be one of those met, so it adds
    /// none of its own. Still a floor: a 4-tuple used twice between two looks counts once, and
    /// a TIME-WAIT that a stray RST ended (`tcp_rfc1337` 0, the default; seen on loopback when
    /// the client's FIN came before `accept`) is gone from the end's table.
    fn opened(&self) -> HashMap<Pair, u64> {
        let mut sockets: HashMap<Directed, HashSet<u64>> = HashMap::new();
        for (end, inode) in &self.sampled {
            if is_new(self.at_start.get(end).copied(), Incarnation::Held(*inode), 0) {
                sockets.entry(*end).or_default().insert(*inode);
            }
        }
        for (end, now) in &self.at_end {
            if is_new(self.at_start.get(end).copied(), *now, self.elapsed_us) {
                let met = sockets.entry(*end).or_default();
                if let Incarnation::Held(inode) = now {
                    met.insert(*inode);
                }
            }
        }
        // Both ends of one connection may be listed (a server that calls itself): the pair
        // counts as often as its busier end.
        let mut opened: HashMap<Pair, u64> = HashMap::new();
        for (end, met) in &sockets {
            let count = opened.entry(pair(*end)).or_default();
            *count = (*count).max((met.len() as u64).max(1));
        }
        opened
    }
}

/// One [`Upstream`] per destination, most connections opened first.
pub fn upstreams(readings: &ConnectionReadings) -> Vec<Upstream> {
    let mut opened: HashMap<SocketAddr, u64> = HashMap::new();
    for ((one, other), connections) in readings.opened() {
        for end in [one, other] {
            if readings.destinations.contains(&end) {
                *opened.entry(end).or_default() += connections;
            }
        }
    }
    let count = |map: &HashMap<SocketAddr, u64>, destination| map.get(destination).copied().unwrap_or(0);
    let mut upstreams: Vec<Upstream> = readings
        .destinations
        .iter()
        .map(|destination| Upstream {
            destination: *destination,
            opened: count(&opened, destination),
            open_at_end: count(&readings.established_at_end, destination),
            pooled_segments_out: count(&readings.pooled_segments_out, destination),
            ports_cycled: readings
                .connects_per_round
                .is_some_and(|round| count(&opened, destination) >= round),
        })
        .collect();
    // Stable over the address order the set gave.
    upstreams.sort_by(|a, b| b.opened.cmp(&a.opened).then(b.pooled_segments_out.cmp(&a.pooled_segments_out)));
    upstreams
}

#[cfg(test)]
mod tests {
    use super::*;
    use Incarnation::*;

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    fn mine(port: u16) -> SocketAddr {
        SocketAddr::new([10, 0, 0, 1].into(), port)
    }

    #[test]
    fn both_ends_of_a_loopback_connection_are_one_pair_whatever_the_family() {
        let client = at("127.0.0.1:40000");
        let server = at("127.0.0.1:5432");
        assert_eq!(pair(directed(client, server)), pair(directed(server, client)));
        assert_eq!(pair(directed(at("[::ffff:127.0.0.1]:40000"), server)), pair(directed(client, server)));
        assert_ne!(pair(directed(client, server)), pair(directed(at("127.0.0.1:40001"), server)));
    }

    #[test]
    fn a_reused_four_tuple_is_new_and_the_same_socket_aged_is_not() {
        let second = 1_000_000;
        let tw = |left_s: u64| TimeWait { left_us: left_s * second };
        // Nothing there before, whatever it is now.
        assert!(is_new(None, Closing, 5 * second));
        // The same TIME-WAIT, 5 s older; and one that restarted during the run.
        assert!(!is_new(Some(tw(50)), tw(45), 5 * second));
        assert!(is_new(Some(tw(50)), tw(58), 5 * second));
        // A held socket on addresses left in TIME-WAIT or closing; another inode.
        assert!(is_new(Some(tw(50)), Held(7), 5 * second));
        assert!(is_new(Some(Closing), Held(7), 5 * second));
        assert!(is_new(Some(Held(6)), Held(7), 5 * second));
        // The same connection, still open or closed during the run.
        assert!(!is_new(Some(Held(7)), Held(7), 5 * second));
        assert!(!is_new(Some(Held(7)), tw(59), 5 * second));
        assert!(!is_new(Some(Held(7)), Closing, 5 * second));
    }

    #[test]
    fn time_wait_is_an_incarnation_and_inode_zero_is_closing() {
        let line = |time_wait_left_us, inode| TableLine {
            local: at("127.0.0.1:40000"),
            remote: at("127.0.0.1:5432"),
            state: TcpState::TimeWait,
            time_wait_left_us,
            inode,
            uid: 0,
        };
        let end = directed(at("127.0.0.1:40000"), at("127.0.0.1:5432"));
        assert_eq!(ends(&[line(Some(59_790_000), 0)]), [(end, TimeWait { left_us: 59_790_000 })].into());
        assert_eq!(ends(&[line(None, 0)]), [(end, Closing)].into());
        assert_eq!(ends(&[line(None, 42)]), [(end, Held(42))].into());
        let listening = TableLine { state: TcpState::Listen, remote: at("0.0.0.0:0"), ..line(None, 9) };
        assert_eq!(ends(&[listening]), HashMap::new());
    }

    #[test]
    fn a_four_tuple_used_twice_counts_twice_when_both_sockets_were_met() {
        let upstream = at("10.0.0.5:8080");
        let readings = ConnectionReadings {
            destinations: [upstream].into(),
            // The upstream closed first each time and holds the TIME-WAIT; the server's port
            // came free at once and was picked again: two sockets, one 4-tuple.
            at_end: [((upstream, mine(1)), TimeWait { left_us: 59_000_000 })].into(),
            sampled: [((mine(1), upstream), 70), ((mine(1), upstream), 71), ((mine(2), upstream), 72)].into(),
            elapsed_us: 2_000_000,
            ..ConnectionReadings::default()
        };
        assert_eq!(upstreams(&readings)[0].opened, 3);
        // A server that calls itself lists both ends of each connection: once each.
        let itself = ConnectionReadings {
            destinations: [mine(80)].into(),
            sampled: [((mine(1), mine(80)), 70), ((mine(80), mine(1)), 71)].into(),
            ..ConnectionReadings::default()
        };
        assert_eq!(upstreams(&itself)[0].opened, 1);
    }

    #[test]
    fn new_connections_count_for_the_destination_they_touch_and_old_ones_do_not() {
        let db = at("10.0.0.5:5432");
        let cache = at("10.0.0.6:6379");
        let readings = ConnectionReadings {
            destinations: [db, cache].into(),
            at_start: [
                ((mine(1), cache), Held(1)),
                ((mine(2), db), TimeWait { left_us: 30_000_000 }),
                ((mine(9), db), TimeWait { left_us: 30_000_000 }),
            ]
            .into(),
            at_end: [
                ((mine(1), cache), Held(1)),
                // Reused during the run, then closed again.
                ((mine(2), db), TimeWait { left_us: 59_000_000 }),
                // The same TIME-WAIT as at the start.
                ((mine(9), db), TimeWait { left_us: 28_000_000 }),
                // The destination's own end of a loopback connection: the pair once.
                ((db, mine(3)), TimeWait { left_us: 59_000_000 }),
                ((mine(3), db), Closing),
                ((mine(4), mine(5)), Held(5)),
            ]
            .into(),
            // Met during the run, gone by the end; and the pooled connection again.
            sampled: [((mine(6), db), 60), ((mine(1), cache), 1)].into(),
            elapsed_us: 2_000_000,
            established_at_end: [(cache, 1)].into(),
            pooled_segments_out: [(cache, 120)].into(),
            connects_per_round: Some(3_529),
        };
        let found = upstreams(&readings);
        assert_eq!(
            found,
            [
                Upstream {
                    destination: db,
                    opened: 3,
                    open_at_end: 0,
                    pooled_segments_out: 0,
                    ports_cycled: false
                },
                Upstream {
                    destination: cache,
                    opened: 0,
                    open_at_end: 1,
                    pooled_segments_out: 120,
                    ports_cycled: false
                },
            ]
        );
        assert!(found.iter().all(Upstream::carried_traffic));
        // The 3 connects to db went round a range whose round is 3 connects, not one of 4;
        // the cache's pooled connection opened nothing.
        let round = |connects| {
            upstreams(&ConnectionReadings { connects_per_round: Some(connects), ..readings.clone() })
        };
        assert!(!round(4)[0].ports_cycled);
        assert!(round(3)[0].ports_cycled && !round(3)[1].ports_cycled);
    }
}
