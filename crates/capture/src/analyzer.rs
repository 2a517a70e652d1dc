//! Runs every packet of a capture through flow tracking: a table of open conversations, each
//! with its Wireshark `tcp.stream` number and nodelay's flow while one is open (memory grows
//! with concurrent connections, not with the file), a compact table of the conversations
//! closed in the last minutes (their numbers, for the packets that trail them), finished
//! flows folded into totals, and the flows with stalls kept for the report, the worst first,
//! up to a bound.

use crate::analysis::{Budget, ExchangeTiming, Retransmissions, ZeroWindows};
use crate::decode::{TcpSegment, decode_tcp, link_type_supported};
use crate::flow::{Endpoint, Flow, FlowSummary, SenderStalls};
use crate::reader::{Packet, ReadStats};
use crate::stream::Stream;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};

/// How long a closed conversation's number is kept for packets that trail it: twice the
/// maximum segment lifetime (RFC 9293: 2 minutes), after which no segment of it can still
/// be in the network. Later packets on its 4-tuple without a new SYN (which Wireshark would
/// still count in it) get a new number.
const CLOSED_KEPT_NS: u64 = 4 * 60 * 1_000_000_000;
/// The closed table is swept when it has doubled since the last sweep, and not below this.
const SWEEP_AT_LEAST: usize = 4096;
/// Round trips of flows kept for the capture's percentiles.
const RTTS_KEPT: usize = 4096;

/// `--flow`: a port (either side of any flow), one endpoint (either side of a flow) or an
/// exact pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFilter(FlowMatch);

#[derive(Debug, Clone, PartialEq, Eq)]
enum FlowMatch {
    Port(u16),
    Endpoint(Endpoint),
    Pair(Endpoint, Endpoint),
}

/// What `--flow` accepts, for error messages.
const FLOW_FORMS: &str = "PORT, IP:PORT or IP:PORT-IP:PORT (IPv6 as [::1]:80)";

impl FlowFilter {
    /// Parses `PORT`, `IP:PORT` or `IP:PORT-IP:PORT` (IPv6 as `[::1]:80`); ports are 1-65535
    /// (port 0 never appears on a TCP flow, so a filter on it would match nothing).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return match text.parse::<u16>() {
                Ok(port) if port > 0 => Ok(FlowFilter(FlowMatch::Port(port))),
                _ => Err(format!("port {text} is out of range (1-65535)")),
            };
        }
        let endpoint = |part: &str| {
            let address =
                part.trim().parse::<SocketAddr>().map_err(|_| format!("'{text}' is not {FLOW_FORMS}"))?;
            if address.port() == 0 {
                return Err(format!("port 0 in '{}' is out of range (1-65535)", part.trim()));
            }
            Ok((address.ip(), address.port()))
        };
        match text.split_once('-') {
            Some((a, b)) => Ok(FlowFilter(FlowMatch::Pair(endpoint(a)?, endpoint(b)?))),
            None => Ok(FlowFilter(FlowMatch::Endpoint(endpoint(text)?))),
        }
    }

    fn matches(&self, a: Endpoint, b: Endpoint) -> bool {
        match self.0 {
            FlowMatch::Port(port) => a.1 == port || b.1 == port,
            FlowMatch::Endpoint(end) => end == a || end == b,
            FlowMatch::Pair(first, second) => (first, second) == (a, b) || (first, second) == (b, a),
        }
    }
}

