//! The model of a `nodelay bench` result. Its serde form *is* the JSON contract described by
//! `schema/bench.schema.json`: rename nothing, only add.

use crate::status::SuccessStatuses;
use hdrhistogram::Histogram;
use nodelay_engine::{ErrorKind, RequestStats, Stats, TcpInfo, quantile_ms};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

pub const BENCH_SCHEMA_ID: &str = "nodelay-bench/1";

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
}

impl Percentiles {
    /// From a nanosecond histogram; `None` when it holds no value.
    pub fn from_ns(histogram: &Histogram<u64>) -> Option<Self> {
        if histogram.is_empty() {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        Some(Percentiles {
            p50: quantile_ms(histogram, 0.50),
            p90: quantile_ms(histogram, 0.90),
            p99: quantile_ms(histogram, 0.99),
            p999: quantile_ms(histogram, 0.999),
            max: ms(histogram.max()),
            min: ms(histogram.min()),
            mean: histogram.mean() / 1e6,
        })
    }
}

/// What the run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSettings {
    pub url: String,
    pub address: String,
    /// HTTP method, `scenario`, or the raw framing.
    pub method: String,
    /// `http` or `tcp`.
    pub protocol: &'static str,
    pub connections: usize,
    pub threads: usize,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub rate_per_second: Option<f64>,
    pub keep_alive: bool,
    /// Leading write sizes of each request (`--write-split`); empty for one write.
    pub write_split: Vec<usize>,
    pub timeout_s: f64,
    pub connect_timeout_s: f64,
    /// Statuses counted as success (`--success-status`), e.g. `2xx,3xx`.
    pub success_status: String,
}

/// How the run ended, besides its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEnd {
    pub elapsed: Duration,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Open loop: requests that fell due but were never sent (every connection busy).
    pub due_not_sent: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionReport {
    pub connection: u32,
    /// Responses on the last TCP connection of this slot.
    pub requests: u64,
    pub tcp_info: Option<TcpInfo>,
}

/// Figures for one named request of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestReport {
    pub name: String,
    pub requests_completed: u64,
    pub errors: u64,
    pub response_bytes: u64,
    pub latency_ms: Option<Percentiles>,
    pub first_byte_ms: Option<Percentiles>,
    pub read_gap_ms: Option<Percentiles>,
    pub status_counts: BTreeMap<String, u64>,
    /// Completed with a status outside `settings.success_status` (an error page).
    pub non_success_responses: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub schema: &'static str,
    pub settings: BenchSettings,
    pub requests_completed: u64,
    /// Completed with a status outside `settings.success_status` (4xx/5xx by default): counted
    /// in `requests_completed` and in the latencies, and apart here, as wrk does.
    pub non_success_responses: u64,
    /// Responses on a connection that had already carried one (keep-alive reuse).
    pub reused_connection_responses: u64,
    /// Open loop (`--rate`): requests that fell due but were never sent because every
    /// connection was busy; 0 in closed loop.
    pub requests_due_not_sent: u64,
    /// Requests still in flight when the run ended: neither completed nor failed.
    pub requests_unfinished: u64,
    pub elapsed_s: f64,
    pub requests_per_second: f64,
    pub response_bytes: u64,
    pub transfer_bytes_per_second: f64,
    pub latency_ms: Option<Percentiles>,
    pub first_byte_ms: Option<Percentiles>,
    pub read_gap_ms: Option<Percentiles>,
    pub connect_ms: Option<Percentiles>,
    pub read_chunks_per_response: f64,
    pub status_counts: BTreeMap<String, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub error_examples: BTreeMap<&'static str, String>,
    pub connections_opened: u64,
    pub connections: Vec<ConnectionReport>,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Per request name, when a scenario sent several kinds of request; otherwise null.
    pub by_request: Option<Vec<RequestReport>>,
}

impl BenchReport {
    /// `request_names` names the run's request kinds in order.
    pub fn new(
        settings: BenchSettings,
        success: &SuccessStatuses,
        stats: &Stats,
        request_names: &[String],
        end: RunEnd,
    ) -> Self {
        let RunEnd { elapsed, interrupted, due_not_sent } = end;
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let non_success = |counts: &mut dyn Iterator<Item = (u16, u64)>| {
            counts.filter(|(code, _)| !success.is_success(*code)).map(|(_, n)| n).sum::<u64>()
        };
        let per_response =
            |total: u64| if stats.completed == 0 { 0.0 } else { total as f64 / stats.completed as f64 };
        BenchReport {
            schema: BENCH_SCHEMA_ID,
            settings,
            requests_completed: stats.completed,
            non_success_responses: non_success(&mut stats.status_counts()),
            reused_connection_responses: stats.reused_connection_responses,
            requests_due_not_sent: due_not_sent,
            requests_unfinished: stats.unfinished,
            elapsed_s: elapsed.as_secs_f64(),
            requests_per_second: stats.completed as f64 / seconds,
            response_bytes: stats.response_bytes,
            transfer_bytes_per_second: stats.response_bytes as f64 / seconds,
            latency_ms: Percentiles::from_ns(&stats.latency_ns),
            first_byte_ms: Percentiles::from_ns(&stats.first_byte_ns),
            read_gap_ms: Percentiles::from_ns(&stats.read_gap_ns),
            connect_ms: Percentiles::from_ns(&stats.connect_ns),
            read_chunks_per_response: per_response(stats.read_chunks),
            status_counts: stats.status_counts().map(|(code, n)| (code.to_string(), n)).collect(),
            errors: ErrorKind::ALL.iter().map(|&kind| (kind.as_str(), stats.errors(kind))).collect(),
            error_examples: ErrorKind::ALL
                .iter()
                .filter_map(|&kind| Some((kind.as_str(), stats.error_example(kind)?.to_string())))
                .collect(),
            connections_opened: stats.connections_closed,
            connections: stats
                .connections()
                .map(|c| ConnectionReport {
                    connection: c.connection,
                    requests: c.requests,
                    tcp_info: c.tcp_info,
                })
                .collect(),
            interrupted,
            by_request: (stats.by_request().len() > 0).then(|| {
                let nothing = RequestStats::new();
                stats
                    .by_request()
                    .zip(request_names)
                    .map(|(kind, name)| {
                        let kind = kind.unwrap_or(&nothing);
                        RequestReport {
                            name: name.clone(),
                            requests_completed: kind.completed,
                            errors: kind.errors,
                            response_bytes: kind.response_bytes,
                            latency_ms: Percentiles::from_ns(&kind.latency_ns),
                            first_byte_ms: Percentiles::from_ns(&kind.first_byte_ns),
                            read_gap_ms: Percentiles::from_ns(&kind.read_gap_ns),
                            status_counts: kind
                                .status_counts
                                .iter()
                                .map(|(c, n)| (c.to_string(), *n))
                                .collect(),
                            non_success_responses: non_success(
                                &mut kind.status_counts.iter().map(|(code, n)| (*code, *n)),
                            ),
                        }
                    })
                    .collect()
            }),
        }
    }

    pub fn total_errors(&self) -> u64 {
        self.errors.values().sum()
    }
}
