//! TCP flow tracking and the stall rule of FIELD_NOTES §5, as a pure state machine: feed it
//! segments with their timestamps, read the stalls out.
//!
//! A stall: side S sends a data segment that is not a whole number of MSS (so Nagle holds
//! what follows while it is unacknowledged); the peer's first ACK covering it is a *pure*
//! ACK that comes after 25-500 ms (its delayed-ACK timer); S's next *new* data segment leaves
//! within the ACK-clock window after that ACK (released by the ACK, not by the application).
//! The peer must not have sent data in between: the held bytes continue the same message.
//! Retransmissions (sequence numbers already sent) never count.

use crate::decode::TcpSegment;
use std::net::IpAddr;

/// Shortest ACK delay counted: the shortest delayed-ACK timer is 40 ms.
pub const MIN_ACK_DELAY_NS: u64 = 25_000_000;
/// Longest: delayed-ACK timers stop at 200 ms (Windows, macOS, Linux's ceiling).
pub const MAX_ACK_DELAY_NS: u64 = 500_000_000;
/// A release this soon after the ACK is ACK-clocked...
const ACK_CLOCK_MIN_WINDOW_NS: u64 = 2_000_000;
/// ...and where the handshake RTT is unknown, assume at most this RTT.
const UNKNOWN_RTT_NS: u64 = 2_000_000;
/// Samples and examples kept per sender, to bound memory whatever the capture size.
const SAMPLES_KEPT: usize = 256;
const EXAMPLES_KEPT: usize = 5;

/// An IP address and a TCP port.
pub type Endpoint = (IpAddr, u16);

/// Which end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The end that opened the connection (sent the SYN), or sent data first.
    Client,
    /// The other end.
    Server,
}

/// One stall, for reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallExample {
    /// Request/response exchange on the connection (1 = first request).
    pub exchange: u32,
    /// Capture packet number (1-based) of the segment whose ACK was delayed.
    pub held_after_packet: u64,
    /// Capture packet number of the delayed ACK.
    pub ack_packet: u64,
    /// Capture packet number of the held data the ACK released.
    pub release_packet: u64,
    /// Capture time of the release.
    pub at_ns: u64,
    /// Size of the segment whose ACK was delayed.
    pub segment_bytes: u32,
    /// How long the receiver delayed its ACK of that segment.
    pub ack_delay_ns: u64,
    /// From the delayed ACK to the held data's release.
    pub release_after_ack_ns: u64,
    /// From the held-after segment to the release.
    pub lost_ns: u64,
}

/// The stalls of one sender (bounded samples, exact counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SenderStalls {
    /// Stalls counted.
    pub count: u64,
    /// Time lost to them, summed.
    pub lost_ns: u64,
    /// Each stall's ACK delay, for the first stalls (at most 256).
    pub ack_delays_ns: Vec<u64>,
    /// Each stall's release after the ACK, for the same stalls as `ack_delays_ns`.
    pub releases_ns: Vec<u64>,
    /// The first stalls in full (at most 5).
    pub examples: Vec<StallExample>,
}

impl SenderStalls {
    fn add(&mut self, stall: StallExample) {
        self.count += 1;
        self.lost_ns = self.lost_ns.saturating_add(stall.lost_ns);
        if self.ack_delays_ns.len() < SAMPLES_KEPT {
            self.ack_delays_ns.push(stall.ack_delay_ns);
            self.releases_ns.push(stall.release_after_ack_ns);
        }
        if self.examples.len() < EXAMPLES_KEPT {
            self.examples.push(stall);
        }
    }

    /// Adds another sender's stalls; samples and examples past the bounds are dropped.
    pub fn merge(&mut self, other: &SenderStalls) {
        self.count += other.count;
        self.lost_ns = self.lost_ns.saturating_add(other.lost_ns);
        let room = SAMPLES_KEPT.saturating_sub(self.ack_delays_ns.len());
        self.ack_delays_ns.extend(other.ack_delays_ns.iter().take(room));
        self.releases_ns.extend(other.releases_ns.iter().take(room));
        let room = EXAMPLES_KEPT.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.iter().take(room).cloned());
    }
}

