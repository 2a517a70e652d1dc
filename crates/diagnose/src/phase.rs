//! Measured phases (the baseline and each experiment) and the figures the rules read.

use nodelay_engine::{ErrorKind, ErrorRecord, ResponseRecord};
use nodelay_tcp::TcpInfo;
use nodelay_tcp::path::{INITIAL_WINDOW_SEGMENTS, RTO_MIN_MS, round_trip_pause_share};
use nodelay_tcp::quantile::median;
use nodelay_tcp::thresholds::SYMPTOM_FRACTION;
use nodelay_tcp::time::ms;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::SocketAddr;

pub use nodelay_tcp::thresholds::{LATE_FIRST_BYTE_MS, STALL_GAP_MS};
/// An HTTP/2 request that waited this long before its HEADERS left counts as queued: far above
/// the microseconds a loop takes to send what is due.
pub const QUEUED_MS: f64 = 1.0;
/// An MSS to assume before the connection has told its own (IPv4 over Ethernet).
const DEFAULT_MSS_BYTES: u64 = 1460;
/// A phase where more than this share of the attempts failed decides nothing: no verdict
/// on such a baseline, no proof from such an experiment. The rules call a symptom removed
/// when at most 10 % of responses still show it (`REMOVED_FRACTION`); failed requests are
/// responses nobody could time, so once they are more than that, they alone could hide
/// the symptom or fake its removal. Each failure also closes the connection, so the next
/// request runs on a fresh one, unlike what a keep-alive client sees.
pub const MAX_FAILED_SHARE: f64 = 0.10;

/// One change to the client's behaviour, made to separate causes (docs/field-notes.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// The client sets TCP_QUICKACK after every read: it never delays its ACKs.
    QuickAck,
    /// A new connection for every request: no connection reaches delayed-ACK mode.
    NewConnectionPerRequest,
    /// Request head and body in two writes with Nagle on, as many clients do.
    SplitRequestNagle,
    /// The same two writes with TCP_NODELAY on the client.
    SplitRequestNoDelay,
    /// The whole request in one write.
    SingleWrite,
    /// Connections opened one after another, a new one per request: no two handshakes wait
    /// in the server's accept queue together.
    OneConnectionAtATime,
    /// The same requests on one keep-alive connection, each after an idle gap longer than
    /// the connection's retransmission timeout: a sender that restarts slow start after idle
    /// sends a large response in more round trips.
    AfterIdle,
    /// HTTP/2: the same requests with a 16 MiB flow-control window for each stream and the
    /// connection: nothing waits for a WINDOW_UPDATE.
    LargerWindow,
    /// HTTP/2: the same concurrency as one stream on each of that many connections: nothing
    /// queues behind a connection's stream limit.
    OneStreamPerConnection,
}

impl Experiment {
    /// The experiment in a few words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Experiment::QuickAck => "client TCP_QUICKACK after every read",
            Experiment::NewConnectionPerRequest => "new connection per request",
            Experiment::SplitRequestNagle => "request head and body in two writes, client Nagle on",
            Experiment::SplitRequestNoDelay => "request in two writes, client TCP_NODELAY",
            Experiment::SingleWrite => "request in one write",
            Experiment::OneConnectionAtATime => "one connection at a time, a new one per request",
            Experiment::AfterIdle => "one connection, each request after an idle gap longer than its RTO",
            Experiment::LargerWindow => "HTTP/2 windows of 16 MiB (stream and connection)",
            Experiment::OneStreamPerConnection => "one stream per connection, as many connections",
        }
    }
}

/// What the request looks like, which decides the experiments worth running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    /// The request carries a body.
    pub has_body: bool,
    /// The baseline itself writes the request in pieces (user's `--write-split`).
    pub baseline_split: bool,
    /// The baseline client sets TCP_NODELAY.
    pub baseline_nodelay: bool,
    /// HTTP/2: the streams each connection carries at once; `None` over HTTP/1.1 (and the
    /// experiments that rewrite HTTP/1.1 requests or connections are not run).
    pub http2_streams: Option<u32>,
}

/// The records of one measured phase.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// `None` for the baseline.
    pub experiment: Option<Experiment>,
    /// Connections the phase kept open at once (`doctor -c`); 0 is read as 1.
    pub connections: u32,
    /// The responses it timed, in the order they completed.
    pub responses: Vec<ResponseRecord>,
    /// Failed attempts, in the order they happened (a phase is a few dozen requests).
    pub errors: Vec<ErrorRecord>,
    /// Connections it closed (one connection record each): the run's own connects, for the
    /// server view.
    pub connections_opened: u64,
    /// The client's TCP_INFO on its busiest connection, taken before it closed.
    pub tcp_info: Option<TcpInfo>,
    /// The server's `Server` header, when it sends one: names its stack for the fixes.
    pub server_header: Option<String>,
    /// What TLS settled on (https only).
    pub tls: Option<nodelay_engine::TlsSummary>,
    /// HTTP/2: what the server's SETTINGS said, on the first connection that got them.
    pub http2_peer: Option<nodelay_engine::PeerSettings>,
    /// HTTP/2: the streams each connection carried at once; None over HTTP/1.1.
    pub http2_streams: Option<u32>,
    /// HTTP/2: pauses in reading that ended with a lost segment's retransmission, over the
    /// phase's connections...
    pub http2_loss_holes: u64,
    /// ...and the streams they held, summed.
    pub http2_streams_held_by_loss: u64,
    /// How long each connect the phase ended before any answer to had waited, in ms.
    pub connects_unanswered_ms: Vec<f64>,
}