/// Everything a capture showed.
#[derive(Debug, Clone, Default)]
pub struct CaptureSummary {
    /// What the reader saw besides packets.
    pub read: ReadStats,
    /// Packets that decoded as TCP.
    pub tcp_packets: u64,
    /// Packets that are not TCP (or could not be decoded).
    pub other_packets: u64,
    /// Link types nodelay cannot decode, with their packet counts.
    pub unsupported_link_types: BTreeMap<u16, u64>,
    /// Capture time of the earliest packet, in nanoseconds since the Unix epoch.
    pub first_ns: Option<u64>,
    /// Capture time of the latest packet, in nanoseconds since the Unix epoch.
    pub last_ns: Option<u64>,
    /// Flows followed: each began with a SYN or data, and passed the filter.
    pub flows_seen: u64,
    /// Of those, the flows with at least one stall.
    pub flows_with_stalls: u64,
    /// All stalls where clients held data.
    pub client_stalls: SenderStalls,
    /// All stalls where servers held data.
    pub server_stalls: SenderStalls,
    /// Flows with stalls, most time lost first.
    pub flows: Vec<FlowSummary>,
    /// Flows with stalls beyond the kept bound (counted in the totals).
    pub flows_not_kept: u64,
    /// Holds of one round trip where clients held data (servers ACKed at once).
    pub client_round_trips: SenderStalls,
    /// Holds of one round trip where servers held data (clients ACKed at once).
    pub server_round_trips: SenderStalls,
    /// Where all flows' exchanges spent their time.
    pub budget: Budget,
    /// Flows whose round trip is known (both sides of the capture point).
    pub flows_with_rtt: u64,
    /// Their round trips, for the first flows (at most 4096).
    pub rtts_ns: Vec<u64>,
    /// Flows by where the capture was taken: next to the client, next to the server, between.
    pub positions: [u64; 3],
    /// Flows whose round trip is a slow path (`SLOW_PATH_RTT_NS` or more).
    pub slow_path_flows: u64,
    /// The slowest of them: its stream and round trip.
    pub slowest_path: Option<(u64, crate::analysis::Legs)>,
    /// Exchanges whose first byte came late (`LATE_FIRST_BYTE_NS` beyond the round trip).
    pub late_first_bytes: u64,
    /// The slowest first byte of the capture, with its flow's stream.
    pub slowest_first_byte: Option<(u64, ExchangeTiming)>,
    /// Clients' waits after their handshake of `CLIENT_WAIT_NS` or more.
    pub client_waits: u64,
    /// The longest such wait, with its flow's stream.
    pub longest_client_wait: Option<(u64, ExchangeTiming)>,
    /// Retransmissions of all flows.
    pub losses: Retransmissions,
    /// The stream of the flow with the worst timeout series.
    pub worst_series_stream: Option<u64>,
    /// Zero windows of all flows.
    pub zero_windows: ZeroWindows,
    /// The stream of the flow with the longest zero window.
    pub longest_zero_window_stream: Option<u64>,
    /// Flows that lost time to what is not a Nagle hold (`FlowSummary::slow_ns`), most first.
    pub slow_flows: Vec<FlowSummary>,
    /// Such flows beyond the kept bound (counted in the totals).
    pub slow_flows_not_kept: u64,
}

/// A 4-tuple as the conversation tables key it, lower end first: each address in 128 bits
/// (IPv4 in the low 32, told apart by `v6`). Every packet hashes and compares one, and
/// `(IpAddr, u16)` pairs cost a third of the analysis in both (issue 48).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowKey {
    addresses: [u128; 2],
    ports: [u16; 2],
    v6: bool,
}

impl std::hash::Hash for FlowKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.addresses[0]);
        state.write_u128(self.addresses[1]);
        state.write_u64(u64::from(self.ports[0]) << 32 | u64::from(self.ports[1]) << 16 | u64::from(self.v6));
    }
}