/// A finished flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSummary {
    /// Wireshark's `tcp.stream` of the conversation the flow belongs to.
    pub stream: u64,
    /// The end that opened the connection (or sent data first).
    pub client: Endpoint,
    /// The other end.
    pub server: Endpoint,
    /// Roles come from the SYN; otherwise the side that sent data first is the client.
    pub roles_from_handshake: bool,
    /// Packets of the flow, both ways.
    pub packets: u64,
    /// Payload bytes the client sent, retransmissions left out.
    pub client_bytes: u64,
    /// Payload bytes the server sent, retransmissions left out.
    pub server_bytes: u64,
    /// Request/response exchanges: each time the client sent data after the server had.
    pub exchanges: u32,
    /// Segments that resent bytes already sent, both ways.
    pub retransmissions: u64,
    /// From the client's SYN to its ACK that completed the handshake, when the capture showed both.
    pub handshake_rtt_ns: Option<u64>,
    /// Capture time of the flow's first packet, in nanoseconds since the Unix epoch.
    pub first_ns: u64,
    /// Capture time of the flow's last packet, in nanoseconds since the Unix epoch.
    pub last_ns: u64,
    /// Stalls where the client held data (its request waited).
    pub client_stalls: SenderStalls,
    /// Stalls where the server held data (its response waited).
    pub server_stalls: SenderStalls,
}

impl FlowSummary {
    /// Time lost to stalls on both sides.
    pub fn lost_ns(&self) -> u64 {
        self.client_stalls.lost_ns.saturating_add(self.server_stalls.lost_ns)
    }

    /// Stalls on both sides.
    pub fn stalls(&self) -> u64 {
        self.client_stalls.count + self.server_stalls.count
    }
}

#[derive(Debug, Clone, Copy)]
struct DataSegment {
    time_ns: u64,
    end_seq: u32,
    len: u32,
    packet: u64,
    /// The capture shows a partial segment at its end (or the MSS is unknown).
    sub_mss: bool,
    acked: bool,
}

#[derive(Debug, Clone, Copy)]
struct DelayedAck {
    time_ns: u64,
    packet: u64,
    delay_ns: u64,
    held_after: DataSegment,
}

/// What one side sends.
#[derive(Debug, Clone, Default)]
struct Side {
    advertised_mss: Option<u16>,
    timestamps: bool,
    next_seq: Option<u32>,
    last_data: Option<DataSegment>,
    pending_ack: Option<DelayedAck>,
    payload_bytes: u64,
    retransmissions: u64,
    fin: bool,
    stalls: SenderStalls,
}

/// Sequence-number order with wrap-around (RFC 1982).
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// One TCP connection being followed: its two sides' sequence state, exchanges and stalls.
#[derive(Debug, Clone)]
pub struct Flow {
    stream: u64,
    ends: [Endpoint; 2],
    sides: [Side; 2],
    syn_ns: Option<u64>,
    client: Option<usize>,
    handshake_rtt_ns: Option<u64>,
    first_data_side: Option<usize>,
    last_data_side: Option<usize>,
    exchanges: u32,
    packets: u64,
    first_ns: u64,
    last_ns: u64,
    closed: bool,
}

impl Flow {
    /// `stream`: Wireshark's `tcp.stream` of the conversation, for the report.
    pub fn new(ends: [Endpoint; 2], first_ns: u64, stream: u64) -> Self {
        Flow {
            stream,
            ends,
            sides: Default::default(),
            syn_ns: None,
            client: None,
            handshake_rtt_ns: None,
            first_data_side: None,
            last_data_side: None,
            exchanges: 0,
            packets: 0,
            first_ns,
            last_ns: first_ns,
            closed: false,
        }
    }

    /// When the flow's first packet was captured.
    pub fn summary_first_ns(&self) -> u64 {
        self.first_ns
    }