/// One upstream of the target, diagnosed on its own address.
#[derive(Debug, Clone)]
pub struct HopDiagnosis {
    /// The upstream's address.
    pub address: SocketAddr,
    /// The process behind it, when the server view read it: `python3 (PID 4242)`.
    pub process: Option<String>,
    /// The figures of its own baseline phase.
    pub baseline: PhaseSummary,
    /// Its own findings.
    pub findings: Vec<crate::finding::Finding>,
}

/// Everything the doctor measured about one target: the phases, the probes and the server's
/// counters.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    /// The request's shape; `None` when unknown, and the planner and the rules that need it
    /// then say nothing.
    pub request: Option<RequestShape>,
    /// The baseline phase: the client as configured.
    pub baseline: Phase,
    /// The experiments run so far, in the order they ran.
    pub experiments: Vec<Phase>,
    /// The fix tried on the server itself (`doctor --try-fix`), once a stall was proven.
    pub fix_trial: Option<FixTrial>,
    /// The server's own counters over the baseline, when it runs on this machine.
    pub server_view: Option<nodelay_host::ServerView>,
    /// What the server did after answering an HTTP/1.0 request without keep-alive.
    pub hold_probe: Option<nodelay_engine::HoldProbe>,
    /// How the server answered a head with `Expect: 100-continue` (requests with a body).
    pub expect_probe: Option<nodelay_engine::ExpectProbe>,
    /// How long the server kept an idle keep-alive connection (`--idle-probe`; the doctor
    /// probes last, after the hops).
    pub idle_probe: Option<nodelay_engine::IdleProbe>,
    /// The diagnoses of the hops behind the server (its upstreams), when they were followed:
    /// one that explains a slow front replaces what the front could only describe.
    pub hops: Vec<HopDiagnosis>,
    /// The port the target listens on, which the fixes name in place of `:PORT`.
    pub target_port: Option<u16>,
    /// A command that fetches one response as the run sent it (curl), which a finding of
    /// error pages shows.
    pub error_page_command: Option<String>,
    /// The run was stopped (Ctrl-C) before the planner ran out of experiments: one that did
    /// not run was cut short, not left out for want of budget.
    pub interrupted: bool,
    /// The shared libraries the server's process maps (`libevent-2.1.so.7`): they name a C
    /// server's stack for the fixes. Empty when unknown.
    pub linked_libraries: Vec<String>,
}

/// TCP_NODELAY set on the server's own sockets from outside, and the baseline measured again
/// on a fresh keep-alive connection: the strongest proof, on the user's own server.
#[derive(Debug, Clone)]
pub struct FixTrial {
    /// What was changed, for the proof: "TCP_NODELAY set on PID 4242 (python3)".
    pub applied: String,
    /// The baseline measured again after the change.
    pub phase: Phase,
}

impl Observations {
    /// The experiment's phase when it can serve as proof: run, and not too many failures.
    pub fn experiment(&self, experiment: Experiment) -> Option<&Phase> {
        self.experiments.iter().find(|p| p.experiment == Some(experiment) && p.is_reliable())
    }

    /// Whether the experiment was run (or skipped), whatever it measured.
    pub fn has_run(&self, experiment: Experiment) -> bool {
        self.experiments.iter().any(|p| p.experiment == Some(experiment))
    }
}

