//! TCP flow tracking as a pure state machine: feed it segments with their timestamps, read
//! out what the capture shows (docs/field-notes.md §5 and §9).
//!
//! - **Round trips** from the capture's own packets: SYN → SYN-ACK and the client's data →
//!   the server's ACK time the server's side of the capture point, SYN-ACK → ACK and the
//!   server's data → the client's ACK the client's side (Wireshark's `tcp.analysis.ack_rtt`;
//!   Karn's rule: never from a resent segment). Their sum is the round trip wherever the
//!   capture was taken; how it splits says where that was.
//! - **Exchanges** (a request, then its response): the client's wait before the request, the
//!   server's ACK of it and its first byte (each net of the server's side of the round trip),
//!   the transfer; summed per flow into a [`Budget`].
//! - **Nagle holds**: side S sends a data segment that is not a whole number of MSS (so Nagle
//!   holds what follows while it is unacknowledged); the peer's first ACK covering it is a
//!   *pure* ACK; S's next *new* data segment leaves as that ACK reaches S (released by the
//!   ACK, not by the application). Where the peer delayed its ACK by 25-500 ms (its
//!   delayed-ACK timer, net of its side of the round trip) the hold is a delayed-ACK stall;
//!   where it ACKed at once the hold lasted one round trip (counted from 0.5 ms). The peer
//!   must not have sent data in between: the held bytes continue the same message.
//! - **Retransmissions** (sequence numbers already sent; keep-alives and window probes
//!   aside): a resend [`RTO_SEEN_NS`] or more after the sender's previous transmission, and
//!   not within as long of a third duplicate ACK (a fast retransmit), is a timeout's; the resends of one segment until an ACK
//!   covers it form a series (the timer doubling), and a series no ACK ended is a peer gone.
//! - **Zero windows**: a receiver's window field of 0 until it opens again, and the sender's
//!   probes meanwhile.

use crate::analysis::{
    Budget, ExchangeTiming, Legs, RTO_SEEN_NS, Retransmissions, RtoSeries, SERIES_KEPT, ZeroWindow,
    ZeroWindows,
};
use crate::decode::TcpSegment;
use std::net::IpAddr;

mod link;
mod live;
pub use live::Hold;

use nodelay_tcp::time::ns;
pub use nodelay_tcp::timers::{MAX_ACK_DELAY_NS, MIN_ACK_DELAY_NS};
pub use nodelay_tcp::{HoldKind, Role};

/// A hold released by an ACK sent at once counts from this long ([`nodelay_tcp::timers::MIN_ROUND_TRIP_HOLD`]).
pub const MIN_ROUND_TRIP_HOLD_NS: u64 = ns(nodelay_tcp::timers::MIN_ROUND_TRIP_HOLD);
/// A first byte this late beyond the round trip is late ([`nodelay_tcp::thresholds::LATE_FIRST_BYTE`]).
pub const LATE_FIRST_BYTE_NS: u64 = ns(nodelay_tcp::thresholds::LATE_FIRST_BYTE);
/// A client's wait this long between its handshake and its request is reported.
pub const CLIENT_WAIT_NS: u64 = 200_000_000;
/// A round trip this long is a slow path ([`nodelay_tcp::thresholds::SLOW_PATH_RTT`]).
pub const SLOW_PATH_RTT_NS: u64 = ns(nodelay_tcp::thresholds::SLOW_PATH_RTT);
/// A release this soon after the ACK is ACK-clocked...
const ACK_CLOCK_MIN_WINDOW_NS: u64 = 2_000_000;
/// ...and where the handshake RTT is unknown, assume at most this RTT.
const UNKNOWN_RTT_NS: u64 = 2_000_000;
/// How far a quick ACK and an ACK-clocked release may stray from the round trip: this, plus
/// a quarter of the round trip ([`nodelay_tcp::timers::KERNEL_ROUND_TRIP_SLACK`]).
const ROUND_TRIP_SLACK_NS: u64 = ns(nodelay_tcp::timers::KERNEL_ROUND_TRIP_SLACK);
/// The smallest MSS a host may use (RFC 9293, IPv4's default): a segment shorter is partial
/// whatever the MSS, and a sender's largest segment stands for its MSS only from here.
const MIN_MSS_BYTES: u32 = 536;
/// Samples and examples kept per sender, to bound memory whatever the capture size.
const SAMPLES_KEPT: usize = 256;
const EXAMPLES_KEPT: usize = 5;

/// An IP address and a TCP port.
pub type Endpoint = (IpAddr, u16);

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
    /// From that segment to the peer's ACK of it, as the capture saw them.
    pub ack_delay_ns: u64,
    /// The same, less the peer's side of the round trip: how long the peer itself waited.
    pub peer_ack_delay_ns: u64,
    /// From the delayed ACK to the held data's release.
    pub release_after_ack_ns: u64,
    /// From the held-after segment to the release.
    pub lost_ns: u64,
    /// The flow's round trip as known then (0: unknown).
    pub rtt_ns: u64,
    /// What released the hold.
    pub kind: HoldKind,
}

/// The stalls of one sender (bounded samples, exact counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SenderStalls {
    /// Stalls counted.
    pub count: u64,
    /// Time lost to them, summed.
    pub lost_ns: u64,
    /// Each stall's ACK delay by the peer (net of its side of the round trip), for the first
    /// stalls (at most 256).
    pub ack_delays_ns: Vec<u64>,
    /// Each stall's release after the ACK, for the same stalls as `ack_delays_ns`.
    pub releases_ns: Vec<u64>,
    /// Each stall's length (segment to release), for the same stalls.
    pub holds_ns: Vec<u64>,
    /// The first stalls in full (at most 5).
    pub examples: Vec<StallExample>,
}