    /// Both FINs or a RST were seen.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The most a segment from `side` may carry, from the peer's SYN.
    fn send_mss(&self, side: usize) -> Option<u32> {
        let peer = &self.sides[1 - side];
        let options = if peer.timestamps && self.sides[side].timestamps { 12 } else { 0 };
        peer.advertised_mss.map(|mss| u32::from(mss).saturating_sub(options)).filter(|mss| *mss > 0)
    }

    fn ack_clock_window_ns(&self) -> u64 {
        // Captured at the receiver, a release shows one RTT after the ACK left.
        let rtt = self.handshake_rtt_ns.unwrap_or(UNKNOWN_RTT_NS);
        rtt.saturating_mul(2).saturating_add(1_000_000).max(ACK_CLOCK_MIN_WINDOW_NS)
    }

    /// Feeds one segment captured at `time_ns` as packet `packet`.
    pub fn segment(&mut self, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let side = usize::from(segment.source != self.ends[0]);
        let peer = 1 - side;
        self.packets += 1;
        self.last_ns = self.last_ns.max(time_ns);
        if segment.syn {
            let sender = &mut self.sides[side];
            sender.advertised_mss = segment.mss_option.or(sender.advertised_mss);
            sender.timestamps = segment.timestamps;
            sender.next_seq = Some(segment.seq.wrapping_add(1));
            if !segment.ack_flag {
                self.syn_ns = Some(time_ns);
                self.client = Some(side);
            }
            return;
        }
        if self.handshake_rtt_ns.is_none() && self.client == Some(side) && segment.ack_flag {
            self.handshake_rtt_ns = self.syn_ns.map(|syn| time_ns.saturating_sub(syn));
        }
        if segment.rst {
            self.closed = true;
            return;
        }
        if segment.ack_flag {
            self.note_ack(peer, packet, time_ns, segment);
        }
        if segment.payload_len > 0 {
            self.note_data(side, peer, packet, time_ns, segment);
        }
        if segment.fin {
            self.sides[side].fin = true;
            self.closed = self.sides[0].fin && self.sides[1].fin;
        }
    }

    /// An ACK covering `peer`'s last data: a delayed pure ACK is remembered.
    fn note_ack(&mut self, peer: usize, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let pure = segment.payload_len == 0 && !segment.fin;
        let receiver = &mut self.sides[peer];
        let Some(data) = receiver.last_data.as_mut() else { return };
        if data.acked || seq_after(data.end_seq, segment.ack) {
            return;
        }
        data.acked = true;
        let delay = time_ns.saturating_sub(data.time_ns);
        if pure && data.sub_mss && (MIN_ACK_DELAY_NS..=MAX_ACK_DELAY_NS).contains(&delay) {
            receiver.pending_ack = Some(DelayedAck { time_ns, packet, delay_ns: delay, held_after: *data });
        }
    }

    fn note_data(&mut self, side: usize, peer: usize, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let end_seq = segment.seq.wrapping_add(segment.payload_len);
        let mss = self.send_mss(side);
        let window = self.ack_clock_window_ns();
        let sender = &mut self.sides[side];
        if sender.next_seq.is_some_and(|next| !seq_after(end_seq, next)) {
            // Bytes already sent: a retransmission, whatever the timing.
            sender.retransmissions += 1;
            sender.pending_ack = None;
            return;
        }
        sender.payload_bytes += u64::from(segment.payload_len);
        sender.next_seq = Some(end_seq);
        if self.first_data_side.is_none() {
            self.first_data_side = Some(side);
        }
        let client = self.client.or(self.first_data_side);
        if self.last_data_side != Some(side) {
            if client == Some(side) {
                self.exchanges += 1;
            }
            self.last_data_side = Some(side);
        }
        let sender = &mut self.sides[side];
        if let Some(ack) = sender.pending_ack.take() {
            let release = time_ns.saturating_sub(ack.time_ns);
            if release <= window {
                sender.stalls.add(StallExample {
                    exchange: self.exchanges,
                    held_after_packet: ack.held_after.packet,
                    ack_packet: ack.packet,
                    release_packet: packet,
                    at_ns: time_ns,
                    segment_bytes: ack.held_after.len,
                    ack_delay_ns: ack.delay_ns,
                    release_after_ack_ns: release,
                    lost_ns: time_ns.saturating_sub(ack.held_after.time_ns),
                });
            }
        }
        sender.last_data = Some(DataSegment {
            time_ns,
            end_seq,
            len: segment.payload_len,
            packet,
            sub_mss: mss.is_none_or(|mss| !segment.payload_len.is_multiple_of(mss)),
            acked: false,
        });
        // The peer's held bytes, if any, cannot continue a message across this one.
        self.sides[peer].pending_ack = None;
    }