/// The figures of a phase that the rules and reports use (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseSummary {
    /// Responses timed.
    pub responses: usize,
    /// Responses the figures below are taken over: all but the first on each connection
    /// when connections are reused (a fresh connection ACKs quickly and escapes stalls); over
    /// HTTP/2, all but each connection's first round of streams (when any came after it).
    pub steady_responses: usize,
    /// Median total latency.
    pub total_p50_ms: f64,
    /// 90th percentile of total latency.
    pub total_p90_ms: f64,
    /// 99th percentile of total latency.
    pub total_p99_ms: f64,
    /// Median time to first byte.
    pub first_byte_p50_ms: f64,
    /// 10th percentile of time to first byte.
    pub first_byte_p10_ms: f64,
    /// 90th percentile of time to first byte.
    pub first_byte_p90_ms: f64,
    /// Median of each response's longest pause between two reads.
    pub read_gap_p50_ms: f64,
    /// Mean `read()` calls per response.
    pub read_chunks_mean: f64,
    /// Median response size, head and body, in bytes.
    pub response_bytes_p50: u64,
    /// The server's segment size as the client's socket saw it (TCP_INFO `rcv_mss`), in
    /// bytes; 1460 before the connection told it.
    pub mss_bytes: u64,
    /// The path's round trip: the client socket's TCP_INFO `min_rtt` (the kernel keeps
    /// delayed ACKs out of it); `None` before the connection took a sample.
    pub path_rtt_ms: Option<f64>,
    /// Steady responses with a mid-response pause of at least 25 ms beyond the path's round
    /// trip (on loopback, of at least 25 ms).
    pub stalled: usize,
    /// Steady responses, on a path (MIN_PATH_RTT_MS or more), that paused about one round trip
    /// mid-response although they fit the initial window: bytes held until an ACK came back.
    pub round_trip_held: usize,
    /// Median of those pauses.
    pub round_trip_hold_p50_ms: Option<f64>,
    /// Steady keep-alive responses of more than a segment, on a path (MIN_PATH_RTT_MS or more), that
    /// ended one round trip after their first byte (within `tail::round_trip_slack_ms`).
    pub tail_held: usize,
    /// Median time from first byte to last over those.
    pub tail_held_body_p50_ms: Option<f64>,
    /// Of those, the ones whose last read was a sub-segment tail alone, after a pause of a
    /// quarter round trip or more: the rest came faster than the path's round trip.
    pub tail_alone: usize,
    /// Median pause before that lone tail.
    pub tail_pause_p50_ms: Option<f64>,
    /// Median bytes of that lone tail.
    pub tail_bytes_p50: Option<u64>,
    /// 10th percentile of the stalled responses' pauses.
    pub stalled_gap_p10_ms: Option<f64>,
    /// Median of the stalled responses' pauses.
    pub stalled_gap_p50_ms: Option<f64>,
    /// 90th percentile of the stalled responses' pauses.
    pub stalled_gap_p90_ms: Option<f64>,
    /// Median bytes that arrived before the pause, over stalled responses.
    pub bytes_before_stall: Option<u64>,
    /// Steady responses that paused 25 ms or more in all after their first byte, beyond what
    /// the path's transfer rounds explain, in pauses of 1 ms or more none of which was a stall:
    /// a body sent slowly in pieces.
    pub slow_body: usize,
    /// Median over steady responses of the pauses after the first byte, added up, less the
    /// path's transfer rounds.
    pub paused_p50_ms: f64,
    /// Median number of pauses of 1 ms or more per steady response.
    pub pauses_p50: u32,
    /// Median time from the first byte to the last, less the path's transfer rounds.
    pub body_p50_ms: f64,
    /// Steady responses whose first byte came 25 ms or more after the request, beyond the
    /// path's round trip.
    pub late_first_byte: usize,
    /// Steady responses that waited a retransmission timeout (200 ms or more beyond the
    /// round trip, on a connection that resent as many segments): set apart from the stalls.
    pub retransmission_waits: usize,
    /// Median of those waits beyond the round trip.
    pub retransmission_wait_p50_ms: Option<f64>,
    /// Median TCP handshake, over responses that opened their connection.
    pub connect_p50_ms: Option<f64>,
    /// 90th percentile of the TCP handshake, over responses that opened their connection.
    pub connect_p90_ms: Option<f64>,
    /// Connections opened: responses on a fresh connection, and failed connects.
    pub opens: u64,
    /// Opens that waited for a SYN retransmission (the connect, or the first byte of an
    /// otherwise fast server, 1 s, 3 s or 7 s late; or a connect that timed out): the
    /// listen queue overflowed, or a SYN was lost.
    pub slow_opens: u64,
    /// The retransmission most of them waited for, in seconds (1, 3 or 7).
    pub slow_open_retry_s: Option<u32>,
    /// The longest of them, connect start to first byte.
    pub slowest_open_ms: Option<f64>,
    /// Opens whose connect or first byte (on an otherwise fast server) came 0.9 s or more
    /// late, at a SYN retransmission time or not. Where the kernel counted listen-queue
    /// overflows, these waited on a full accept queue even when the handshake's last ACK was
    /// dropped instead of the SYN, so that the wait ends at the client's data retransmission
    /// or the server's SYN-ACK one (2.0 s, 3.7 s seen), off the SYN's times.
    pub late_opens: u64,
    /// Connects the phase ended before any answer came to, waiting past 20 ms and ten times
    /// the completed connects' median (`crate::unanswered_connects`): on loopback, SYNs a full
    /// listen queue dropped, whose 1 s retry a phase shorter than that never sees.
    pub unanswered_opens: u64,
    /// TLS handshakes after the TCP one (https only): a fresh connection's other cost.
    pub tls_handshake_p50_ms: Option<f64>,
    /// The very first request of the phase (on a fresh connection).
    pub first_request_total_ms: Option<f64>,
    /// Its longest pause between two reads.
    pub first_request_read_gap_ms: Option<f64>,
    /// Some response came on a connection that had already carried one.
    pub reuses_connections: bool,
    /// Failed attempts.
    pub errors: u64,
    /// Attempts that ended, with a response or an error (requests still in flight when the
    /// phase ended are neither).
    pub attempts: u64,
    /// Failed attempts per error kind, only the kinds seen.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The most common kind of failure, when there were failures.
    pub most_common_error: Option<ErrorSummary>,
    /// At most `MAX_FAILED_SHARE` of the attempts failed: the phase can carry a verdict or a
    /// proof. A phase saved before it was written was reliable (older versions refused
    /// unreliable ones).
    #[serde(default = "reliable_when_unsaid")]
    pub reliable: bool,
    /// HTTP/2: steady responses whose DATA waited on a used-up flow-control window (0 over
    /// HTTP/1.1)...
    pub window_blocked: usize,
    /// ...and the median over steady responses of the time each waited.
    pub window_blocked_p50_ms: f64,
    /// HTTP/2: steady responses that queued `QUEUED_MS` or more before their HEADERS left...
    pub queued: usize,
    /// ...and the median over steady responses of that queueing.
    pub queued_p50_ms: f64,
    /// HTTP/2: the server's SETTINGS_MAX_CONCURRENT_STREAMS; null when it stated none (or
    /// over HTTP/1.1).
    pub peer_max_concurrent_streams: Option<u32>,
    /// HTTP/2: steady responses held, with other streams of their connection, behind a lost
    /// segment (one TCP byte stream carries them all)...
    pub loss_held: usize,
    /// ...and the median over those responses of the time each was held.
    pub loss_held_p50_ms: f64,
    /// HTTP/2: pauses in reading that ended with a lost segment's retransmission...
    pub loss_holes: u64,
    /// ...and the streams they held, summed.
    pub streams_held_by_loss: u64,
    /// gRPC: the phase's responses per grpc-status code ("0" is OK); empty otherwise.
    pub grpc_status_counts: BTreeMap<String, u64>,
}