/// An address as a number, in the order `IpAddr` sorts addresses of one family.
fn address_bits(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl FlowKey {
    /// The key of `segment`'s 4-tuple, and the segment's direction in it: 0 when its source
    /// is the lower end (the order `(IpAddr, u16)` sorts in), 1 otherwise.
    fn of(segment: &TcpSegment) -> (Self, usize) {
        let source = (address_bits(segment.source.0), segment.source.1);
        let destination = (address_bits(segment.destination.0), segment.destination.1);
        let v6 = segment.source.0.is_ipv6();
        let direction = usize::from(source > destination);
        let (low, high) = if direction == 0 { (source, destination) } else { (destination, source) };
        (FlowKey { addresses: [low.0, high.0], ports: [low.1, high.1], v6 }, direction)
    }
}

/// A 4-tuple whose connection has not closed: its Wireshark stream, and nodelay's flow while
/// one is open.
struct Conversation {
    stream: Stream,
    /// Boxed: many open conversations have no flow (bare ACKs, outside --flow), and a flow
    /// inline would make each of them 600 bytes instead of 50.
    flow: Option<Box<Flow>>,
    /// The directions that sent a FIN, one bit each.
    fins: u8,
    /// Both FINs or a RST: once its flow is done it moves to the closed table.
    closed: bool,
    last_ns: u64,
}

impl Conversation {
    fn new(stream: Stream, time_ns: u64) -> Self {
        Conversation { stream, flow: None, fins: 0, closed: false, last_ns: time_ns }
    }

    fn note_close(&mut self, direction: usize, segment: &TcpSegment) {
        self.fins |= u8::from(segment.fin) << direction;
        self.closed |= segment.rst || self.fins == 0b11;
    }

    /// Feeds `segment` to the conversation and its flow (opening one when `opens`); a SYN
    /// that starts a new conversation on the 4-tuple takes the next number from `fed`,
    /// which gets back the flow that ended.
    fn feed(
        &mut self,
        ends: [Endpoint; 2],
        direction: usize,
        packet: &Packet<'_>,
        segment: &TcpSegment,
        opens: bool,
        fed: &mut Fed<'_>,
    ) {
        let time_ns = packet.timestamp_ns;
        if self.stream.starts_new(direction, segment) {
            let next = Stream::new(*fed.next_stream);
            *fed.next_stream += 1;
            fed.reused = std::mem::replace(self, Conversation::new(next, time_ns)).flow;
            // Sets the direction's base for the new number.
            self.stream.starts_new(direction, segment);
        }
        self.note_close(direction, segment);
        self.last_ns = self.last_ns.max(time_ns);
        if self.flow.is_none() && opens {
            *fed.flows_seen += 1;
            self.flow = Some(Box::new(Flow::new(ends, time_ns, self.stream.index)));
        }
        if let Some(flow) = self.flow.as_mut() {
            flow.segment(packet.number, time_ns, segment);
            if flow.is_closed() {
                fed.finished = self.flow.take();
            }
        }
    }
}

/// A closed conversation, kept for the packets that trail it (the last ACK, a retransmitted
/// FIN): its number, and its sequence bases, which tell a new SYN on the 4-tuple.
struct Closed {
    stream: Stream,
    last_ns: u64,
}

/// What feeding a conversation needs from the analyzer, and the flows it ended.
struct Fed<'a> {
    reused: Option<Box<Flow>>,
    finished: Option<Box<Flow>>,
    next_stream: &'a mut u64,
    flows_seen: &'a mut u64,
}

/// What a packet on a 4-tuple with no open conversation is to the 4-tuple's closed one.
enum AfterClose {
    /// It trails it (the last ACK, a retransmitted FIN): counted there, nothing more to do.
    Trails,
    /// It goes on under the same number (data to open a flow on).
    Continues(Stream),
    /// A new number is due: a 4-tuple never seen (or closed long ago), or a new SYN on it.
    New,
}

fn after_close(
    closed: &mut FxHashMap<FlowKey, Closed>,
    key: FlowKey,
    direction: usize,
    segment: &TcpSegment,
    opens: bool,
    now_ns: u64,
) -> AfterClose {
    let Some(conversation) = closed.get_mut(&key) else { return AfterClose::New };
    if conversation.stream.starts_new(direction, segment) {
        closed.remove(&key);
        return AfterClose::New;
    }
    conversation.last_ns = conversation.last_ns.max(now_ns);
    if !opens {
        return AfterClose::Trails;
    }
    let stream = conversation.stream;
    closed.remove(&key);
    AfterClose::Continues(stream)
}

/// Follows every TCP flow of a capture, packet by packet, and sums up what it saw; fed in file
/// order, then [`finish`](Analyzer::finish)ed.
pub struct Analyzer {
    /// Open conversations: every packet looks here first, so it stays small (live
    /// connections) and in cache.
    open: FxHashMap<FlowKey, Conversation>,
    /// Closed ones, until [`CLOSED_KEPT_NS`] after their last packet.
    closed: FxHashMap<FlowKey, Closed>,
    next_stream: u64,
    /// The latest capture time of a TCP segment, for expiry.
    now_ns: u64,
    /// The earliest and latest capture times of any packet (`u64::MAX` and 0 before one).
    first_ns: u64,
    last_ns: u64,
    sweep_at: usize,
    filter: Option<FlowFilter>,
    max_kept: usize,
    summary: CaptureSummary,
}