    /// The flow's figures, with roles settled.
    pub fn summary(self) -> FlowSummary {
        let client = self.client.or(self.first_data_side).unwrap_or(0);
        let server = 1 - client;
        let [a, b] = self.sides;
        let (client_side, server_side) = if client == 0 { (a, b) } else { (b, a) };
        FlowSummary {
            stream: self.stream,
            client: self.ends[client],
            server: self.ends[server],
            roles_from_handshake: self.client.is_some(),
            packets: self.packets,
            client_bytes: client_side.payload_bytes,
            server_bytes: server_side.payload_bytes,
            exchanges: self.exchanges,
            retransmissions: client_side.retransmissions + server_side.retransmissions,
            handshake_rtt_ns: self.handshake_rtt_ns,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            client_stalls: client_side.stalls,
            server_stalls: server_side.stalls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const CLIENT: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 40000);
    const SERVER: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);
    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    /// A little conversation builder: sequence numbers follow the bytes sent.
    struct Conversation {
        flow: Flow,
        packet: u64,
        seq: [u32; 2],
    }

    impl Conversation {
        fn new() -> Self {
            let mut c =
                Conversation { flow: Flow::new([CLIENT, SERVER], 0, 0), packet: 0, seq: [1000, 5000] };
            c.syn(0, 0, false);
            c.syn(1, 20 * US, true);
            c.ack(0, 40 * US);
            c
        }

        fn push(&mut self, from: usize, at: u64, payload: u32, flags: (bool, bool)) {
            self.packet += 1;
            let (source, destination) = if from == 0 { (CLIENT, SERVER) } else { (SERVER, CLIENT) };
            let segment = TcpSegment {
                source,
                destination,
                seq: self.seq[from],
                ack: self.seq[1 - from],
                syn: flags.0,
                ack_flag: flags.1,
                fin: false,
                rst: false,
                payload_len: payload,
                mss_option: flags.0.then_some(65495),
                timestamps: true,
            };
            self.seq[from] = self.seq[from].wrapping_add(payload + u32::from(flags.0));
            self.flow.segment(self.packet, at, &segment);
        }

        fn syn(&mut self, from: usize, at: u64, ack: bool) {
            self.push(from, at, 0, (true, ack));
        }
        fn ack(&mut self, from: usize, at: u64) {
            self.push(from, at, 0, (false, true));
        }
        fn data(&mut self, from: usize, at: u64, bytes: u32) {
            self.push(from, at, bytes, (false, true));
        }
        fn retransmit(&mut self, from: usize, at: u64, bytes: u32) {
            self.seq[from] = self.seq[from].wrapping_sub(bytes);
            self.data(from, at, bytes);
        }
    }

    #[test]
    fn server_head_then_body_held_until_delayed_ack() {
        let mut c = Conversation::new();
        for i in 0..3 {
            let t = i * 100 * MS;
            c.data(0, t + MS, 78); // request
            c.data(1, t + MS + 50 * US, 120); // head
            c.ack(0, t + 41 * MS); // client's delayed ACK
            c.data(1, t + 41 * MS + 15 * US, 13); // body, released by the ACK
        }
        let summary = c.flow.summary();
        assert_eq!((summary.client, summary.server), (CLIENT, SERVER));
        assert!(summary.roles_from_handshake);
        assert_eq!(summary.server_stalls.count, 3);
        assert_eq!(summary.client_stalls.count, 0);
        let example = &summary.server_stalls.examples[1];
        assert_eq!(example.exchange, 2);
        assert_eq!(example.segment_bytes, 120);
        assert!((39 * MS..41 * MS).contains(&example.ack_delay_ns), "{example:?}");
        assert_eq!(example.release_after_ack_ns, 15 * US);
        assert_eq!(summary.exchanges, 3);
    }