/// `reliable` for a phase saved without it.
fn reliable_when_unsaid() -> bool {
    true
}

/// The most common kind of failure in a phase, with its first message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorSummary {
    /// The error kind's stable name.
    pub kind: Cow<'static, str>,
    /// Failed attempts of that kind.
    pub count: u64,
    /// The first message of that kind.
    pub example: String,
}

/// Connections a phase opened, and those that waited for a SYN retransmission.
#[derive(Debug, Default)]
struct Opens {
    opened: u64,
    slow: u64,
    late: u64,
    retry_s: Option<u32>,
    slowest_ms: Option<f64>,
}

/// A first byte a second late counts as a slow open only on a server whose median first
/// byte is below this.
const TYPICAL_FIRST_BYTE_LIMIT_MS: f64 = 100.0;

/// An open this late waited on something a second long: a retransmission.
const LATE_OPEN_MS: f64 = SYN_RETRY_WINDOWS_MS[0].0;

/// Windows around the SYN retransmission times (1 s initial RTO, then 3 s, 7 s), in ms,
/// with the retry's time in seconds.
pub const SYN_RETRY_WINDOWS_MS: [(f64, f64, u32); 3] =
    [(900.0, 1400.0, 1), (2900.0, 3500.0, 3), (6900.0, 7600.0, 7)];

/// The SYN retransmission a wait of `ms` matches, in seconds.
pub(crate) fn syn_retry_cluster(ms: f64) -> Option<u32> {
    SYN_RETRY_WINDOWS_MS
        .into_iter()
        .find(|(from, to, _)| (*from..*to).contains(&ms))
        .map(|(_, _, seconds)| seconds)
}

/// The first byte as the server's: over HTTP/2, less the time the request queued before its
/// HEADERS left (behind the stream limit), which the server never saw, and the time its
/// answer was held behind another stream's lost segment, which the server did not spend.
fn server_first_byte_ms(r: &ResponseRecord) -> f64 {
    ms(r.first_byte) - r.http2.map_or(0.0, |stream| ms(stream.queued) + ms(stream.loss_held_before_headers))
}

pub use nodelay_tcp::quantile::percentile_ms as percentile;

impl PhaseSummary {
    /// Share of the steady responses that ended one round trip after their first byte (0 to 1).
    pub fn tail_held_fraction(&self) -> f64 {
        if self.steady_responses == 0 { 0.0 } else { self.tail_held as f64 / self.steady_responses as f64 }
    }

    /// The tail hold is in view: most responses ACK-clocked, and lone tails that rule out
    /// the path's own pace.
    pub(crate) fn tail_held_in_view(&self) -> bool {
        self.tail_held_fraction() >= crate::tail::HELD_SHARE
            && self.tail_alone >= crate::tail::LONE_TAILS_NEEDED
    }
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values
}

impl PhaseSummary {
    /// HTTP/2: share of the steady responses that waited on a flow-control window (0 to 1).
    pub fn window_blocked_fraction(&self) -> f64 {
        fraction(self.window_blocked, self.steady_responses)
    }

    /// HTTP/2: share of the steady responses that queued before their HEADERS left (0 to 1).
    pub fn queued_fraction(&self) -> f64 {
        fraction(self.queued, self.steady_responses)
    }

    /// HTTP/2: share of the steady responses held with others behind a lost segment (0 to 1).
    pub fn loss_held_fraction(&self) -> f64 {
        fraction(self.loss_held, self.steady_responses)
    }

    /// Share of the steady responses that stalled (0 to 1).
    pub fn stalled_fraction(&self) -> f64 {
        fraction(self.stalled, self.steady_responses)
    }

    /// Share of the steady responses held one round trip mid-response (0 to 1).
    pub fn round_trip_held_fraction(&self) -> f64 {
        fraction(self.round_trip_held, self.steady_responses)
    }

    /// The round trip the rules take out of each time: the path's, from MIN_PATH_RTT_MS on; 0 below.
    pub fn judged_rtt_ms(&self) -> f64 {
        nodelay_tcp::judged_rtt_ms(self.path_rtt_ms)
    }

    /// The median total less what the path costs a response: one round trip, and one more
    /// where responses are held a round trip mid-way (as many as `server_round_trip_hold`
    /// judges, `round_trip_pause_share`) or end one after their first byte (those holds are
    /// judged on their own). On loopback, the median total.
    pub fn beyond_path_p50_ms(&self) -> f64 {
        let held_share = round_trip_pause_share(self.judged_rtt_ms(), SYMPTOM_FRACTION);
        let held = match (self.round_trip_hold_p50_ms, self.tail_held_body_p50_ms) {
            (Some(hold), _) if self.round_trip_held_fraction() >= held_share => hold,
            (_, Some(body)) if self.tail_held_in_view() => body,
            _ => 0.0,
        };
        (self.total_p50_ms - self.judged_rtt_ms() - held).max(0.0)
    }