impl SenderStalls {
    fn add(&mut self, stall: StallExample) {
        self.count += 1;
        self.lost_ns = self.lost_ns.saturating_add(stall.lost_ns);
        if self.ack_delays_ns.len() < SAMPLES_KEPT {
            self.ack_delays_ns.push(stall.peer_ack_delay_ns);
            self.releases_ns.push(stall.release_after_ack_ns);
            self.holds_ns.push(stall.lost_ns);
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
        self.holds_ns.extend(other.holds_ns.iter().take(room));
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
    /// Data segments that resent bytes already sent, both ways.
    pub retransmissions: u64,
    /// From the client's SYN to its ACK that completed the handshake, when the capture showed both.
    pub handshake_rtt_ns: Option<u64>,
    /// Capture time of the flow's first packet, in nanoseconds since the Unix epoch.
    pub first_ns: u64,
    /// Capture time of the flow's last packet, in nanoseconds since the Unix epoch.
    pub last_ns: u64,
    /// Stalls where the client held data until the server's delayed ACK.
    pub client_stalls: SenderStalls,
    /// Stalls where the server held data until the client's delayed ACK.
    pub server_stalls: SenderStalls,
    /// Holds of one round trip where the client held data (the server ACKed at once).
    pub client_round_trips: SenderStalls,
    /// Holds of one round trip where the server held data (the client ACKed at once).
    pub server_round_trips: SenderStalls,
    /// The round trip on each side of the capture point.
    pub legs: Legs,
    /// Where the exchanges spent their time.
    pub budget: Budget,
    /// Exchanges whose first byte came [`LATE_FIRST_BYTE_NS`] or more beyond the round trip.
    pub late_first_bytes: u64,
    /// The exchange whose server took longest before its first byte.
    pub slowest_first_byte: Option<ExchangeTiming>,
    /// Waits of [`CLIENT_WAIT_NS`] or more between the handshake and the first request.
    pub client_waits: u64,
    /// The longest wait between the handshake and the first request.
    pub longest_client_wait: Option<ExchangeTiming>,
    /// Retransmissions, their timeouts and series, both ways.
    pub losses: Retransmissions,
    /// Zero windows of [`ZERO_WINDOW_NS`](crate::analysis::ZERO_WINDOW_NS) or more, both ways.
    pub zero_windows: ZeroWindows,
}

impl FlowSummary {
    /// Time lost to Nagle holds on both sides, both kinds.
    pub fn lost_ns(&self) -> u64 {
        [&self.client_stalls, &self.server_stalls, &self.client_round_trips, &self.server_round_trips]
            .iter()
            .fold(0u64, |sum, stalls| sum.saturating_add(stalls.lost_ns))
    }

    /// Nagle holds on both sides, both kinds.
    pub fn stalls(&self) -> u64 {
        self.client_stalls.count
            + self.server_stalls.count
            + self.client_round_trips.count
            + self.server_round_trips.count
    }

    /// The round trip is a slow path ([`SLOW_PATH_RTT_NS`] or more).
    pub fn slow_path(&self) -> bool {
        self.legs.rtt_ns().is_some_and(|rtt| rtt >= SLOW_PATH_RTT_NS)
    }

    /// Time the flow lost to what is not a Nagle hold: a slow path, a client's waits after
    /// its handshake, late first bytes, retransmission timeouts and zero windows. 0: none of
    /// these.
    pub fn slow_ns(&self) -> u64 {
        let mut slow = self.losses.lost_ns.saturating_add(self.zero_windows.total_ns);
        if self.slow_path() {
            slow = slow.saturating_add(self.budget.network_ns).saturating_add(self.budget.handshake_ns);
        }
        if self.client_waits > 0 {
            slow = slow.saturating_add(self.budget.client_wait_ns);
        }
        if self.late_first_bytes > 0 {
            slow = slow.saturating_add(self.budget.server_ns);
        }
        slow
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
    /// How long after `time_ns` it reached the far end of a slow link: the queue ahead of it
    /// and its own serialization (0 on a link whose rate is unknown).
    crossed_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct PendingAck {
    time_ns: u64,
    packet: u64,
    delay_ns: u64,
    held_after: DataSegment,
}

/// What one side sends (and the window it advertises).
#[derive(Debug, Clone, Default)]
struct Side {
    advertised_mss: Option<u16>,
    /// The largest payload it sent: its MSS when the capture missed the SYNs.
    largest_payload: u32,
    /// It sent a partial segment while another was unacknowledged: Nagle is off on this
    /// connection, so none of its waits is a Nagle hold.
    nagle_off: bool,
    timestamps: bool,
    syn_sent: bool,
    syn_resent: bool,
    next_seq: Option<u32>,
    /// The peer's cumulative ACK of this side's bytes.
    acked: Option<u32>,
    dupacks: u32,
    /// When the peer's last duplicate ACK came.
    last_dupack_ns: u64,
    /// A data segment being timed until an ACK covers it: its end and when it was sent.
    timed: Option<(u32, u64)>,
    last_send_ns: u64,
    last_data: Option<DataSegment>,
    pending_ack: Option<PendingAck>,
    /// Its last partial segment: Linux's Nagle (Minshall's variant) holds a new partial one
    /// until the ACK of this one, full segments sent between or not.
    last_small: Option<DataSegment>,
    /// The peer's pure ACK of `last_small` while full segments sent after it were still in
    /// flight: a partial segment leaving as it arrives was held for it (a tail).
    small_acked: Option<PendingAck>,
    payload_bytes: u64,
    retransmissions: u64,
    /// The timeout series under way and the sequence number it resends.
    series: Option<(u32, RtoSeries)>,
    losses: Retransmissions,
    /// This side's window is shut (as receiver).
    zero: Option<ZeroWindow>,
    zero_windows: ZeroWindows,
    fin: bool,
    stalls: SenderStalls,
    round_trips: SenderStalls,
    /// The link its bytes cross, as its ACKs show it.
    link: link::Link,
}

/// Sequence-number order with wrap-around (RFC 1982).
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The exchange under way: its request, the server's ACK of it, its response.
#[derive(Debug, Clone, Copy, Default)]
struct Current {
    timing: ExchangeTiming,
    request_last_ns: u64,
    request_end_seq: u32,
    server_ack: Option<(u64, u64)>,
    response_first: Option<(u64, u64)>,
    response_last: (u64, u64),
    /// When the response's first byte was itself a hold's release: when the bytes that held it
    /// were sent. The wait is the hold's, counted with the stalls, not the server's.
    first_byte_held_from: Option<u64>,
    /// The time a request after the handshake took to reach the capture point when the
    /// client's IP IDs show packets the capture never saw in between (the request lost
    /// before it, and resent): transfer, not the client's wait.
    lost_before_capture_ns: u64,
}

/// Packets a sender sent between two of its packets of IPv4 identification `before` and
/// `after` that the capture did not see. Linux counts the field per connection, one a packet:
/// a gap of a few is packets lost before the capture point. A larger gap is another stack's
/// host-wide counter, or a random one, and tells nothing: 0.
fn unseen_between((before, after): (u16, u16)) -> u16 {
    /// Most packets a per-connection counter can skip in a wait this rule looks at.
    const MOST_UNSEEN: u16 = 8;
    match after.wrapping_sub(before).wrapping_sub(1) {
        unseen @ 1..=MOST_UNSEEN => unseen,
        _ => 0,
    }
}

/// One TCP connection being followed: its two sides' sequence state, exchanges and stalls.
#[derive(Debug, Clone)]
pub struct Flow {
    stream: u64,
    ends: [Endpoint; 2],
    sides: [Side; 2],
    syn_ns: Option<u64>,
    synack_ns: Option<u64>,
    /// The client's ACK of the SYN-ACK: time and packet.
    handshake_ack: Option<(u64, u64)>,
    /// The IPv4 identification of the last packet seen from each side.
    last_ip_id: [Option<u16>; 2],
    client: Option<usize>,
    handshake_rtt_ns: Option<u64>,
    /// The round trip from the capture point to each side (index as `sides`).
    legs: [Option<u64>; 2],
    /// The packet whose ACK gave each leg its first sample (0: the handshake did).
    leg_first_measured_by: [u64; 2],
    first_data_side: Option<usize>,
    last_data_side: Option<usize>,
    exchanges: u32,
    current: Option<Current>,
    /// The last response's end: time and packet.
    previous_response_end: Option<(u64, u64)>,
    budget: Budget,
    late_first_bytes: u64,
    slowest_first_byte: Option<ExchangeTiming>,
    client_waits: u64,
    longest_client_wait: Option<ExchangeTiming>,
    packets: u64,
    first_ns: u64,
    last_ns: u64,
    closed: bool,
    /// Followed live ([`Flow::live`]): holds are counted without samples or examples, and
    /// the latest waits in `last_hold` for [`Flow::take_hold`].
    live: bool,
    last_hold: Option<Box<Hold>>,
}

impl Flow {
    /// `stream`: Wireshark's `tcp.stream` of the conversation, for the report.
    pub fn new(ends: [Endpoint; 2], first_ns: u64, stream: u64) -> Self {
        Flow {
            stream,
            ends,
            sides: Default::default(),
            syn_ns: None,
            synack_ns: None,
            handshake_ack: None,
            last_ip_id: [None; 2],
            client: None,
            handshake_rtt_ns: None,
            legs: [None; 2],
            leg_first_measured_by: [0; 2],
            first_data_side: None,
            last_data_side: None,
            exchanges: 0,
            current: None,
            previous_response_end: None,
            budget: Budget::default(),
            late_first_bytes: 0,
            slowest_first_byte: None,
            client_waits: 0,
            longest_client_wait: None,
            packets: 0,
            first_ns,
            last_ns: first_ns,
            closed: false,
            live: false,
            last_hold: None,
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

    /// The most a segment from `side` may carry: the smaller MSS of the two SYNs (a sender
    /// behind a smaller MTU announces its own), less the timestamp option; without a SYN, the
    /// largest segment it sent, once that is a possible MSS. Never a default.
    fn send_mss(&self, side: usize) -> Option<u32> {
        let (sender, peer) = (&self.sides[side], &self.sides[1 - side]);
        let options = if peer.timestamps && sender.timestamps { 12 } else { 0 };
        let announced = match (sender.advertised_mss, peer.advertised_mss) {
            (Some(own), Some(theirs)) => Some(own.min(theirs)),
            (own, theirs) => own.or(theirs),
        };
        let from_syns = announced.map(|mss| u32::from(mss).saturating_sub(options)).filter(|mss| *mss > 0);
        from_syns.or((sender.largest_payload >= MIN_MSS_BYTES).then_some(sender.largest_payload))
    }

    fn ack_clock_window_ns(&self) -> u64 {
        // Captured at the receiver, a release shows one RTT after the ACK left. A capture
        // started mid-connection has no handshake: the legs measured since tell the RTT.
        let legs = Some(self.known_rtt_ns()).filter(|&rtt| rtt > 0);
        let rtt = self.handshake_rtt_ns.or(legs).unwrap_or(UNKNOWN_RTT_NS);
        rtt.saturating_mul(2).saturating_add(1_000_000).max(ACK_CLOCK_MIN_WINDOW_NS)
    }

    fn client_side(&self) -> usize {
        self.client.or(self.first_data_side).unwrap_or(0)
    }

    fn known_rtt_ns(&self) -> u64 {
        self.legs[0].unwrap_or(0).saturating_add(self.legs[1].unwrap_or(0))
    }

    /// Feeds one segment captured at `time_ns` as packet `packet`.
    pub fn segment(&mut self, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let side = usize::from(segment.source != self.ends[0]);
        let peer = 1 - side;
        self.packets += 1;
        // Counted from the sender's last packet seen, whatever it was (a keep-alive probe
        // during an idle wait moves the counter too).
        let unseen = self.last_ip_id[side].zip(segment.ip_id).map(unseen_between);
        self.last_ip_id[side] = segment.ip_id.or(self.last_ip_id[side]);
        self.last_ns = self.last_ns.max(time_ns);
        if segment.syn {
            self.note_syn(side, packet, time_ns, segment);
            return;
        }
        if self.handshake_rtt_ns.is_none() && self.client == Some(side) && segment.ack_flag {
            self.handshake_rtt_ns = self.syn_ns.map(|syn| time_ns.saturating_sub(syn));
            if let Some(synack) = self.synack_ns {
                // An ACK timed before the SYN-ACK is a clock stepped back: the wait counts
                // from the SYN-ACK.
                self.handshake_ack = Some((time_ns.max(synack), packet));
                if !self.sides[peer].syn_resent {
                    Legs::note(&mut self.legs[side], time_ns.saturating_sub(synack));
                }
                self.budget.handshakes += 1;
                self.budget.handshake_ns =
                    self.budget.handshake_ns.saturating_add(self.handshake_rtt_ns.unwrap_or(0));
            }
        }
        if segment.rst {
            self.closed = true;
            return;
        }
        if segment.ack_flag {
            self.note_window(side, packet, time_ns, segment);
            self.note_ack(side, peer, packet, time_ns, segment);
        }
        if segment.payload_len > 0 {
            self.note_data(side, peer, packet, time_ns, segment, unseen);
        }
        if segment.fin {
            self.sides[side].fin = true;
            self.closed = self.sides[0].fin && self.sides[1].fin;
        }
    }

    /// A SYN or SYN-ACK: options, the handshake's times, or a resend.
    fn note_syn(&mut self, side: usize, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let sender = &mut self.sides[side];
        sender.advertised_mss = segment.mss_option.or(sender.advertised_mss);
        sender.timestamps = segment.timestamps;
        if sender.syn_sent && sender.next_seq == Some(segment.seq.wrapping_add(1)) {
            sender.syn_resent = true;
            self.note_resend(side, packet, time_ns, segment.seq, true);
            return;
        }
        sender.syn_sent = true;
        sender.next_seq = Some(segment.seq.wrapping_add(1));
        sender.last_send_ns = time_ns;
        if !segment.ack_flag {
            self.syn_ns = Some(time_ns);
            self.client = Some(side);
            return;
        }
        self.synack_ns = Some(time_ns);
        if let Some(syn) = self.syn_ns
            && !self.sides[1 - side].syn_resent
        {
            Legs::note(&mut self.legs[side], time_ns.saturating_sub(syn));
        }
        // The SYN-ACK answers the SYN: a series of SYN resends ends here.
        self.note_ack(side, 1 - side, packet, time_ns, segment);
    }

    /// The receiver's window: a zero window begins, or ends.
    fn note_window(&mut self, side: usize, packet: u64, time_ns: u64, segment: &TcpSegment) {
        let receiver = &mut self.sides[side];
        if segment.window == 0 {
            if receiver.zero.is_none() {
                receiver.zero =
                    Some(ZeroWindow { at_ns: time_ns, first_packet: packet, ..ZeroWindow::default() });
            }
        } else if let Some(mut window) = receiver.zero.take() {
            window.reopened_packet = packet;
            window.duration_ns = time_ns.saturating_sub(window.at_ns);
            receiver.zero_windows.add(window);
        }
    }

    /// An ACK from `acker` of `sender`'s bytes: round-trip samples, a timeout series
    /// answered, the server's ACK of a request, and a pure ACK that may release held data.
    fn note_ack(
        &mut self,
        acker: usize,
        sender_side: usize,
        packet: u64,
        time_ns: u64,
        segment: &TcpSegment,
    ) {
        let pure = segment.payload_len == 0 && !segment.fin && !segment.syn;
        let mss = self.send_mss(sender_side).unwrap_or(MIN_MSS_BYTES);
        let sender = &mut self.sides[sender_side];
        let advanced = match sender.acked {
            Some(acked) if !seq_after(segment.ack, acked) => {
                let outstanding = sender.next_seq.is_some_and(|next| seq_after(next, acked));
                if segment.ack == acked && pure && outstanding {
                    sender.dupacks += 1;
                    sender.last_dupack_ns = time_ns;
                }
                false
            }
            previous => {
                let next_seq = sender.next_seq.unwrap_or(segment.ack);
                sender.link.acked(time_ns, previous.unwrap_or(segment.ack), segment.ack, next_seq, mss);
                sender.acked = Some(segment.ack);
                sender.dupacks = 0;
                true
            }
        };
        if advanced {
            if let Some((end, sent_ns)) = sender.timed
                && !seq_after(end, segment.ack)
            {
                sender.timed = None;
                let sample = time_ns.saturating_sub(sent_ns);
                if self.legs[acker].is_none() {
                    self.leg_first_measured_by[acker] = packet;
                }
                Legs::note(&mut self.legs[acker], sample);
            }
            if let Some((seq, mut series)) = sender.series
                && seq_after(segment.ack, seq)
            {
                series.answered = true;
                sender.series = None;
                sender.losses.add_series(series);
            }
            if let Some(current) = self.current.as_mut()
                && Some(sender_side) == self.client.or(self.first_data_side)
                && current.server_ack.is_none()
                && current.response_first.is_none()
                && !seq_after(current.request_end_seq, segment.ack)
            {
                current.server_ack = Some((time_ns, packet));
            }
        }
        let sender = &mut self.sides[sender_side];
        if pure
            && let Some(small) = sender.last_small.as_mut()
            && !small.acked
            && !seq_after(small.end_seq, segment.ack)
        {
            small.acked = true;
            // Full segments after it still in flight: a tail may be held for this ACK.
            let after = sender.last_data.is_some_and(|data| data.packet != small.packet && !data.sub_mss);
            if after {
                let delay_ns = time_ns.saturating_sub(small.time_ns);
                sender.small_acked = Some(PendingAck { time_ns, packet, delay_ns, held_after: *small });
            }
        }
        let Some(data) = sender.last_data.as_mut() else { return };
        if data.acked || seq_after(data.end_seq, segment.ack) {
            return;
        }
        data.acked = true;
        let delay = time_ns.saturating_sub(data.time_ns);
        if pure && data.sub_mss {
            sender.pending_ack = Some(PendingAck { time_ns, packet, delay_ns: delay, held_after: *data });
        }
    }

    /// Bytes sent again (or a SYN): counted, timed, and a timeout's joins its series.
    fn note_resend(&mut self, side: usize, packet: u64, time_ns: u64, seq: u32, syn: bool) {
        let rtt = self.known_rtt_ns();
        let sender = &mut self.sides[side];
        sender.losses.segments += 1;
        sender.timed = None;
        let gap = time_ns.saturating_sub(sender.last_send_ns);
        sender.last_send_ns = time_ns;
        // Three duplicate ACKs make a fast retransmit only while they are fresh: a resend a
        // timeout's length after the last of them is the timer's, whatever came before.
        let fast =
            sender.dupacks >= 3 && time_ns.saturating_sub(sender.last_dupack_ns) < RTO_SEEN_NS.max(rtt);
        if gap < RTO_SEEN_NS || gap < rtt || fast {
            return;
        }
        sender.losses.timeouts += 1;
        match sender.series.as_mut() {
            Some((series_seq, series)) if *series_seq == seq => {
                let after = time_ns.saturating_sub(series.original_ns);
                if let Some(slot) = series.resent_after_ns.get_mut(series.resends as usize) {
                    *slot = after;
                }
                series.resends += 1;
                series.lost_ns = after;
            }
            _ => {
                if let Some((_, old)) = sender.series.take() {
                    sender.losses.add_series(old);
                }
                let mut resent_after_ns = [0; SERIES_KEPT];
                resent_after_ns[0] = gap;
                sender.series = Some((
                    seq,
                    RtoSeries {
                        by_server: false,
                        syn,
                        original_ns: time_ns - gap,
                        first_packet: packet,
                        resends: 1,
                        resent_after_ns,
                        answered: false,
                        lost_ns: gap,
                    },
                ));
            }
        }
    }

    /// `unseen`: the sender's packets between its previous one and this that the capture
    /// did not see, when IP IDs tell.
    fn note_data(
        &mut self,
        side: usize,
        peer: usize,
        packet: u64,
        time_ns: u64,
        segment: &TcpSegment,
        unseen: Option<u16>,
    ) {
        let end_seq = segment.seq.wrapping_add(segment.payload_len);
        if segment.payload_len <= 1
            && let Some(window) = self.sides[peer].zero.as_mut()
        {
            // A window probe: neither news nor a resend.
            window.probes += 1;
            return;
        }
        let mss = self.send_mss(side);
        let window = self.ack_clock_window_ns();
        let client = self.client.or(self.first_data_side.or(Some(side)));
        let sender = &mut self.sides[side];
        if sender.next_seq.is_some_and(|next| !seq_after(end_seq, next)) {
            // A keep-alive (one byte just before the next one), as Wireshark tells it.
            if segment.payload_len == 1 && sender.next_seq == Some(end_seq) {
                return;
            }
            // Bytes already sent: a retransmission, whatever the timing.
            sender.retransmissions += 1;
            sender.pending_ack = None;
            self.note_resend(side, packet, time_ns, segment.seq, false);
            // The message's last byte left now.
            if let Some(current) = self.current.as_mut() {
                if client == Some(side) && current.response_first.is_none() {
                    current.request_last_ns = time_ns;
                } else if client != Some(side) && current.response_first.is_some() {
                    current.response_last = (time_ns, packet);
                }
            }
            return;
        }
        sender.payload_bytes += u64::from(segment.payload_len);
        sender.largest_payload = sender.largest_payload.max(segment.payload_len);
        // On a slow link whose rate the ACKs showed: when it would be done with the bytes
        // before this segment, and how long after now this one reaches the far end.
        let link_free_ns = sender.link.free_at_ns();
        let crossed_ns = sender.link.sent(time_ns, segment.payload_len);
        // A partial segment while another partial one is unacknowledged: Nagle would have held
        // it (a FIN's segment leaves regardless). Its holds so far were something else's.
        let partial = |len: u32| len < mss.unwrap_or(MIN_MSS_BYTES);
        if !segment.fin
            && partial(segment.payload_len)
            && sender.last_data.is_some_and(|previous| !previous.acked && partial(previous.len))
        {
            sender.nagle_off = true;
            sender.stalls = SenderStalls::default();
            sender.round_trips = SenderStalls::default();
        }
        sender.next_seq = Some(end_seq);
        sender.last_send_ns = time_ns;
        if sender.timed.is_none() {
            sender.timed = Some((end_seq, time_ns));
        }
        if self.first_data_side.is_none() {
            self.first_data_side = Some(side);
        }
        if self.last_data_side != Some(side) {
            if client == Some(side) {
                self.exchanges += 1;
                // The request is done where its last byte reaches the server's end of a
                // slow link: its serialization is transfer, not the server's time.
                self.begin_exchange(packet, time_ns, time_ns.saturating_add(crossed_ns), end_seq, unseen);
            }
            self.last_data_side = Some(side);
        } else if client == Some(side)
            && let Some(current) = self.current.as_mut()
        {
            current.request_last_ns = time_ns.saturating_add(crossed_ns);
            current.request_end_seq = end_seq;
            current.server_ack = None;
        }
        if client != Some(side)
            && let Some(current) = self.current.as_mut()
        {
            current.response_first.get_or_insert((time_ns, packet));
            current.response_last = (time_ns, packet);
        } else if client != Some(side) {
            // Data before any request (a server that speaks first): the client's next wait
            // counts from its end.
            self.previous_response_end = Some((time_ns, packet));
        }
        let full_sized = mss.is_some_and(|mss| segment.payload_len >= mss);
        // Within this of the full segments before it, a tail left with them.
        let with_them = ROUND_TRIP_SLACK_NS.saturating_add(self.known_rtt_ns() / 4);
        let sender = &mut self.sides[side];
        // A tail: full segments left after a partial one, then this partial one a while
        // later, as the ACK of that earlier partial one came back (`note_release` checks the
        // ACK clock). It was ready when the full ones left.
        // Not in a connection's first exchange: there the initial window, not Nagle, may keep
        // the tail (ten segments in flight, the tail the eleventh).
        if !full_sized
            && self.exchanges >= 2
            && sender.pending_ack.is_none()
            && let Some(ack) = sender.small_acked
            && let Some(previous) = sender
                .last_data
                .filter(|data| !data.sub_mss && time_ns.saturating_sub(data.time_ns) > with_them)
        {
            let held_after = DataSegment { time_ns: previous.time_ns, ..ack.held_after };
            sender.pending_ack = Some(PendingAck { held_after, ..ack });
        }
        self.note_release(side, peer, packet, time_ns, window, full_sized, link_free_ns);
        let sender = &mut self.sides[side];
        let data = DataSegment {
            time_ns,
            end_seq,
            len: segment.payload_len,
            packet,
            sub_mss: mss.is_none_or(|mss| !segment.payload_len.is_multiple_of(mss)),
            acked: false,
            crossed_ns,
        };
        sender.last_data = Some(data);
        if data.sub_mss {
            sender.last_small = Some(data);
            sender.small_acked = None;
        }
        // The peer's held bytes, if any, cannot continue a message across this one.
        self.sides[peer].pending_ack = None;
        self.sides[peer].small_acked = None;
    }

    /// New data from `side` after a pure ACK of its partial segment: a hold the ACK released,
    /// of one kind or the other, or not a hold at all. Nagle never holds a full-sized segment
    /// (cwnd or the peer's window did), nor anything of a sender that showed it is off.
    /// `link_free_ns`: when a slow link (its rate known) would be done with the bytes sent
    /// before this segment.
    #[allow(clippy::too_many_arguments)]
    fn note_release(
        &mut self,
        side: usize,
        peer: usize,
        packet: u64,
        time_ns: u64,
        window: u64,
        full_sized: bool,
        link_free_ns: Option<u64>,
    ) {
        let Some(ack) = self.sides[side].pending_ack.take() else { return };
        if full_sized || self.sides[side].nagle_off {
            return;
        }
        let release = time_ns.saturating_sub(ack.time_ns);
        // Held while a slow link was still busy with the bytes sent before it, the segment
        // lost only the time after the link would have been free.
        let hold = time_ns.saturating_sub(ack.held_after.time_ns.max(link_free_ns.unwrap_or(0)));
        if link_free_ns.is_some() && hold < MIN_ROUND_TRIP_HOLD_NS {
            return;
        }
        let rtt = self.known_rtt_ns();
        let slack = ROUND_TRIP_SLACK_NS.saturating_add(rtt / 4);
        // A leg first measured by this very ACK (a capture started mid-connection, before
        // any other ACK) includes the delay being judged: it cannot show the ACK was quick.
        let peer_leg = self.legs[peer].filter(|_| self.leg_first_measured_by[peer] != ack.packet);
        // The peer's delay counts from when the segment reached it: a slow link's queue and
        // serialization, on this side of the peer, are not the peer's.
        let peer_delay =
            ack.delay_ns.saturating_sub(ack.held_after.crossed_ns).saturating_sub(peer_leg.unwrap_or(0));
        let quick = peer_leg.is_some() && peer_delay <= slack;
        let ack_clocked = self.legs[side].is_some_and(|leg| release.abs_diff(leg) <= slack);
        let kind = if quick && ack_clocked && hold >= MIN_ROUND_TRIP_HOLD_NS {
            HoldKind::RoundTrip
        } else if (MIN_ACK_DELAY_NS..=MAX_ACK_DELAY_NS).contains(&peer_delay) && release <= window {
            HoldKind::DelayedAck
        } else {
            return;
        };
        let stall = StallExample {
            exchange: self.exchanges,
            held_after_packet: ack.held_after.packet,
            ack_packet: ack.packet,
            release_packet: packet,
            at_ns: time_ns,
            segment_bytes: ack.held_after.len,
            ack_delay_ns: ack.delay_ns,
            peer_ack_delay_ns: peer_delay,
            release_after_ack_ns: release,
            lost_ns: hold,
            rtt_ns: rtt,
            kind,
        };
        if self.client.or(self.first_data_side) != Some(side)
            && let Some(current) = self.current.as_mut()
            && current.response_first == Some((time_ns, packet))
        {
            // TLS session tickets, for one, leave before the request and hold its answer.
            current.first_byte_held_from = Some(ack.held_after.time_ns);
        }
        if self.live {
            self.note_live_hold(side, stall);
            return;
        }
        let sender = &mut self.sides[side];
        match kind {
            HoldKind::DelayedAck => sender.stalls.add(stall),
            HoldKind::RoundTrip => sender.round_trips.add(stall),
        }
    }

    /// A new request: the one before it is decomposed, and the client's wait measured.
    /// `arrived_ns`: when its bytes so far reached the server's end of the link.
    /// `unseen_since_handshake`: the client's packets between its last packet seen (the
    /// handshake ACK, or anything after it) and this one that the capture never saw, when
    /// their IP IDs tell.
    fn begin_exchange(
        &mut self,
        packet: u64,
        time_ns: u64,
        arrived_ns: u64,
        end_seq: u32,
        unseen_since_handshake: Option<u16>,
    ) {
        self.finish_exchange();
        let client_leg = self.legs[self.client_side()].unwrap_or(0);
        let (mut wait, after_handshake, from) = match (self.previous_response_end, self.handshake_ack) {
            (Some((end, from)), _) => (time_ns.saturating_sub(end).saturating_sub(client_leg), false, from),
            (None, Some((ack, from))) => (time_ns.saturating_sub(ack), true, from),
            (None, None) => (0, false, 0),
        };
        // The first request came late because it was lost before the capture point and
        // resent: the capture never saw the client's first tries, but its IP IDs count them.
        let mut lost_before_capture_ns = 0;
        if after_handshake && unseen_since_handshake.is_some_and(|n| n > 0) {
            lost_before_capture_ns = std::mem::take(&mut wait);
        }
        self.current = Some(Current {
            timing: ExchangeTiming {
                exchange: self.exchanges,
                at_ns: time_ns,
                request_packet: packet,
                client_wait_ns: wait,
                after_handshake,
                wait_from_packet: from,
                ..ExchangeTiming::default()
            },
            request_last_ns: arrived_ns,
            request_end_seq: end_seq,
            lost_before_capture_ns,
            ..Current::default()
        });
    }

    /// The exchange under way, decomposed into the flow's budget (when it had a response).
    fn finish_exchange(&mut self) {
        let Some(current) = self.current.take() else { return };
        let Some((response_ns, response_packet)) = current.response_first else { return };
        let server_leg = self.legs[1 - self.client_side()].unwrap_or(0);
        let mut timing = current.timing;
        let request_done = current.request_last_ns;
        // A held first byte: the server's own time ends where the hold began.
        let answered_ns =
            current.first_byte_held_from.map_or(response_ns, |from| from.clamp(request_done, response_ns));
        timing.server_ns = answered_ns.saturating_sub(request_done).saturating_sub(server_leg);
        timing.response_packet = response_packet;
        if let Some((ack_ns, ack_packet)) = current.server_ack {
            timing.server_ack_ns = Some(ack_ns.saturating_sub(request_done).saturating_sub(server_leg));
            timing.server_ack_packet = ack_packet;
        }
        timing.transfer_ns = request_done
            .saturating_sub(timing.at_ns)
            .saturating_add(current.response_last.0.saturating_sub(response_ns))
            .saturating_add(current.lost_before_capture_ns);
        timing.rtt_ns = self.known_rtt_ns();
        let budget = &mut self.budget;
        budget.exchanges += 1;
        budget.network_ns = budget.network_ns.saturating_add(timing.rtt_ns);
        budget.server_ns = budget.server_ns.saturating_add(timing.server_ns);
        budget.transfer_ns = budget.transfer_ns.saturating_add(timing.transfer_ns);
        if timing.after_handshake {
            budget.client_wait_ns = budget.client_wait_ns.saturating_add(timing.client_wait_ns);
            if timing.client_wait_ns >= CLIENT_WAIT_NS {
                self.client_waits += 1;
            }
            if self.longest_client_wait.is_none_or(|w| timing.client_wait_ns > w.client_wait_ns) {
                self.longest_client_wait = Some(timing);
            }
        } else {
            budget.client_idle_ns = budget.client_idle_ns.saturating_add(timing.client_wait_ns);
        }
        if timing.server_ns >= LATE_FIRST_BYTE_NS {
            self.late_first_bytes += 1;
        }
        if self.slowest_first_byte.is_none_or(|slowest| timing.server_ns > slowest.server_ns) {
            self.slowest_first_byte = Some(timing);
        }
        self.previous_response_end = Some(current.response_last);
    }

    /// The flow's figures, with roles settled.
    pub fn summary(mut self) -> FlowSummary {
        self.finish_exchange();
        let client = self.client_side();
        let server = 1 - client;
        let last_ns = self.last_ns;
        for (index, side) in self.sides.iter_mut().enumerate() {
            let by_server = index == server;
            if let Some((_, series)) = side.series.take() {
                side.losses.add_series(series);
            }
            if let Some(worst) = side.losses.worst.as_mut() {
                worst.by_server = by_server;
            }
            if let Some(mut window) = side.zero.take() {
                window.duration_ns = last_ns.saturating_sub(window.at_ns);
                side.zero_windows.add(window);
            }
            if let Some(longest) = side.zero_windows.longest.as_mut() {
                longest.by_server = by_server;
            }
        }
        let [a, b] = self.sides;
        let (client_side, server_side) = if client == 0 { (a, b) } else { (b, a) };
        let mut losses = client_side.losses;
        losses.merge(&server_side.losses);
        let mut zero_windows = client_side.zero_windows;
        zero_windows.merge(&server_side.zero_windows);
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
            client_round_trips: client_side.round_trips,
            server_round_trips: server_side.round_trips,
            legs: Legs { client_ns: self.legs[client], server_ns: self.legs[server] },
            budget: self.budget,
            late_first_bytes: self.late_first_bytes,
            slowest_first_byte: self.slowest_first_byte,
            client_waits: self.client_waits,
            longest_client_wait: self.longest_client_wait,
            losses,
            zero_windows,
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
        window: u16,
        /// The MSS each side's SYN announces.
        mss: [u16; 2],
    }

    impl Conversation {
        fn new() -> Self {
            Conversation::with_mss([65495, 65495])
        }

        fn with_mss(mss: [u16; 2]) -> Self {
            let mut c = Conversation::mid_connection();
            c.mss = mss;
            c.syn(0, 0, false);
            c.syn(1, 20 * US, true);
            c.ack(0, 40 * US);
            c
        }

        /// A capture that starts after the handshake: no SYN, no MSS.
        fn mid_connection() -> Self {
            Conversation {
                flow: Flow::new([CLIENT, SERVER], 0, 0),
                packet: 0,
                seq: [1000, 5000],
                window: 65535,
                mss: [65495, 65495],
            }
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
                mss_option: flags.0.then_some(self.mss[from]),
                timestamps: true,
                window: self.window,
                ip_id: None,
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
    fn a_first_byte_held_by_bytes_sent_before_the_request_is_a_stall_not_the_servers_time() {
        // TLS 1.3: the session tickets leave as the request does; the request's ACK does not
        // cover them, and the response waits for the client's delayed ACK of them.
        let mut c = Conversation::new();
        c.data(0, MS, 80); // the client's Finished
        c.data(1, MS + 50 * US, 255); // the tickets
        c.seq[1] -= 255;
        c.data(0, MS + 60 * US, 90); // the request, sent before the tickets arrived
        c.seq[1] += 255;
        c.ack(1, MS + 80 * US); // the server's quick ACK of the request
        c.ack(0, 201 * MS); // the client's delayed ACK of the tickets
        c.data(1, 201 * MS + 20 * US, 160); // the response, released
        let summary = c.flow.summary();
        assert_eq!(summary.server_stalls.count, 1);
        assert_eq!(summary.late_first_bytes, 0, "{:?}", summary.slowest_first_byte);
        assert!(summary.slowest_first_byte.unwrap().server_ns < MS, "{:?}", summary.slowest_first_byte);
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

    /// A request, the server's `first` segment, the client's pure ACK 40 ms later, and the
    /// server's `then` segment 10 µs after it.
    fn one_exchange(c: &mut Conversation, first: u32, then: u32) {
        c.data(0, MS, 78);
        c.data(1, MS + 50 * US, first);
        c.ack(0, 41 * MS);
        c.data(1, 41 * MS + 10 * US, then);
    }

    #[test]
    fn the_senders_own_smaller_mss_makes_its_segments_full_sized() {
        // The server announced 1380 (1368 with timestamps), the client 65495: the server's
        // 1368-byte segments are whole, and a slow-start wait for the ACK holds nothing.
        let mut c = Conversation::with_mss([65495, 1380]);
        one_exchange(&mut c, 1368, 1368);
        assert_eq!(c.flow.summary().stalls(), 0);
    }

    #[test]
    fn a_full_sized_release_is_not_a_nagle_hold() {
        // A partial segment, then a whole one after the ACK: Nagle never holds a whole
        // segment, so cwnd or the window did.
        let mut c = Conversation::with_mss([65495, 1380]);
        one_exchange(&mut c, 500, 1368);
        assert_eq!(c.flow.summary().stalls(), 0);
        // The control: the same with a partial release is a hold.
        let mut c = Conversation::with_mss([65495, 1380]);
        one_exchange(&mut c, 500, 13);
        assert_eq!(c.flow.summary().server_stalls.count, 1);
    }

    #[test]
    fn one_partial_segment_sent_while_another_is_unacked_proves_nagle_off() {
        let mut c = Conversation::new();
        // An exchange that looks held (a delayed ACK, then the body)...
        one_exchange(&mut c, 120, 13);
        // ...then head and body back to back, the head unacknowledged: no Nagle here.
        c.data(0, 100 * MS, 78);
        c.data(1, 100 * MS + 50 * US, 120);
        c.data(1, 100 * MS + 60 * US, 13);
        c.ack(0, 140 * MS);
        // And after, another wait that looks held.
        c.data(0, 200 * MS, 78);
        c.data(1, 200 * MS + 50 * US, 120);
        c.ack(0, 240 * MS);
        c.data(1, 240 * MS + 10 * US, 13);
        let summary = c.flow.summary();
        assert_eq!(summary.stalls(), 0, "{summary:?}");
    }

    #[test]
    fn without_syns_the_largest_segment_is_the_mss() {
        // A capture that starts mid-connection: 1200-byte segments (a possible MSS) are whole.
        let mut c = Conversation::mid_connection();
        one_exchange(&mut c, 1200, 1200);
        assert_eq!(c.flow.summary().stalls(), 0);
        // Small segments prove nothing of the MSS: head then held body is still a hold.
        let mut c = Conversation::mid_connection();
        one_exchange(&mut c, 120, 13);
        // (Without the handshake's round trip the capture calls it a round-trip hold.)
        assert_eq!(c.flow.summary().stalls(), 1);
    }

    /// A response whose first segment is lost: its ACK and three duplicates from `acks_at`,
    /// then the resend `after` the last of them.
    fn lost_then_resent(acks_at: u64, after: u64) -> FlowSummary {
        let mut c = Conversation::new();
        c.data(0, MS, 78);
        let lost = c.seq[1];
        for i in 0..4 {
            c.data(1, (2 + i) * MS, 1000);
        }
        let end = c.seq[1];
        c.seq[1] = lost;
        for i in 0..4 {
            c.ack(0, acks_at + i * MS);
        }
        c.data(1, acks_at + 3 * MS + after, 1000);
        c.seq[1] = end;
        c.flow.summary()
    }

    #[test]
    fn a_resend_long_after_the_duplicate_acks_is_the_timers() {
        // 27 s after the original and 5 s after the last duplicate ACK (a capture of the
        // field): the fast retransmit never came, the timer sent it.
        let summary = lost_then_resent(6 * MS, 5000 * MS);
        assert_eq!((summary.retransmissions, summary.losses.timeouts), (1, 1), "{:?}", summary.losses);
        // Right after the third duplicate ACK it is a fast retransmit, though the sender was
        // quiet a timeout's length before (the ACKs came 300 ms late).
        let summary = lost_then_resent(300 * MS, MS);
        assert_eq!((summary.retransmissions, summary.losses.timeouts), (1, 0), "{:?}", summary.losses);
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
            window: 65535,
            ip_id: None,
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

/// The round trips, exchanges, retransmissions and windows a flow reads from its packets.
#[cfg(test)]
mod path_tests {
    use super::*;
    use crate::analysis::{Position, RTO_MIN_NS};
    use std::net::Ipv4Addr;

    const CLIENT: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000);
    const SERVER: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 8080);
    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    /// Segments as one capture point sees them: `client_leg` and `server_leg` are the round
    /// trips from it to each end, so a segment sent by one end at `t` shows at `t` plus half
    /// that end's leg. Sequence numbers follow the bytes sent.
    struct Path {
        flow: Flow,
        packet: u64,
        seq: [u32; 2],
        legs: [u64; 2],
        window: [u16; 2],
        /// Each end's next IPv4 identification, counted per packet as Linux does.
        ip_id: [u16; 2],
    }

    impl Path {
        fn new(client_leg: u64, server_leg: u64) -> Self {
            Path {
                flow: Flow::new([CLIENT, SERVER], 0, 0),
                packet: 0,
                seq: [1000, 5000],
                legs: [client_leg, server_leg],
                window: [65535; 2],
                ip_id: [0xab00, 0x3000],
            }
        }

        /// A handshake that starts at the client at `t` (sender's clock), as the capture sees it.
        fn handshake(&mut self, t: u64) -> u64 {
            let [c, s] = self.legs;
            self.send(0, t, 0, true, false, 0);
            self.send(1, t + c / 2 + s / 2, 0, true, true, 0);
            self.send(0, t + c + s, 0, false, true, 0);
            t + c + s
        }

        /// `from` sends at its own clock `t`; the capture sees it half `from`'s leg later.
        fn send(&mut self, from: usize, t: u64, payload: u32, syn: bool, ack: bool, rewind: u32) -> u64 {
            self.packet += 1;
            let seen = t + self.legs[from] / 2;
            self.seq[from] = self.seq[from].wrapping_sub(rewind);
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
                mss_option: syn.then_some(1460),
                timestamps: false,
                window: self.window[from],
                ip_id: Some(self.ip_id[from]),
            };
            self.ip_id[from] = self.ip_id[from].wrapping_add(1);
            self.seq[from] = self.seq[from].wrapping_add(payload + u32::from(syn));
            self.flow.segment(self.packet, seen, &segment);
            seen
        }

        fn data(&mut self, from: usize, t: u64, bytes: u32) -> u64 {
            self.send(from, t, bytes, false, true, 0)
        }
        fn ack(&mut self, from: usize, t: u64) -> u64 {
            self.send(from, t, 0, false, true, 0)
        }
    }

    /// The three places a capture is taken, for a 40 ms path.
    const PLACES: [(u64, u64, Option<Position>); 3] = [
        (0, 40 * MS, Some(Position::Client)),
        (40 * MS, 0, Some(Position::Server)),
        (16 * MS, 24 * MS, Some(Position::Between)),
    ];

    #[test]
    fn the_handshake_splits_the_round_trip_wherever_the_capture_was_taken() {
        for (c, s, position) in PLACES {
            let mut path = Path::new(c, s);
            path.handshake(0);
            let summary = path.flow.summary();
            assert_eq!(summary.legs.rtt_ns(), Some(40 * MS), "{c} {s}");
            assert_eq!(summary.legs.position(), position, "{c} {s}");
            assert_eq!(summary.handshake_rtt_ns, Some(40 * MS));
            assert_eq!(summary.budget.handshakes, 1);
        }
        // One host: the split tells nothing.
        let mut path = Path::new(20 * US, 30 * US);
        path.handshake(0);
        assert_eq!(path.flow.summary().legs.position(), None);
    }

    #[test]
    fn a_server_that_acks_at_once_but_answers_late_is_late_net_of_the_round_trip() {
        for (c, s, _) in PLACES {
            let mut path = Path::new(c, s);
            let t = path.handshake(0);
            // Client sends at t; it reaches the server at t + 20 ms (server's clock).
            path.data(0, t, 80);
            path.ack(1, t + 20 * MS);
            path.data(1, t + 1020 * MS, 200);
            path.ack(0, t + 1040 * MS);
            let summary = path.flow.summary();
            let slowest = summary.slowest_first_byte.expect("an exchange");
            let within = |value: u64, expected: u64| value.abs_diff(expected) <= 10 * US;
            assert!(within(slowest.server_ns, 1000 * MS), "{c} {s}: {slowest:?}");
            assert!(within(slowest.server_ack_ns.unwrap(), 0), "{c} {s}: {slowest:?}");
            assert_eq!(summary.late_first_bytes, 1);
            assert_eq!(slowest.client_wait_ns, 0, "the request followed the handshake at once");
            assert!(slowest.after_handshake);
            assert_eq!(summary.budget.network_ns, 40 * MS);
        }
    }

    #[test]
    fn a_healthy_server_over_a_path_is_not_late() {
        for (c, s, _) in PLACES {
            let mut path = Path::new(c, s);
            let t = path.handshake(0);
            for i in 0..3 {
                let at = t + i * 100 * MS;
                path.data(0, at, 80);
                path.data(1, at + 20 * MS + 300 * US, 200);
                path.ack(0, at + 40 * MS + 300 * US);
            }
            let summary = path.flow.summary();
            assert_eq!(summary.late_first_bytes, 0, "{c} {s}: {:?}", summary.slowest_first_byte);
            assert!(summary.slowest_first_byte.unwrap().server_ns <= 400 * US);
            assert_eq!(summary.slow_ns(), 0, "{c} {s}: {summary:?}");
            assert_eq!(summary.budget.exchanges, 3);
        }
    }

    #[test]
    fn a_client_that_waits_after_its_handshake_is_timed() {
        for (c, s, _) in PLACES {
            let mut path = Path::new(c, s);
            let t = path.handshake(0);
            path.data(0, t + 1300 * MS, 80);
            path.data(1, t + 1300 * MS + 20 * MS, 200);
            let summary = path.flow.summary();
            let wait = summary.longest_client_wait.unwrap();
            assert!(wait.client_wait_ns.abs_diff(1300 * MS) <= 10 * US, "{c} {s}: {wait:?}");
            assert_eq!(summary.client_waits, 1);
            assert!(summary.slow_ns() >= 1300 * MS - 10 * US);
        }
    }

    #[test]
    fn a_request_lost_before_the_capture_point_is_not_the_clients_wait() {
        let mut path = Path::new(20 * MS, 20 * MS);
        let t = path.handshake(0);
        // Two tries the capture never saw (lost on the client's side of it), then the resend.
        path.ip_id[0] = path.ip_id[0].wrapping_add(2);
        path.data(0, t + 430 * MS, 80);
        path.data(1, t + 450 * MS, 200);
        let summary = path.flow.summary();
        assert_eq!(summary.client_waits, 0, "{summary:?}");
        assert!(summary.budget.transfer_ns >= 400 * MS, "{:?}", summary.budget);
        // A keep-alive probe seen while the client waits moves its counter too: that wait is
        // the client's.
        let mut path = Path::new(20 * MS, 20 * MS);
        let t = path.handshake(0);
        path.ack(0, t + 200 * MS);
        path.data(0, t + 430 * MS, 80);
        path.data(1, t + 450 * MS, 200);
        assert_eq!(path.flow.summary().client_waits, 1);
    }

    #[test]
    fn idle_time_between_exchanges_is_not_a_wait() {
        let mut path = Path::new(0, 40 * MS);
        let t = path.handshake(0);
        path.data(0, t, 80);
        path.data(1, t + 20 * MS, 200);
        path.data(0, t + 5000 * MS, 80);
        path.data(1, t + 5020 * MS, 200);
        let summary = path.flow.summary();
        assert_eq!(summary.client_waits, 0);
        assert!(summary.budget.client_idle_ns >= 4900 * MS);
        assert_eq!(summary.slow_ns(), 0);
    }

    #[test]
    fn a_segment_resent_with_a_doubling_timer_and_never_answered_is_a_peer_gone() {
        let mut path = Path::new(0, 40 * MS);
        let t = path.handshake(0);
        path.data(0, t, 80);
        let mut resent = Vec::new();
        for after in [200, 600, 1200, 2400, 4800] {
            path.send(0, t + after * MS, 80, false, true, 80);
            resent.push(after * MS);
        }
        let summary = path.flow.summary();
        assert_eq!(summary.retransmissions, 5);
        assert_eq!(summary.losses.timeouts, 5);
        assert_eq!(summary.losses.series, 1);
        assert_eq!(summary.losses.unanswered, 1);
        let series = summary.losses.worst.unwrap();
        assert_eq!(series.resent_after(), resent);
        assert!(!series.answered && !series.by_server && !series.syn);
        assert_eq!(series.lost_ns, 4800 * MS);
        assert!(summary.slow_ns() >= 4800 * MS);
    }

    #[test]
    fn an_answered_timeout_and_fast_retransmits() {
        let mut path = Path::new(0, 40 * MS);
        let t = path.handshake(0);
        path.data(0, t, 80);
        path.send(0, t + RTO_MIN_NS + 30 * MS, 80, false, true, 80);
        path.data(1, t + RTO_MIN_NS + 50 * MS, 200);
        // A resend 1 ms after the last transmission is no timeout's.
        path.data(1, t + RTO_MIN_NS + 51 * MS, 100);
        path.send(1, t + RTO_MIN_NS + 52 * MS, 100, false, true, 100);
        let summary = path.flow.summary();
        assert_eq!((summary.retransmissions, summary.losses.timeouts), (2, 1));
        let series = summary.losses.worst.unwrap();
        assert!(series.answered, "{series:?}");
        assert_eq!(series.lost_ns, RTO_MIN_NS + 30 * MS);
        // Karn: the resent request gave no round-trip sample; the handshake's stands.
        assert_eq!(summary.legs.server_ns, Some(40 * MS));
    }

    #[test]
    fn syn_resends_are_timeouts_and_leave_the_round_trip_out() {
        let mut path = Path::new(0, 40 * MS);
        path.send(0, 0, 0, true, false, 0);
        path.send(0, 1000 * MS, 0, true, false, 1);
        path.send(0, 3000 * MS, 0, true, false, 1);
        let summary = path.clone_summary();
        assert_eq!(summary.losses.timeouts, 2);
        let series = summary.losses.worst.unwrap();
        assert!(series.syn && !series.answered, "{series:?}");
        assert_eq!(series.resent_after(), [1000 * MS, 3000 * MS]);
        // Then answered: the SYN-ACK ends the series, but times no round trip (which SYN?).
        path.send(1, 3000 * MS, 0, true, true, 0);
        path.send(0, 3040 * MS, 0, false, true, 0);
        let summary = path.flow.summary();
        assert!(summary.losses.worst.unwrap().answered);
        assert_eq!(summary.legs.server_ns, None);
    }

    impl Path {
        fn clone_summary(&self) -> FlowSummary {
            self.flow.clone().summary()
        }
    }

    #[test]
    fn a_zero_window_lasts_until_the_receiver_opens_it_and_probes_are_no_resends() {
        let mut path = Path::new(0, 40 * MS);
        let t = path.handshake(0);
        path.data(0, t, 80);
        path.data(1, t + 20 * MS, 1460);
        path.window[0] = 0;
        path.ack(0, t + 40 * MS);
        for probe in [200, 600, 1400] {
            path.send(1, t + probe * MS, 1, false, true, 0);
            path.send(1, t + probe * MS, 0, false, true, 0);
            path.ack(0, t + probe * MS + 20 * MS);
            path.seq[1] -= 1;
        }
        path.window[0] = 65535;
        path.ack(0, t + 3000 * MS);
        path.data(1, t + 3020 * MS, 1460);
        let summary = path.flow.summary();
        assert_eq!(summary.retransmissions, 0);
        assert_eq!(summary.zero_windows.count, 1);
        let window = summary.zero_windows.longest.unwrap();
        assert!(!window.by_server);
        assert_eq!(window.duration_ns, 2960 * MS);
        assert_eq!(window.probes, 3);
        assert!(window.reopened_packet > window.first_packet);
    }

    #[test]
    fn a_short_zero_window_is_not_reported() {
        let mut path = Path::new(0, 40 * MS);
        let t = path.handshake(0);
        path.window[0] = 0;
        path.ack(0, t);
        path.window[0] = 1000;
        path.ack(0, t + 50 * MS);
        assert_eq!(path.flow.summary().zero_windows.count, 0);
    }

    /// A Nagle server over a path: head, then the body held until the ACK of the head.
    fn nagle_server(c: u64, s: u64, client_ack_delay: u64) -> FlowSummary {
        let mut path = Path::new(c, s);
        let t = path.handshake(0);
        for i in 0..3 {
            let at = t + i * 300 * MS;
            path.data(0, at, 80);
            path.data(1, at + 20 * MS, 120);
            // The head reaches the client at +40 ms, the ACK the server at +60 ms + delay.
            path.ack(0, at + 40 * MS + client_ack_delay);
            path.data(1, at + 60 * MS + client_ack_delay + 10 * US, 13);
        }
        path.flow.summary()
    }

    #[test]
    fn a_hold_released_by_a_quick_ack_lasts_one_round_trip_wherever_it_is_seen() {
        for (c, s, _) in PLACES {
            let summary = nagle_server(c, s, 50 * US);
            assert_eq!(summary.server_round_trips.count, 3, "{c} {s}: {summary:?}");
            assert_eq!(summary.server_stalls.count, 0);
            let hold = &summary.server_round_trips.examples[0];
            assert_eq!(hold.kind, HoldKind::RoundTrip);
            assert!(hold.lost_ns.abs_diff(40 * MS) <= 100 * US, "{hold:?}");
            assert!(hold.peer_ack_delay_ns <= 100 * US, "{hold:?}");
        }
    }

    #[test]
    fn a_delayed_ack_over_a_path_is_told_net_of_the_round_trip() {
        for (c, s, _) in PLACES {
            let summary = nagle_server(c, s, 40 * MS);
            assert_eq!(summary.server_stalls.count, 3, "{c} {s}: {summary:?}");
            assert_eq!(summary.server_round_trips.count, 0);
            let stall = &summary.server_stalls.examples[0];
            assert!(stall.peer_ack_delay_ns.abs_diff(40 * MS) <= 100 * US, "{stall:?}");
            assert!(stall.lost_ns.abs_diff(80 * MS) <= 100 * US, "{stall:?}");
        }
    }

    #[test]
    fn an_application_that_writes_a_round_trip_later_is_no_hold() {
        // The body leaves 15 ms after the ACK reached the server: the application's pace.
        for (c, s, _) in PLACES {
            let mut path = Path::new(c, s);
            let t = path.handshake(0);
            path.data(0, t, 80);
            path.data(1, t + 20 * MS, 120);
            path.ack(0, t + 40 * MS);
            path.data(1, t + 75 * MS, 13);
            assert_eq!(path.flow.summary().stalls(), 0, "{c} {s}");
        }
    }

    #[test]
    fn on_one_host_a_quick_acks_hold_is_too_short_to_count() {
        let summary = nagle_server(20 * US, 20 * US, 10 * US);
        assert_eq!(summary.stalls(), 0, "{summary:?}");
    }

    #[test]
    fn ip_ids_count_the_packets_the_capture_missed_only_when_they_are_per_connection() {
        assert_eq!(unseen_between((0xab5b, 0xab5e)), 2, "the request lost twice before it");
        assert_eq!(unseen_between((0xab5b, 0xab5c)), 0, "the next packet");
        assert_eq!(unseen_between((0xffff, 0x0001)), 1, "across the wrap");
        assert_eq!(unseen_between((0, 0)), 0, "a stack that leaves it 0");
        assert_eq!(unseen_between((100, 5000)), 0, "a host-wide counter or a random one");
    }
}