    #[test]
    fn client_prefix_then_payload_held_until_server_delayed_ack() {
        let mut c = Conversation::new();
        c.data(0, MS, 4);
        c.ack(1, 41 * MS);
        c.data(0, 41 * MS + 10 * US, 5);
        c.data(1, 41 * MS + 60 * US, 9);
        let summary = c.flow.summary();
        assert_eq!(summary.client_stalls.count, 1);
        assert_eq!(summary.server_stalls.count, 0);
    }

    #[test]
    fn quick_acks_and_app_clocked_sends_are_not_stalls() {
        let mut c = Conversation::new();
        // Quick ACK: the body follows a fast ACK.
        c.data(0, MS, 78);
        c.data(1, MS + 50 * US, 120);
        c.ack(0, MS + 90 * US);
        c.data(1, MS + 100 * US, 13);
        // Slow server: the body comes 30 ms after a delayed ACK, not released by it.
        c.data(0, 100 * MS, 78);
        c.data(1, 100 * MS + 50 * US, 120);
        c.ack(0, 140 * MS);
        c.data(1, 170 * MS, 13);
        // Response piggybacks the ACK of the request: nothing held.
        c.data(0, 200 * MS, 78);
        c.data(1, 245 * MS, 133);
        let summary = c.flow.summary();
        assert_eq!(summary.stalls(), 0, "{summary:?}");
    }

    #[test]
    fn retransmission_after_a_timeout_is_not_a_stall() {
        let mut c = Conversation::new();
        c.data(0, MS, 78);
        c.data(1, MS + 50 * US, 120);
        c.ack(0, 41 * MS);
        c.retransmit(1, 41 * MS + 10 * US, 120);
        let summary = c.flow.summary();
        assert_eq!(summary.stalls(), 0);
        assert_eq!(summary.retransmissions, 1);
    }

    #[test]
    fn whole_mss_segments_do_not_hold_what_follows() {
        let mut c = Conversation::new();
        c.data(0, MS, 78);
        // Exactly one MSS (65495 - 12 timestamp bytes): Nagle does not hold the next one.
        c.data(1, MS + 50 * US, 65483);
        c.ack(0, 41 * MS);
        c.data(1, 41 * MS + 10 * US, 13);
        assert_eq!(c.flow.summary().stalls(), 0);
    }

    #[test]
    fn peer_data_in_between_breaks_the_message() {
        let mut c = Conversation::new();
        c.data(0, MS, 78);
        c.data(1, MS + 50 * US, 120);
        c.ack(0, 41 * MS);
        c.data(0, 41 * MS + 5 * US, 78); // a new request first
        c.data(1, 41 * MS + 10 * US, 13);
        assert_eq!(c.flow.summary().stalls(), 0);
    }

    #[test]
    fn roles_without_handshake_come_from_first_data() {
        let mut flow = Flow::new([SERVER, CLIENT], 0, 0);
        let segment = |source, destination, seq, payload| TcpSegment {
            source,
            destination,
            seq,
            ack: 1,
            syn: false,
            ack_flag: true,
            fin: false,
            rst: false,
            payload_len: payload,
            mss_option: None,
            timestamps: false,
        };
        flow.segment(1, 0, &segment(CLIENT, SERVER, 100, 50));
        flow.segment(2, 10, &segment(SERVER, CLIENT, 900, 60));
        let summary = flow.summary();
        assert_eq!((summary.client, summary.server), (CLIENT, SERVER));
        assert!(!summary.roles_from_handshake);
        assert_eq!(summary.exchanges, 1);
    }

    #[test]
    fn sequence_comparison_wraps() {
        assert!(seq_after(5, u32::MAX - 5));
        assert!(!seq_after(u32::MAX - 5, 5));
        assert!(!seq_after(7, 7));
    }
}
