//! Measured phases (the baseline and each experiment) and the figures the rules read.

use nodelay_engine::{ResponseRecord, TcpInfo};
use serde::Serialize;
use std::time::Duration;

/// A mid-response pause at least this long counts as a stall (the shortest delayed-ACK
/// timer is 40 ms; scheduling noise on loopback stays far below).
pub const STALL_GAP_MS: f64 = 25.0;
/// A first byte later than this counts as late.
pub const LATE_FIRST_BYTE_MS: f64 = 25.0;

/// One change to the client's behaviour, made to separate causes (FIELD_NOTES §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

impl Experiment {
    pub fn describe(self) -> &'static str {
        match self {
            Experiment::QuickAck => "client TCP_QUICKACK after every read",
            Experiment::NewConnectionPerRequest => "new connection per request",
            Experiment::SplitRequestNagle => "request head and body in two writes, client Nagle on",
            Experiment::SplitRequestNoDelay => "request in two writes, client TCP_NODELAY",
            Experiment::SingleWrite => "request in one write",
        }
    }
}

/// What the request looks like, which decides the experiments worth running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    pub has_body: bool,
    /// The baseline itself writes the request in pieces (user's `--write-split`).
    pub baseline_split: bool,
    /// The baseline client sets TCP_NODELAY.
    pub baseline_nodelay: bool,
}

/// The records of one measured phase.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// `None` for the baseline.
    pub experiment: Option<Experiment>,
    pub responses: Vec<ResponseRecord>,
    pub errors: u64,
    pub error_example: Option<String>,
    pub connections_opened: u64,
    /// The client's TCP_INFO on its busiest connection, taken before it closed.
    pub tcp_info: Option<TcpInfo>,
}

#[derive(Debug, Clone, Default)]
pub struct Observations {
    pub request: Option<RequestShape>,
    pub baseline: Phase,
    pub experiments: Vec<Phase>,
}

impl Observations {
    pub fn experiment(&self, experiment: Experiment) -> Option<&Phase> {
        self.experiments.iter().find(|p| p.experiment == Some(experiment))
    }
}

/// The figures of a phase that the rules and reports use (milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    pub responses: usize,
    /// Responses the figures below are taken over: all but the first on each connection
    /// when connections are reused (a fresh connection ACKs quickly and escapes stalls).
    pub steady_responses: usize,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub first_byte_p50_ms: f64,
    pub first_byte_p10_ms: f64,
    pub first_byte_p90_ms: f64,
    pub read_gap_p50_ms: f64,
    pub read_chunks_mean: f64,
    /// Steady responses with a mid-response pause of at least 25 ms.
    pub stalled: usize,
    pub stalled_gap_p10_ms: Option<f64>,
    pub stalled_gap_p50_ms: Option<f64>,
    pub stalled_gap_p90_ms: Option<f64>,
    /// Median bytes that arrived before the pause, over stalled responses.
    pub bytes_before_stall: Option<u64>,
    /// Steady responses whose first byte came 25 ms or more after the request.
    pub late_first_byte: usize,
    pub connect_p50_ms: Option<f64>,
    /// The very first request of the phase (on a fresh connection).
    pub first_request_total_ms: Option<f64>,
    /// Its longest pause between two reads.
    pub first_request_read_gap_ms: Option<f64>,
    pub reuses_connections: bool,
    pub errors: u64,
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of values sorted ascending (0 for none).
pub fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values
}

impl PhaseSummary {
    pub fn stalled_fraction(&self) -> f64 {
        fraction(self.stalled, self.steady_responses)
    }

    pub fn late_first_byte_fraction(&self) -> f64 {
        fraction(self.late_first_byte, self.steady_responses)
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

fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

impl Phase {
    pub fn summary(&self) -> PhaseSummary {
        let reuses_connections = self.responses.iter().any(|r| r.sequence_on_connection > 0);
        let steady: Vec<&ResponseRecord> = if reuses_connections {
            self.responses.iter().filter(|r| r.sequence_on_connection > 0).collect()
        } else {
            self.responses.iter().collect()
        };
        let totals = sorted(steady.iter().map(|r| ms(r.total)));
        let first_bytes = sorted(steady.iter().map(|r| ms(r.first_byte)));
        let gaps = sorted(steady.iter().map(|r| ms(r.max_read_gap)));
        let stalls: Vec<&&ResponseRecord> =
            steady.iter().filter(|r| r.read_chunks >= 2 && ms(r.max_read_gap) >= STALL_GAP_MS).collect();
        let stalled_gaps = sorted(stalls.iter().map(|r| ms(r.max_read_gap)));
        let mut bytes_before: Vec<u64> = stalls.iter().map(|r| r.bytes_before_max_gap).collect();
        bytes_before.sort_unstable();
        let connects = sorted(self.responses.iter().filter_map(|r| r.connect.map(ms)));
        let on_stalls = |q: f64| (!stalled_gaps.is_empty()).then(|| percentile(&stalled_gaps, q));
        PhaseSummary {
            responses: self.responses.len(),
            steady_responses: steady.len(),
            total_p50_ms: percentile(&totals, 0.5),
            total_p90_ms: percentile(&totals, 0.9),
            first_byte_p50_ms: percentile(&first_bytes, 0.5),
            first_byte_p10_ms: percentile(&first_bytes, 0.1),
            first_byte_p90_ms: percentile(&first_bytes, 0.9),
            read_gap_p50_ms: percentile(&gaps, 0.5),
            read_chunks_mean: if steady.is_empty() {
                0.0
            } else {
                steady.iter().map(|r| f64::from(r.read_chunks)).sum::<f64>() / steady.len() as f64
            },
            stalled: stalls.len(),
            stalled_gap_p10_ms: on_stalls(0.1),
            stalled_gap_p50_ms: on_stalls(0.5),
            stalled_gap_p90_ms: on_stalls(0.9),
            bytes_before_stall: bytes_before.get(bytes_before.len() / 2).copied(),
            late_first_byte: first_bytes.iter().filter(|&&t| t >= LATE_FIRST_BYTE_MS).count(),
            connect_p50_ms: (!connects.is_empty()).then(|| percentile(&connects, 0.5)),
            first_request_total_ms: self.responses.first().map(|r| ms(r.total)),
            first_request_read_gap_ms: self.responses.first().map(|r| ms(r.max_read_gap)),
            reuses_connections,
            errors: self.errors,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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
            first_byte: d(first_byte_ms),
            total: d(first_byte_ms + gap),
            read_chunks: if gap_ms.is_some() { 2 } else { 1 },
            max_read_gap: d(gap),
            bytes_before_max_gap: if gap_ms.is_some() { 120 } else { 0 },
            response_bytes: 133,
            status: 200,
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

    #[test]
    fn percentile_is_nearest_rank() {
        let values = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&values, 0.5), 2.0);
        assert_eq!(percentile(&values, 0.9), 4.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