    /// The responses are larger than the initial congestion window (10 segments): they take
    /// more than one flight when the window starts small.
    pub fn beyond_initial_window(&self) -> bool {
        self.response_bytes_p50 > INITIAL_WINDOW_SEGMENTS * self.mss_bytes
    }

    /// The median first byte less the path's round trip: the server's own time.
    pub fn server_first_byte_p50_ms(&self) -> f64 {
        // On a path, a fresh connection's first byte also waited its handshake's round trip.
        let rtt = self.judged_rtt_ms();
        let handshake = match self.connect_p50_ms {
            Some(connect) if rtt > 0.0 && !self.reuses_connections => connect,
            _ => 0.0,
        };
        (self.first_byte_p50_ms - handshake - rtt).max(0.0)
    }

    /// Share of the steady responses whose body came in slow pieces (0 to 1).
    pub fn slow_body_fraction(&self) -> f64 {
        fraction(self.slow_body, self.steady_responses)
    }

    /// Share of the steady responses whose first byte was late (0 to 1).
    pub fn late_first_byte_fraction(&self) -> f64 {
        fraction(self.late_first_byte, self.steady_responses)
    }

    /// Share of the attempts that failed (0 to 1).
    pub fn failed_fraction(&self) -> f64 {
        if self.attempts == 0 { 0.0 } else { self.errors as f64 / self.attempts as f64 }
    }

    /// Stall lengths cluster tightly, as a timer's do (random server work spreads).
    pub fn stalls_are_quantized(&self) -> bool {
        match (self.stalled_gap_p10_ms, self.stalled_gap_p50_ms, self.stalled_gap_p90_ms) {
            (Some(p10), Some(p50), Some(p90)) => is_clustered(p10, p50, p90),
            _ => false,
        }
    }

    /// First-byte times cluster tightly around their median.
    pub fn first_bytes_are_quantized(&self) -> bool {
        is_clustered(self.first_byte_p10_ms, self.first_byte_p50_ms, self.first_byte_p90_ms)
    }
}

/// Values cluster like a timer's: the 10th-90th percentile spread is at most a quarter of
/// the median (or 8 ms), which random server work does not achieve.
pub(crate) fn is_clustered(p10: f64, p50: f64, p90: f64) -> bool {
    p90 - p10 <= (0.25 * p50).max(8.0)
}

/// The flights beyond the first that `bytes` take from an initial window of 10 segments of
/// `mss` that doubles each round trip: the most round trips a response's transfer may pause.
pub(crate) fn extra_flights(bytes: u64, mss: u64) -> u32 {
    let segments = bytes.div_ceil(mss.max(1));
    let (mut flights, mut sent, mut window) = (1, INITIAL_WINDOW_SEGMENTS, INITIAL_WINDOW_SEGMENTS);
    while sent < segments {
        window *= 2;
        sent += window;
        flights += 1;
    }
    flights - 1
}

fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

impl Phase {
    /// Some response came on a connection that had already carried one.
    fn reuses_connections(&self) -> bool {
        self.responses.iter().any(|r| r.sequence_on_connection > 0)
    }

    /// The responses the figures are taken over (see `PhaseSummary::steady_responses`).
    fn steady(&self) -> Vec<&ResponseRecord> {
        if !self.reuses_connections() {
            return self.responses.iter().collect();
        }
        // Over HTTP/2 a connection's first round of streams is its opening: they left one by
        // one as its SETTINGS came, into a fresh congestion window.
        let opening = self.http2_streams.unwrap_or(1).max(1);
        let after_opening: Vec<&ResponseRecord> =
            self.responses.iter().filter(|r| r.sequence_on_connection >= opening).collect();
        if after_opening.is_empty() {
            self.responses.iter().filter(|r| r.sequence_on_connection > 0).collect()
        } else {
            after_opening
        }
    }

    /// The `quantile` of the steady responses' total time, in ms.
    pub fn total_quantile_ms(&self, quantile: f64) -> f64 {
        percentile(&sorted(self.steady().iter().map(|r| ms(r.total))), quantile)
    }

