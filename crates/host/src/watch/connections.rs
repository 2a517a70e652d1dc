//! From socket tables to upstreams, as pure functions: connections are unordered address
//! pairs (on loopback both ends of one connection are listed, once each way), IPv4-mapped
//! IPv6 addresses are written as IPv4, and a destination's connections opened during the
//! run are its pairs seen after the start that were not there at the start.

use crate::Upstream;
use crate::linux::mapped;
use procfs::net::{TcpNetEntry, TcpState};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;

/// One TCP connection whichever end lists it: the two addresses, the lower first.
pub type Pair = (SocketAddr, SocketAddr);

/// An address as the kernel means it: `::ffff:127.0.0.1` is 127.0.0.1.
pub fn normal(address: SocketAddr) -> SocketAddr {
    SocketAddr::new(mapped(address.ip()), address.port())
}

pub fn pair(one: SocketAddr, other: SocketAddr) -> Pair {
    let (one, other) = (normal(one), normal(other));
    if one <= other { (one, other) } else { (other, one) }
}

/// The connections in a socket table, any state but listening, TIME-WAIT included.
pub fn pairs(entries: &[TcpNetEntry]) -> HashSet<Pair> {
    entries
        .iter()
        .filter(|entry| entry.state != TcpState::Listen && entry.remote_address.port() != 0)
        .map(|entry| pair(entry.local_address, entry.remote_address))
        .collect()
}

/// What the run's readings say about connections, gathered for [`upstreams`].
#[derive(Default)]
pub struct ConnectionReadings {
    /// Where the server's client sockets pointed, at the start, during the run, at the end.
    pub destinations: BTreeSet<SocketAddr>,
    pub at_start: HashSet<Pair>,
    /// The end's table, and the server's client connections the sampler saw during the run.
    pub after_start: HashSet<Pair>,
    /// Established client connections at the end, by destination.
    pub established_at_end: HashMap<SocketAddr, u64>,
    /// Segments sent on connections that lived from start to end, by destination.
    pub pooled_segments_out: HashMap<SocketAddr, u64>,
}

/// One [`Upstream`] per destination, most connections opened first.
pub fn upstreams(readings: &ConnectionReadings) -> Vec<Upstream> {
    let mut opened: HashMap<SocketAddr, u64> = HashMap::new();
    for (one, other) in readings.after_start.difference(&readings.at_start) {
        for end in [one, other] {
            if readings.destinations.contains(end) {
                *opened.entry(*end).or_default() += 1;
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
        })
        .collect();
    // Stable over the address order the set gave.
    upstreams.sort_by(|a, b| b.opened.cmp(&a.opened).then(b.pooled_segments_out.cmp(&a.pooled_segments_out)));
    upstreams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn both_ends_of_a_loopback_connection_are_one_pair_whatever_the_family() {
        let client = at("127.0.0.1:40000");
        let server = at("127.0.0.1:5432");
        assert_eq!(pair(client, server), pair(server, client));
        assert_eq!(pair(at("[::ffff:127.0.0.1]:40000"), server), pair(client, server));
        assert_ne!(pair(client, server), pair(at("127.0.0.1:40001"), server));
    }

    #[test]
    fn new_pairs_count_for_the_destination_they_touch_and_old_ones_do_not() {
        let db = at("10.0.0.5:5432");
        let cache = at("10.0.0.6:6379");
        let mine = |port| SocketAddr::new([10, 0, 0, 1].into(), port);
        let readings = ConnectionReadings {
            destinations: [db, cache].into(),
            at_start: [pair(mine(1), cache)].into(),
            after_start: [pair(mine(1), cache), pair(mine(2), db), pair(db, mine(3)), pair(mine(4), mine(5))]
                .into(),
            established_at_end: [(cache, 1)].into(),
            pooled_segments_out: [(cache, 120)].into(),
        };
        let found = upstreams(&readings);
        assert_eq!(
            found,
            [
                Upstream { destination: db, opened: 2, open_at_end: 0, pooled_segments_out: 0 },
                Upstream { destination: cache, opened: 0, open_at_end: 1, pooled_segments_out: 120 },
            ]
        );
        assert!(found.iter().all(Upstream::carried_traffic));
    }
}
