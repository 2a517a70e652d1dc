//! The live flow table: one [`Flow`] of the capture analyzer (the rules `pcap` applies) per
//! open TCP connection, with bounded memory however long watch runs and however many
//! connections come and go.
//!
//! - A connection closed (both FINs, or a RST) is summed up and forgotten at once.
//! - One idle for [`IDLE_NS`] is forgotten at the next sweep (its end was not captured, or
//!   it sits in a pool); should it speak again, it is followed again from there.
//! - The table holds at most `capacity` flows; when full, the eighth that was idle longest
//!   is evicted at once (counted), so eviction costs O(1) per new flow on average.
//!
//! What the flows show comes out as [`FlowEvent`]s, as it happens.

use nodelay_capture::{Endpoint, Flow, Hold, TcpSegment};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

/// A flow silent this long is forgotten at the next sweep: 2 minutes, past any delayed ACK
/// or retransmission timeout that could still end a hold it has under way.
pub const IDLE_NS: u64 = 120 * 1_000_000_000;
/// The table's default capacity: a live flow takes about 2.3 KB, so 16 384 of them stay
/// under 40 MB.
pub const DEFAULT_CAPACITY: usize = 16_384;

/// What the flow table tells as packets go by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowEvent {
    /// A Nagle hold was released; `first_in_flow` for the flow's first.
    Hold {
        /// The hold.
        hold: Hold,
        /// The flow's first hold.
        first_in_flow: bool,
    },
    /// The client started new request/response exchanges with `server`.
    Exchanges {
        /// The client end, as the flow judged it.
        client: Endpoint,
        /// The server end, as the flow judged it.
        server: Endpoint,
        /// Exchanges started since the last event.
        count: u32,
    },
    /// A flow left the table: closed, idle or evicted, with its round trip when known.
    Ended {
        /// The round trip the flow's packets timed.
        rtt_ns: Option<u64>,
        /// How it left.
        why: EndReason,
    },
}

/// Why a flow left the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// Both FINs or a RST.
    Closed,
    /// Silent for [`IDLE_NS`].
    Idle,
    /// The table was full and it had been idle longest.
    Evicted,
    /// Its 4-tuple opened a new connection.
    Reused,
    /// Watch stopped with it open.
    Stopped,
}

/// Running counts of the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Flows followed since watch started.
    pub seen: u64,
    /// Flows that left closed.
    pub closed: u64,
    /// Flows that left idle.
    pub idle: u64,
    /// Flows evicted from the full table.
    pub evicted: u64,
}

type Key = (Endpoint, Endpoint);

struct Tracked {
    flow: Box<Flow>,
    exchanges_told: u32,
    held: bool,
}

/// The open flows.
pub struct FlowTable {
    flows: FxHashMap<Key, Tracked>,
    capacity: usize,
    packet: u64,
    /// Running counts.
    pub counts: TableCounts,
}

impl FlowTable {
    /// A table of at most `capacity` flows (at least 8).
    pub fn new(capacity: usize) -> Self {
        FlowTable {
            flows: FxHashMap::default(),
            capacity: capacity.max(8),
            packet: 0,
            counts: TableCounts::default(),
        }
    }