    /// The figures the rules and reports read, computed from the records.
    pub fn summary(&self) -> PhaseSummary {
        let reuses_connections = self.reuses_connections();
        let steady = self.steady();
        let totals = sorted(steady.iter().map(|r| ms(r.total)));
        let first_bytes = sorted(steady.iter().map(|r| server_first_byte_ms(r)));
        let gaps = sorted(steady.iter().map(|r| ms(r.max_read_gap)));
        let path_rtt_ms = self
            .tcp_info
            .filter(|info| info.min_rtt_us > 0)
            .map(|info| nodelay_tcp::time::ms_from_us(info.min_rtt_us));
        // On a path, a pause or a first byte is judged by what the round trip does not explain.
        let rtt = nodelay_tcp::judged_rtt_ms(path_rtt_ms);
        let mss = self
            .tcp_info
            .map(|info| u64::from(info.rcv_mss_bytes))
            .filter(|&m| m > 0)
            .unwrap_or(DEFAULT_MSS_BYTES);
        // A connection that resent lost segments (TCP_INFO: resent, less those the server
        // reported as duplicates, which were late) had up to that many responses wait a
        // retransmission timeout: the longest waits of 200 ms or more beyond the round trip are
        // those, counted apart, not as stalls or late first bytes. Without retransmissions,
        // none is set apart.
        let retransmits = self.tcp_info.map_or(0, |info| info.lost_segments_resent()) as usize;
        // On a path, a fresh connection's first byte waited its handshake too: not late for that.
        let handshake = |r: &ResponseRecord| if rtt > 0.0 { r.connect.map_or(0.0, ms) } else { 0.0 };
        let extra_wait = |r: &ResponseRecord| {
            (ms(r.max_read_gap).max(server_first_byte_ms(r) - handshake(r)) - rtt).max(0.0)
        };
        let mut waits: Vec<(f64, u32, u32)> = steady
            .iter()
            .filter(|r| extra_wait(r) >= RTO_MIN_MS)
            .map(|r| (extra_wait(r), r.connection, r.sequence_on_connection))
            .collect();
        waits.sort_by(|a, b| b.0.total_cmp(&a.0));
        waits.truncate(retransmits);
        let resent =
            |r: &ResponseRecord| waits.iter().any(|w| (w.1, w.2) == (r.connection, r.sequence_on_connection));
        let retransmission_waits = sorted(waits.iter().map(|w| w.0));
        let stalls: Vec<&&ResponseRecord> = steady
            .iter()
            .filter(|r| r.read_chunks >= 2 && ms(r.max_read_gap) - rtt >= STALL_GAP_MS && !resent(r))
            .collect();
        let round_trip_holds = sorted(
            steady
                .iter()
                .filter(|r| {
                    let gap = ms(r.max_read_gap);
                    rtt > 0.0
                        && r.read_chunks >= 2
                        && gap >= rtt / 2.0
                        && gap - rtt < STALL_GAP_MS
                        && r.response_bytes <= INITIAL_WINDOW_SEGMENTS * mss
                })
                .map(|r| ms(r.max_read_gap)),
        );
        // A response larger than the first flight waits a round trip per extra flight: those
        // pauses are the path's.
        let path_rounds_ms =
            |r: &ResponseRecord| f64::from(r.pauses.min(extra_flights(r.response_bytes, mss))) * rtt;
        let paused_beyond = |r: &ResponseRecord| (ms(r.paused) - path_rounds_ms(r)).max(0.0);
        let body_beyond = |r: &ResponseRecord| (ms(r.total) - ms(r.first_byte) - path_rounds_ms(r)).max(0.0);
        let slow_body = steady
            .iter()
            .filter(|r| {
                paused_beyond(r) >= STALL_GAP_MS && ms(r.max_read_gap) - rtt < STALL_GAP_MS && !resent(r)
            })
            .count();
        let tail = crate::tail::tail_figures(&steady, rtt, mss, reuses_connections);
        let pause_counts: Vec<u32> = steady.iter().map(|r| r.pauses).collect();
        let stalled_gaps = sorted(stalls.iter().map(|r| ms(r.max_read_gap)));
        let bytes_before: Vec<u64> = stalls.iter().map(|r| r.bytes_before_max_gap).collect();
        let connects = sorted(self.responses.iter().filter_map(|r| r.connect.map(ms)));
        let connect_p50_ms = (!connects.is_empty()).then(|| percentile(&connects, 0.5));
        let handshakes = sorted(self.responses.iter().filter_map(|r| r.tls_handshake.map(ms)));
        let opens = self.opens();
        let on_stalls = |q: f64| (!stalled_gaps.is_empty()).then(|| percentile(&stalled_gaps, q));
        let streams: Vec<&nodelay_engine::StreamRecord> =
            steady.iter().filter_map(|r| r.http2.as_ref()).collect();
        PhaseSummary {
            responses: self.responses.len(),
            steady_responses: steady.len(),
            total_p50_ms: percentile(&totals, 0.5),
            total_p90_ms: percentile(&totals, 0.9),
            total_p99_ms: percentile(&totals, 0.99),
            first_byte_p50_ms: percentile(&first_bytes, 0.5),
            first_byte_p10_ms: percentile(&first_bytes, 0.1),
            first_byte_p90_ms: percentile(&first_bytes, 0.9),
            read_gap_p50_ms: percentile(&gaps, 0.5),
            read_chunks_mean: if steady.is_empty() {
                0.0
            } else {
                steady.iter().map(|r| f64::from(r.read_chunks)).sum::<f64>() / steady.len() as f64
            },
            response_bytes_p50: { median(steady.iter().map(|r| r.response_bytes).collect()).unwrap_or(0) },
            mss_bytes: mss,
            path_rtt_ms,
            stalled: stalls.len(),
            round_trip_held: round_trip_holds.len(),
            round_trip_hold_p50_ms: (!round_trip_holds.is_empty())
                .then(|| percentile(&round_trip_holds, 0.5)),
            tail_held: tail.held,
            tail_held_body_p50_ms: tail.held_body_p50_ms,
            tail_alone: tail.alone,
            tail_pause_p50_ms: tail.pause_p50_ms,
            tail_bytes_p50: tail.tail_bytes_p50,
            stalled_gap_p10_ms: on_stalls(0.1),
            stalled_gap_p50_ms: on_stalls(0.5),
            stalled_gap_p90_ms: on_stalls(0.9),
            bytes_before_stall: median(bytes_before),
            slow_body,
            paused_p50_ms: percentile(&sorted(steady.iter().map(|r| paused_beyond(r))), 0.5),
            pauses_p50: median(pause_counts).unwrap_or(0),
            body_p50_ms: percentile(&sorted(steady.iter().map(|r| body_beyond(r))), 0.5),
            late_first_byte: steady
                .iter()
                .filter(|r| server_first_byte_ms(r) - handshake(r) - rtt >= LATE_FIRST_BYTE_MS && !resent(r))
                .count(),
            retransmission_waits: retransmission_waits.len(),
            retransmission_wait_p50_ms: (!retransmission_waits.is_empty())
                .then(|| percentile(&retransmission_waits, 0.5)),
            connect_p50_ms,
            connect_p90_ms: (!connects.is_empty()).then(|| percentile(&connects, 0.9)),
            opens: opens.opened,
            slow_opens: opens.slow,
            slow_open_retry_s: opens.retry_s,
            slowest_open_ms: opens.slowest_ms,
            late_opens: opens.late,
            unanswered_opens: crate::unanswered_connects(
                self.connects_unanswered_ms.iter().copied(),
                connect_p50_ms,
            )
            .0,
            tls_handshake_p50_ms: (!handshakes.is_empty()).then(|| percentile(&handshakes, 0.5)),
            first_request_total_ms: self.responses.first().map(|r| ms(r.total)),
            first_request_read_gap_ms: self.responses.first().map(|r| ms(r.max_read_gap)),
            reuses_connections,
            errors: self.errors.len() as u64,
            attempts: (self.responses.len() + self.errors.len()) as u64,
            errors_by_kind: self
                .errors_by_kind()
                .into_iter()
                .map(|(kind, n)| (kind.as_str().to_string(), n))
                .collect(),
            most_common_error: self.most_common_error(),
            reliable: self.is_reliable(),
            window_blocked: streams.iter().filter(|s| !s.window_blocked.is_zero()).count(),
            window_blocked_p50_ms: percentile(&sorted(streams.iter().map(|s| ms(s.window_blocked))), 0.5),
            queued: streams.iter().filter(|s| ms(s.queued) >= QUEUED_MS).count(),
            queued_p50_ms: percentile(&sorted(streams.iter().map(|s| ms(s.queued))), 0.5),
            peer_max_concurrent_streams: self.http2_peer.and_then(|peer| peer.max_concurrent_streams),
            loss_held: streams.iter().filter(|s| !s.loss_held.is_zero()).count(),
            loss_held_p50_ms: percentile(
                &sorted(streams.iter().filter(|s| !s.loss_held.is_zero()).map(|s| ms(s.loss_held))),
                0.5,
            ),
            loss_holes: self.http2_loss_holes,
            streams_held_by_loss: self.http2_streams_held_by_loss,
            grpc_status_counts: self.responses.iter().filter_map(|r| r.http2.as_ref()?.grpc_status).fold(
                BTreeMap::new(),
                |mut counts, status| {
                    *counts.entry(status.to_string()).or_insert(0) += 1;
                    counts
                },
            ),
        }
    }