impl Analyzer {
    /// `max_kept`: how many stalling flows to keep in detail.
    pub fn new(filter: Option<FlowFilter>, max_kept: usize) -> Self {
        Analyzer {
            open: FxHashMap::default(),
            closed: FxHashMap::default(),
            next_stream: 0,
            now_ns: 0,
            first_ns: u64::MAX,
            last_ns: 0,
            sweep_at: SWEEP_AT_LEAST,
            filter,
            max_kept: max_kept.max(1),
            summary: CaptureSummary::default(),
        }
    }

    /// Takes the next packet of the capture, in file order.
    pub fn packet(&mut self, packet: &Packet<'_>) {
        self.first_ns = self.first_ns.min(packet.timestamp_ns);
        self.last_ns = self.last_ns.max(packet.timestamp_ns);
        let summary = &mut self.summary;
        let Some(segment) = decode_tcp(packet.link_type, packet.data) else {
            summary.other_packets += 1;
            if !link_type_supported(packet.link_type) {
                *summary.unsupported_link_types.entry(packet.link_type).or_default() += 1;
            }
            return;
        };
        summary.tcp_packets += 1;
        self.now_ns = self.now_ns.max(packet.timestamp_ns);
        let (key, direction) = FlowKey::of(&segment);
        let ends = if direction == 0 {
            [segment.source, segment.destination]
        } else {
            [segment.destination, segment.source]
        };
        // A segment that would open a flow: trailing ACKs of a closed flow, or traffic
        // outside the filter, open nothing.
        let opens = (segment.syn || segment.payload_len > 0)
            && self.filter.as_ref().is_none_or(|f| f.matches(ends[0], ends[1]));
        // One lookup for a packet of an open conversation, nearly every packet.
        let conversation = match self.open.entry(key) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let stream = match after_close(&mut self.closed, key, direction, &segment, opens, self.now_ns)
                {
                    AfterClose::Trails => return,
                    AfterClose::Continues(stream) => stream,
                    AfterClose::New => {
                        self.next_stream += 1;
                        Stream::new(self.next_stream - 1)
                    }
                };
                entry.insert(Conversation::new(stream, packet.timestamp_ns))
            }
        };
        let mut fed = Fed {
            reused: None,
            finished: None,
            next_stream: &mut self.next_stream,
            flows_seen: &mut self.summary.flows_seen,
        };
        conversation.feed(ends, direction, packet, &segment, opens, &mut fed);
        let Fed { reused, finished, .. } = fed;
        if conversation.closed && conversation.flow.is_none() {
            let closed = Closed { stream: conversation.stream, last_ns: conversation.last_ns };
            self.open.remove(&key);
            self.closed.insert(key, closed);
            self.sweep();
        }
        // The flow a new connection on the same 4-tuple cut off, and the flow this closed.
        if let Some(flow) = reused {
            self.finish_flow(*flow);
        }
        if let Some(flow) = finished {
            self.finish_flow(*flow);
        }
    }

    /// Forgets the conversations closed long ago, once the closed table has doubled since
    /// the last sweep: the cost per packet stays constant whatever the table holds.
    fn sweep(&mut self) {
        if self.closed.len() < self.sweep_at {
            return;
        }
        let now = self.now_ns;
        self.closed.retain(|_, closed| now.saturating_sub(closed.last_ns) <= CLOSED_KEPT_NS);
        self.sweep_at = (self.closed.len() * 2).max(SWEEP_AT_LEAST);
    }

    fn finish_flow(&mut self, flow: Flow) {
        let flow = flow.summary();
        self.note_path(&flow);
        if flow.slow_ns() > 0 {
            self.summary.slow_flows.push(flow.clone());
            if self.summary.slow_flows.len() >= 2 * self.max_kept {
                self.trim_kept();
            }
        }
        if flow.stalls() == 0 {
            return;
        }
        let summary = &mut self.summary;
        summary.flows_with_stalls += 1;
        summary.client_stalls.merge(&flow.client_stalls);
        summary.server_stalls.merge(&flow.server_stalls);
        summary.client_round_trips.merge(&flow.client_round_trips);
        summary.server_round_trips.merge(&flow.server_round_trips);
        summary.flows.push(flow);
        if summary.flows.len() >= 2 * self.max_kept {
            self.trim_kept();
        }
    }

    /// Adds a finished flow's round trip, budget, losses and windows to the capture's.
    fn note_path(&mut self, flow: &FlowSummary) {
        let summary = &mut self.summary;
        summary.budget.merge(&flow.budget);
        if let Some(rtt) = flow.legs.rtt_ns() {
            summary.flows_with_rtt += 1;
            if summary.rtts_ns.len() < RTTS_KEPT {
                summary.rtts_ns.push(rtt);
            }
            if flow.slow_path() {
                summary.slow_path_flows += 1;
                if summary.slowest_path.is_none_or(|(_, legs)| legs.rtt_ns() < Some(rtt)) {
                    summary.slowest_path = Some((flow.stream, flow.legs));
                }
            }
        }
        if let Some(position) = flow.legs.position() {
            summary.positions[position as usize] += 1;
        }
        summary.late_first_bytes += flow.late_first_bytes;
        if let Some(timing) = flow.slowest_first_byte
            && summary.slowest_first_byte.is_none_or(|(_, slowest)| timing.server_ns > slowest.server_ns)
        {
            summary.slowest_first_byte = Some((flow.stream, timing));
        }
        summary.client_waits += flow.client_waits;
        if let Some(timing) = flow.longest_client_wait
            && summary.longest_client_wait.is_none_or(|(_, w)| timing.client_wait_ns > w.client_wait_ns)
        {
            summary.longest_client_wait = Some((flow.stream, timing));
        }
        let worst = |losses: &Retransmissions| losses.worst.map_or(0, |series| series.lost_ns);
        if worst(&flow.losses) > worst(&summary.losses) {
            summary.worst_series_stream = Some(flow.stream);
        }
        summary.losses.merge(&flow.losses);
        let longest = |windows: &ZeroWindows| windows.longest.map_or(0, |window| window.duration_ns);
        if longest(&flow.zero_windows) > longest(&summary.zero_windows) {
            summary.longest_zero_window_stream = Some(flow.stream);
        }
        summary.zero_windows.merge(&flow.zero_windows);
    }

    fn trim_kept(&mut self) {
        let flows = &mut self.summary.flows;
        flows.sort_by(|a, b| b.lost_ns().cmp(&a.lost_ns()).then(a.first_ns.cmp(&b.first_ns)));
        if flows.len() > self.max_kept {
            self.summary.flows_not_kept += (flows.len() - self.max_kept) as u64;
            flows.truncate(self.max_kept);
        }
        let flows = &mut self.summary.slow_flows;
        flows.sort_by(|a, b| b.slow_ns().cmp(&a.slow_ns()).then(a.first_ns.cmp(&b.first_ns)));
        if flows.len() > self.max_kept {
            self.summary.slow_flows_not_kept += (flows.len() - self.max_kept) as u64;
            flows.truncate(self.max_kept);
        }
    }

    /// Ends every live flow and returns the totals.
    pub fn finish(mut self, read: ReadStats) -> CaptureSummary {
        let mut live: Vec<Box<Flow>> = self.open.drain().filter_map(|(_, c)| c.flow).collect();
        live.sort_by_key(|flow| flow.summary_first_ns());
        for flow in live {
            self.finish_flow(*flow);
        }
        self.trim_kept();
        if self.first_ns <= self.last_ns {
            (self.summary.first_ns, self.summary.last_ns) = (Some(self.first_ns), Some(self.last_ns));
        }
        self.summary.read = read;
        self.summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::LINKTYPE_RAW;
    use etherparse::PacketBuilder;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    const SYN: u8 = 1;
    const ACK: u8 = 2;
    const FIN: u8 = 4;
    const RST: u8 = 8;
    const SECOND: u64 = 1_000_000_000;

    /// Feeds raw IPv4 TCP packets to an analyzer, numbering them.
    struct Feed {
        analyzer: Analyzer,
        number: u64,
    }

    impl Feed {
        fn new(filter: Option<&str>) -> Self {
            Feed { analyzer: Analyzer::new(filter.map(|f| FlowFilter::parse(f).unwrap()), 100), number: 0 }
        }

        /// From host `a` (10.0.0.a) port `pa` to 10.0.0.b port `pb`.
        fn send(
            &mut self,
            at_ns: u64,
            (a, pa): (u8, u16),
            (b, pb): (u8, u16),
            seq: u32,
            flags: u8,
            payload: &[u8],
        ) {
            let mut builder = PacketBuilder::ipv4([10, 0, 0, a], [10, 0, 0, b], 64).tcp(pa, pb, seq, 65535);
            for (flag, set) in [(SYN, 0), (FIN, 1), (RST, 2)] {
                if flags & flag != 0 {
                    builder = match set {
                        0 => builder.syn(),
                        1 => builder.fin(),
                        _ => builder.rst(),
                    };
                }
            }
            if flags & ACK != 0 {
                builder = builder.ack(1);
            }
            let mut frame = Vec::new();
            builder.write(&mut frame, payload).unwrap();
            self.number += 1;
            let packet = Packet {
                number: self.number,
                offset: 0,
                timestamp_ns: at_ns,
                link_type: LINKTYPE_RAW,
                data: &frame,
            };
            self.analyzer.packet(&packet);
        }

        fn conversations(&self) -> usize {
            self.analyzer.open.len() + self.analyzer.closed.len()
        }

        /// The stream index of each conversation still in the table, by 4-tuple.
        fn stream_of(&self, a: (u8, u16), b: (u8, u16)) -> Option<u64> {
            let end = |(host, port): (u8, u16)| (IpAddr::V4(Ipv4Addr::new(10, 0, 0, host)), port);
            let segment = TcpSegment {
                source: end(a),
                destination: end(b),
                seq: 0,
                ack: 0,
                syn: false,
                ack_flag: false,
                fin: false,
                rst: false,
                payload_len: 0,
                mss_option: None,
                timestamps: false,
                window: 0,
                ip_id: None,
            };
            let (key, _) = FlowKey::of(&segment);
            let open = self.analyzer.open.get(&key).map(|c| c.stream.index);
            open.or_else(|| self.analyzer.closed.get(&key).map(|c| c.stream.index))
        }
    }

    const C: (u8, u16) = (1, 40000);
    const S: (u8, u16) = (2, 8080);

    #[test]
    fn streams_are_numbered_by_first_appearance_of_any_tcp_packet() {
        let mut feed = Feed::new(None);
        feed.send(0, (9, 5555), (2, 22), 100, ACK, b""); // a bare ACK opens no flow, but counts
        feed.send(1, C, S, 1000, SYN, b"");
        feed.send(2, (3, 40001), S, 1, ACK, b"x");
        feed.send(3, S, C, 5000, SYN | ACK, b"");
        assert_eq!(feed.stream_of((9, 5555), (2, 22)), Some(0));
        assert_eq!(feed.stream_of(C, S), Some(1));
        assert_eq!(feed.stream_of((3, 40001), S), Some(2));
        // --flow keeps the numbers of the whole file.
        let mut filtered = Feed::new(Some("40001"));
        filtered.send(0, (9, 5555), (2, 22), 100, ACK, b"");
        filtered.send(1, C, S, 1000, SYN, b"");
        filtered.send(2, (3, 40001), S, 1, ACK, b"x");
        assert_eq!(filtered.stream_of((3, 40001), S), Some(2));
        assert_eq!(filtered.analyzer.summary.flows_seen, 1);
    }

    #[test]
    fn a_new_syn_on_a_used_4_tuple_is_a_new_stream_and_ends_the_old_flow() {
        let mut feed = Feed::new(None);
        feed.send(0, C, S, 1000, SYN, b"");
        feed.send(1, S, C, 5000, SYN | ACK, b"");
        feed.send(2, C, S, 1001, ACK, b"hello");
        feed.send(3, C, S, 1006, FIN | ACK, b"");
        feed.send(4, S, C, 5001, FIN | ACK, b"");
        feed.send(5, C, S, 1007, ACK, b""); // trails the closed flow: same stream, no flow
        assert_eq!(feed.stream_of(C, S), Some(0));
        assert_eq!(feed.analyzer.summary.flows_seen, 1);
        assert!(feed.analyzer.open.is_empty(), "a closed conversation leaves the open table");
        feed.send(5, C, S, 1007, ACK, b"late"); // data without a SYN: a flow, same stream
        assert_eq!(feed.stream_of(C, S), Some(0));
        assert_eq!(feed.analyzer.summary.flows_seen, 2);
        feed.send(6, C, S, 9000, SYN, b"");
        feed.send(7, C, S, 9000, SYN, b""); // retransmitted
        assert_eq!(feed.stream_of(C, S), Some(1));
        // Reused while the flow was open (its end was not captured): the flow ends.
        feed.send(8, C, S, 12345, SYN, b"");
        assert_eq!(feed.stream_of(C, S), Some(2));
        assert_eq!(feed.analyzer.summary.flows_seen, 4);
    }

    #[test]
    fn closed_conversations_are_forgotten_after_twice_the_segment_lifetime() {
        let mut feed = Feed::new(None);
        let mut at = 0;
        for port in 1..=SWEEP_AT_LEAST as u16 + 1 {
            feed.send(at, (1, port), S, 1, ACK, b"x");
            feed.send(at, S, (1, port), 1, RST, b"");
            at += SECOND / 10;
        }
        // The sweep kept what closed within the last 4 minutes of capture time.
        let kept = feed.conversations();
        assert!(kept < SWEEP_AT_LEAST && kept as u64 >= CLOSED_KEPT_NS / (SECOND / 10), "{kept}");
        // Open conversations are never forgotten, however old.
        let mut feed = Feed::new(None);
        for port in 1..=SWEEP_AT_LEAST as u16 + 1 {
            feed.send(u64::from(port) * 10 * SECOND, (1, port), S, 1, ACK, b"");
        }
        assert_eq!(feed.conversations(), SWEEP_AT_LEAST + 1);
        assert_eq!(feed.stream_of((1, 1), S), Some(0));
    }

    const CLIENT: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000);
    const SERVER: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 8080);

    fn matches(filter: &str) -> bool {
        FlowFilter::parse(filter).unwrap().matches(CLIENT, SERVER)
    }

    #[test]
    fn a_bare_port_matches_either_side() {
        assert!(matches("8080"));
        assert!(matches("40000"));
        assert!(matches(" 8080 "));
        assert!(!matches("80"));
    }

    #[test]
    fn endpoints_and_pairs_still_match() {
        assert!(matches("10.0.0.2:8080"));
        assert!(matches("10.0.0.1:40000"));
        assert!(!matches("10.0.0.3:8080"));
        assert!(matches("10.0.0.1:40000-10.0.0.2:8080"));
        assert!(matches("10.0.0.2:8080-10.0.0.1:40000"));
        assert!(!matches("10.0.0.2:8080-10.0.0.3:40000"));
        let v6 = FlowFilter::parse("[fd00::2]:8080").unwrap();
        assert!(v6.matches((IpAddr::V6(Ipv6Addr::LOCALHOST), 1), ("fd00::2".parse().unwrap(), 8080)));
    }

    #[test]
    fn bad_filters_say_why_in_one_line() {
        let error = |text: &str| FlowFilter::parse(text).unwrap_err();
        assert_eq!(error("0"), "port 0 is out of range (1-65535)");
        assert_eq!(error("65536"), "port 65536 is out of range (1-65535)");
        assert_eq!(
            error("99999999999999999999999"),
            "port 99999999999999999999999 is out of range (1-65535)"
        );
        assert_eq!(error("10.0.0.1:0"), "port 0 in '10.0.0.1:0' is out of range (1-65535)");
        assert_eq!(error("nonsense"), format!("'nonsense' is not {FLOW_FORMS}"));
        assert_eq!(error(""), format!("'' is not {FLOW_FORMS}"));
        assert_eq!(error("80-"), format!("'80-' is not {FLOW_FORMS}"));
        assert_eq!(error("10.0.0.1:80-x"), format!("'10.0.0.1:80-x' is not {FLOW_FORMS}"));
        for text in ["0", "65536", "nonsense", "", "80-", "1.2.3.4:5-"] {
            assert!(!error(text).contains('\n'), "{text:?}");
        }
    }
}