    /// Flows open now.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// No flow is open.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Feeds one segment captured at `time_ns`; what it showed goes to `tell`.
    pub fn segment(&mut self, time_ns: u64, segment: &TcpSegment, tell: &mut impl FnMut(FlowEvent)) {
        self.packet += 1;
        let key = if segment.source <= segment.destination {
            (segment.source, segment.destination)
        } else {
            (segment.destination, segment.source)
        };
        // Bare ACKs of a connection not followed open nothing: its next data will.
        let opens = segment.syn || segment.payload_len > 0;
        if opens && self.flows.len() >= self.capacity && !self.flows.contains_key(&key) {
            self.evict(tell);
        }
        let new = || Tracked {
            flow: Box::new(Flow::live([segment.source, segment.destination], time_ns)),
            exchanges_told: 0,
            held: false,
        };
        // One lookup for a packet of a connection followed: nearly every packet.
        let tracked = match self.flows.entry(key) {
            Entry::Occupied(entry) => {
                let tracked = entry.into_mut();
                // A new SYN on a 4-tuple that already carried exchanges: a new connection.
                if segment.syn && !segment.ack_flag && tracked.flow.exchanges() > 0 {
                    tell(FlowEvent::Ended { rtt_ns: tracked.flow.rtt_ns(), why: EndReason::Reused });
                    *tracked = new();
                    self.counts.seen += 1;
                }
                tracked
            }
            Entry::Vacant(entry) if opens => {
                self.counts.seen += 1;
                entry.insert(new())
            }
            Entry::Vacant(_) => return,
        };
        tracked.flow.segment(self.packet, time_ns, segment);
        if let Some(hold) = tracked.flow.take_hold() {
            let first_in_flow = !tracked.held;
            tracked.held = true;
            tell(FlowEvent::Hold { hold, first_in_flow });
        }
        let exchanges = tracked.flow.exchanges();
        if exchanges > tracked.exchanges_told
            && let Some((client, server)) = tracked.flow.roles()
        {
            tell(FlowEvent::Exchanges { client, server, count: exchanges - tracked.exchanges_told });
            tracked.exchanges_told = exchanges;
        }
        if tracked.flow.is_closed() {
            let rtt_ns = tracked.flow.rtt_ns();
            self.flows.remove(&key);
            self.counts.closed += 1;
            tell(FlowEvent::Ended { rtt_ns, why: EndReason::Closed });
        }
    }

    /// Forgets the flows silent for [`IDLE_NS`] by `now_ns`.
    pub fn sweep(&mut self, now_ns: u64, tell: &mut impl FnMut(FlowEvent)) {
        let counts = &mut self.counts;
        self.flows.retain(|_, tracked| {
            let idle = now_ns.saturating_sub(tracked.flow.last_ns()) >= IDLE_NS;
            if idle {
                counts.idle += 1;
                tell(FlowEvent::Ended { rtt_ns: tracked.flow.rtt_ns(), why: EndReason::Idle });
            }
            !idle
        });
    }

    /// Ends every flow (watch stops).
    pub fn finish(&mut self, tell: &mut impl FnMut(FlowEvent)) {
        for (_, tracked) in self.flows.drain() {
            tell(FlowEvent::Ended { rtt_ns: tracked.flow.rtt_ns(), why: EndReason::Stopped });
        }
    }