    /// How many connections the phase opened, and which of them waited for a SYN
    /// retransmission. A late first byte counts only when the server's typical first byte
    /// (the median over the phase) is far from a second: a slow server is not a slow open.
    fn opens(&self) -> Opens {
        let typical_first_byte_ms = percentile(&sorted(self.responses.iter().map(|r| ms(r.first_byte))), 0.5);
        let mut opens = Opens::default();
        let mut retries: BTreeMap<u32, u64> = BTreeMap::new();
        let mut slow = |retry_s: u32, open_ms: f64| {
            opens.slow += 1;
            *retries.entry(retry_s).or_insert(0) += 1;
            opens.slowest_ms = Some(opens.slowest_ms.map_or(open_ms, |s: f64| s.max(open_ms)));
        };
        for response in self.responses.iter().filter(|r| r.connect.is_some()) {
            opens.opened += 1;
            let connect_ms = response.connect.map_or(0.0, ms);
            let first_byte_ms = ms(response.first_byte);
            let fast_server = typical_first_byte_ms < TYPICAL_FIRST_BYTE_LIMIT_MS;
            let retry = syn_retry_cluster(connect_ms)
                .or_else(|| fast_server.then(|| syn_retry_cluster(first_byte_ms)).flatten());
            if connect_ms >= LATE_OPEN_MS || (fast_server && first_byte_ms >= LATE_OPEN_MS) {
                opens.late += 1;
            }
            if let Some(retry_s) = retry {
                slow(retry_s, first_byte_ms);
            }
        }
        // A connect that timed out waited for its timeout, not a retry time: counted, not timed.
        let timed_out = self.errors.iter().filter(|e| e.kind == ErrorKind::ConnectTimeout).count() as u64;
        opens.opened += timed_out;
        opens.slow += timed_out;
        opens.late += timed_out;
        opens.retry_s =
            retries.into_iter().max_by_key(|&(retry_s, n)| (n, std::cmp::Reverse(retry_s))).map(|(s, _)| s);
        opens
    }

