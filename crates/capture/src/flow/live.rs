//! A flow followed live (`nodelay watch`) rather than read from a file: the same rules, but
//! each Nagle hold is handed out as it is found ([`Flow::take_hold`]) instead of being kept
//! as samples and examples for a report, so a long connection that stalls on every response
//! costs no more memory after an hour than after a second.

use super::{Endpoint, Flow, HoldKind, Role, StallExample};

/// A Nagle hold a live flow just found: who held, on which connection, and the stall itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The side whose data was held (the Nagling sender).
    pub held_by: Role,
    /// The connection's client end (it sent the SYN, or data first).
    pub client: Endpoint,
    /// The connection's server end.
    pub server: Endpoint,
    /// The hold: its length, the peer's ACK delay, what released it.
    pub stall: StallExample,
}

impl Flow {
    /// A flow followed live: holds are counted (no samples, no examples) and each is handed
    /// out by [`Flow::take_hold`]. Its [`summary`](Flow::summary) has the counts and the time
    /// lost, with empty sample lists.
    pub fn live(ends: [Endpoint; 2], first_ns: u64) -> Self {
        let mut flow = Flow::new(ends, first_ns, 0);
        flow.live = true;
        flow
    }

    /// The hold the last segment released, if it released one (at most one per segment).
    pub fn take_hold(&mut self) -> Option<Hold> {
        self.last_hold.take().map(|hold| *hold)
    }

    /// Request/response exchanges so far: each time the client sent data after the server had.
    pub fn exchanges(&self) -> u32 {
        self.exchanges
    }

    /// The client and server ends, once the flow showed which is which (a SYN, or data).
    pub fn roles(&self) -> Option<(Endpoint, Endpoint)> {
        let client = self.client.or(self.first_data_side)?;
        Some((self.ends[client], self.ends[1 - client]))
    }

    /// The round trip, once both sides of the capture point were timed.
    pub fn rtt_ns(&self) -> Option<u64> {
        Some(self.legs[0]?.saturating_add(self.legs[1]?))
    }

    /// When the flow's latest packet was captured.
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// Counts a hold found by `side` and keeps it for [`Flow::take_hold`].
    pub(super) fn note_live_hold(&mut self, side: usize, stall: StallExample) {
        let held_by =
            if self.client.or(self.first_data_side) == Some(side) { Role::Client } else { Role::Server };
        let sender = &mut self.sides[side];
        let stalls = match stall.kind {
            HoldKind::DelayedAck => &mut sender.stalls,
            HoldKind::RoundTrip => &mut sender.round_trips,
        };
        stalls.count += 1;
        stalls.lost_ns = stalls.lost_ns.saturating_add(stall.lost_ns);
        let (client, server) = self.roles().unwrap_or((self.ends[0], self.ends[1]));
        self.last_hold = Some(Box::new(Hold { held_by, client, server, stall }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpSegment;
    use std::net::{IpAddr, Ipv4Addr};

    const CLIENT: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 40000);
    const SERVER: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);
    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    struct Live {
        flow: Flow,
        seq: [u32; 2],
        packet: u64,
    }

    impl Live {
        fn send(&mut self, from: usize, at_ns: u64, payload: u32, syn: bool, ack: bool) -> Option<Hold> {
            let (source, destination) = if from == 0 { (CLIENT, SERVER) } else { (SERVER, CLIENT) };
            let segment = TcpSegment {
                source,
                destination,
                seq: self.seq[from],
                ack: self.seq[1 - from],
                syn,
                ack_flag: ack,
                fin: false,
                rst: false,
                payload_len: payload,
                mss_option: syn.then_some(65483),
                timestamps: false,
                window: 65535,
                ip_id: None,
            };
            self.seq[from] = self.seq[from].wrapping_add(payload + u32::from(syn));
            self.packet += 1;
            self.flow.segment(self.packet, at_ns, &segment);
            self.flow.take_hold()
        }
    }

    #[test]
    fn each_hold_is_handed_out_once_and_only_counted() {
        let mut live = Live { flow: Flow::live([CLIENT, SERVER], 0), seq: [1000, 5000], packet: 0 };
        live.send(0, 0, 0, true, false);
        live.send(1, 20 * US, 0, true, true);
        live.send(0, 40 * US, 0, false, true);
        assert_eq!(live.flow.roles(), Some((CLIENT, SERVER)));
        let mut holds = Vec::new();
        for i in 0..300u64 {
            let at = MS + i * 100 * MS;
            assert!(live.send(0, at, 80, false, true).is_none());
            assert!(live.send(1, at + 50 * US, 120, false, true).is_none());
            assert!(live.send(0, at + 40 * MS, 0, false, true).is_none());
            holds.extend(live.send(1, at + 40 * MS + 20 * US, 13, false, true));
            assert!(live.flow.take_hold().is_none(), "handed out once");
        }
        assert_eq!(holds.len(), 300);
        let hold = &holds[0];
        assert_eq!((hold.held_by, hold.client, hold.server), (Role::Server, CLIENT, SERVER));
        assert_eq!(hold.stall.kind, HoldKind::DelayedAck);
        assert!(hold.stall.lost_ns.abs_diff(40 * MS) < MS, "{hold:?}");
        assert_eq!(live.flow.exchanges(), 300);
        let summary = live.flow.summary();
        assert_eq!(summary.server_stalls.count, 300);
        assert!(summary.server_stalls.ack_delays_ns.is_empty() && summary.server_stalls.examples.is_empty());
    }
}