    /// Evicts the eighth of the table idle longest.
    fn evict(&mut self, tell: &mut impl FnMut(FlowEvent)) {
        let mut last: Vec<u64> = self.flows.values().map(|tracked| tracked.flow.last_ns()).collect();
        let count = (last.len() / 8).max(1);
        let (_, threshold, _) = last.select_nth_unstable(count - 1);
        let threshold = *threshold;
        let mut left = count;
        let counts = &mut self.counts;
        self.flows.retain(|_, tracked| {
            let evict = left > 0 && tracked.flow.last_ns() <= threshold;
            if evict {
                left -= 1;
                counts.evicted += 1;
                tell(FlowEvent::Ended { rtt_ns: tracked.flow.rtt_ns(), why: EndReason::Evicted });
            }
            !evict
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nodelay_capture::Role;
    use std::net::{IpAddr, Ipv4Addr};

    const MS: u64 = 1_000_000;

    fn end(port: u16) -> Endpoint {
        (IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    }

    fn segment(from: Endpoint, to: Endpoint, seq: u32, ack: u32, flags: &str, payload: u32) -> TcpSegment {
        TcpSegment {
            source: from,
            destination: to,
            seq,
            ack,
            syn: flags.contains('S'),
            ack_flag: flags.contains('A'),
            fin: flags.contains('F'),
            rst: flags.contains('R'),
            payload_len: payload,
            mss_option: flags.contains('S').then_some(65483),
            timestamps: false,
            window: 65535,
            ip_id: None,
        }
    }

    /// A keep-alive connection from client port `port` to server port 8080 whose server holds
    /// each response's body for the client's 40 ms delayed ACK, `exchanges` times.
    fn nagle_connection(
        table: &mut FlowTable,
        port: u16,
        start_ns: u64,
        exchanges: u32,
        close: bool,
    ) -> Vec<FlowEvent> {
        let (c, s) = (end(port), end(8080));
        let mut events = Vec::new();
        let mut tell = |event| events.push(event);
        let (mut cs, mut ss) = (1000u32, 5000u32);
        table.segment(start_ns, &segment(c, s, cs, 0, "S", 0), &mut tell);
        table.segment(start_ns + 10_000, &segment(s, c, ss, cs + 1, "SA", 0), &mut tell);
        cs += 1;
        ss += 1;
        table.segment(start_ns + 20_000, &segment(c, s, cs, ss, "A", 0), &mut tell);
        let mut t = start_ns + MS;
        for _ in 0..exchanges {
            table.segment(t, &segment(c, s, cs, ss, "A", 80), &mut tell);
            cs += 80;
            table.segment(t + 50_000, &segment(s, c, ss, cs, "A", 120), &mut tell);
            ss += 120;
            table.segment(t + 40 * MS, &segment(c, s, cs, ss, "A", 0), &mut tell);
            table.segment(t + 40 * MS + 20_000, &segment(s, c, ss, cs, "A", 13), &mut tell);
            ss += 13;
            t += 100 * MS;
        }
        if close {
            table.segment(t, &segment(c, s, cs, ss, "FA", 0), &mut tell);
            table.segment(t + 10_000, &segment(s, c, ss, cs + 1, "FA", 0), &mut tell);
        }
        events
    }

    #[test]
    fn holds_and_exchanges_are_told_as_they_happen_and_a_closed_flow_leaves() {
        let mut table = FlowTable::new(DEFAULT_CAPACITY);
        let events = nagle_connection(&mut table, 40000, 0, 3, true);
        let holds: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                FlowEvent::Hold { hold, first_in_flow } => Some((hold.held_by, hold.server, *first_in_flow)),
                _ => None,
            })
            .collect();
        assert_eq!(
            holds,
            [
                (Role::Server, end(8080), true),
                (Role::Server, end(8080), false),
                (Role::Server, end(8080), false)
            ]
        );
        let exchanges: u32 =
            events.iter().map(|e| if let FlowEvent::Exchanges { count, .. } = e { *count } else { 0 }).sum();
        assert_eq!(exchanges, 3);
        assert!(matches!(events.last(), Some(FlowEvent::Ended { why: EndReason::Closed, .. })));
        assert!(table.is_empty());
        assert_eq!(table.counts, TableCounts { seen: 1, closed: 1, ..TableCounts::default() });
    }

    #[test]
    fn a_full_table_evicts_the_longest_idle_and_counts_them() {
        let mut table = FlowTable::new(64);
        for port in 0..200u16 {
            nagle_connection(&mut table, 30000 + port, u64::from(port) * 1000 * MS, 1, false);
        }
        assert!(table.len() <= 64, "{}", table.len());
        assert_eq!(table.counts.seen, 200);
        assert_eq!(table.counts.evicted, 200 - table.len() as u64);
        // The newest flows stayed.
        assert!(table.flows.contains_key(&(end(8080), end(30199))));
        let mut ended = 0;
        table.sweep(200_000 * MS + IDLE_NS + 1, &mut |_| ended += 1);
        assert_eq!(ended, 64);
        assert!(table.is_empty());
    }

    #[test]
    fn bare_acks_open_nothing_and_a_new_syn_on_a_used_tuple_starts_over() {
        let mut table = FlowTable::new(16);
        table.segment(0, &segment(end(1), end(2), 1, 1, "A", 0), &mut |_| {});
        assert!(table.is_empty());
        nagle_connection(&mut table, 40000, 0, 1, false);
        let events = nagle_connection(&mut table, 40000, 500 * MS, 1, false);
        assert!(matches!(events[0], FlowEvent::Ended { why: EndReason::Reused, .. }), "{events:?}");
        assert_eq!(table.len(), 1);
        assert_eq!(table.counts.seen, 2);
    }
}