    /// Whether the phase can carry a verdict or a proof (see `MAX_FAILED_SHARE`).
    pub fn is_reliable(&self) -> bool {
        let attempts = self.responses.len() + self.errors.len();
        self.errors.len() as f64 <= MAX_FAILED_SHARE * attempts as f64
    }

    fn errors_by_kind(&self) -> BTreeMap<ErrorKind, u64> {
        let mut counts = BTreeMap::new();
        for error in &self.errors {
            *counts.entry(error.kind).or_insert(0) += 1;
        }
        counts
    }

    /// The kind that failed most often (the first seen of equally common ones), how often.
    pub(crate) fn most_common_error_kind(&self) -> Option<(ErrorKind, u64)> {
        let first_seen = |kind: ErrorKind| self.errors.iter().position(|e| e.kind == kind);
        self.errors_by_kind().into_iter().max_by_key(|&(kind, n)| (n, std::cmp::Reverse(first_seen(kind))))
    }

    fn most_common_error(&self) -> Option<ErrorSummary> {
        let (kind, count) = self.most_common_error_kind()?;
        let example =
            self.errors.iter().find(|e| e.kind == kind).map(|e| e.message.clone()).unwrap_or_default();
        Some(ErrorSummary { kind: kind.as_str().into(), count, example })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// A synthetic response: `first_byte_ms`, then optionally a pause of `gap_ms` before the
    /// rest (two reads), on connection request number `sequence`.
    pub fn response(sequence: u32, first_byte_ms: f64, gap_ms: Option<f64>) -> ResponseRecord {
        let d = |ms: f64| Duration::from_secs_f64(ms / 1e3);
        let gap = gap_ms.unwrap_or(0.0);
        ResponseRecord {
            connection: 0,
            request: 0,
            sequence_on_connection: sequence,
            start_offset: Duration::ZERO,
            connect: (sequence == 0).then(|| d(0.1)),
            tls_handshake: None,
            tls_resumed: false,
            first_byte: d(first_byte_ms),
            total: d(first_byte_ms + gap),
            total_uncorrected: d(first_byte_ms + gap),
            read_chunks: if gap_ms.is_some() { 2 } else { 1 },
            max_read_gap: d(gap),
            bytes_before_max_gap: if gap_ms.is_some() { 120 } else { 0 },
            last_read_gap: d(gap),
            last_read_bytes: if gap_ms.is_some() { 13 } else { 133 },
            paused: if gap >= 1.0 { d(gap) } else { Duration::ZERO },
            pauses: u32::from(gap >= 1.0),
            response_bytes: 133,
            status: 200,
            http2: None,
        }
    }

    pub fn phase(experiment: Option<Experiment>, responses: Vec<ResponseRecord>) -> Phase {
        Phase { experiment, responses, connections_opened: 1, ..Phase::default() }
    }

    #[test]
    fn summary_skips_the_first_request_on_a_reused_connection() {
        let mut responses = vec![response(0, 0.3, Some(0.1))];
        responses.extend((1..=10).map(|i| response(i, 0.2, Some(43.0 + f64::from(i) * 0.1))));
        let summary = phase(None, responses).summary();
        assert_eq!(summary.steady_responses, 10);
        assert_eq!(summary.stalled, 10);
        assert!(summary.stalls_are_quantized());
        assert!((summary.first_request_total_ms.unwrap() - 0.4).abs() < 1e-6);
        assert!(summary.total_p50_ms > 43.0);
        assert_eq!(summary.bytes_before_stall, Some(120));
    }

    #[test]
    fn random_delays_are_not_quantized() {
        let responses = (1..=20).map(|i| response(i, 1.0, Some(f64::from(i) * 4.0))).collect();
        let summary = phase(None, responses).summary();
        assert!(summary.stalled > 0);
        assert!(!summary.stalls_are_quantized());
    }

    pub fn error(kind: ErrorKind, message: &str) -> ErrorRecord {
        ErrorRecord { connection: 0, request: 0, offset: Duration::ZERO, kind, message: message.into() }
    }

    #[test]
    fn failures_are_counted_by_kind_and_the_share_decides_reliability() {
        let mut phase = phase(None, (0..36).map(|i| response(i, 0.2, None)).collect());
        phase.errors = vec![
            error(ErrorKind::Timeout, "no complete response within 5s"),
            error(ErrorKind::MalformedResponse, "38 bytes after the end of the response"),
            error(ErrorKind::MalformedResponse, "12 unsolicited bytes on an idle connection"),
            error(ErrorKind::Timeout, "no complete response within 5s"),
        ];
        let summary = phase.summary();
        assert_eq!((summary.errors, summary.attempts), (4, 40));
        assert_eq!(
            summary.errors_by_kind,
            BTreeMap::from([("malformed_response".to_string(), 2), ("timeout".to_string(), 2)])
        );
        // Equally common: the kind seen first wins, with its first message.
        let most = summary.most_common_error.unwrap();
        assert_eq!(
            (&*most.kind, most.count, most.example.as_str()),
            ("timeout", 2, "no complete response within 5s")
        );
        assert!(summary.reliable, "4 of 40 is exactly the share");
        phase.errors.push(error(ErrorKind::Reset, "read: connection reset by peer"));
        assert!(!phase.summary().reliable, "5 of 41 is over it");
        let clean = super::tests::phase(None, vec![response(0, 0.2, None)]).summary();
        assert!(clean.reliable && clean.most_common_error.is_none() && clean.errors_by_kind.is_empty());
    }
}
