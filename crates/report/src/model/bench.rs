//! The model of a `nodelay bench` result. Its serde form *is* the JSON contract described by
//! `schema/bench.schema.json`: rename nothing, only add.

use crate::model::percentiles::Percentiles;
use crate::model::series::{IntervalPoint, Machine, SpectrumPoint, spectrum_ms};
use crate::model::server_view::ServerViewReport;
use crate::model::status::SuccessStatuses;
use crate::model::tls::{TlsReport, TlsSettings};
use hdrhistogram::Histogram;
use nodelay_diagnose::{Diagnosis, Finding, RunShape, Suggestion};
use nodelay_engine::{ErrorKind, RequestStats, Stats};
use nodelay_tcp::TcpInfo;
use nodelay_tcp::time::ms_from_us;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

/// The `schema` of a bench report (`schema/bench.schema.json`).
pub const BENCH_SCHEMA_ID: &str = "nodelay-bench/1";

/// Bars in the latency histogram: about what oha and hey show.
pub const HISTOGRAM_BUCKETS: usize = 10;

/// One bar of a latency histogram: the values above the previous bucket's bound (the first
/// bucket starts at the minimum) and at most `up_to_ms`.
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistogramBucket {
    /// The bucket's upper bound, in milliseconds (included).
    pub up_to_ms: f64,
    /// Responses in the bucket.
    pub count: u64,
}

/// `buckets` equal-width buckets from the minimum to the maximum of a nanosecond histogram
/// (one when every value is alike; none when it is empty), as hey and oha draw theirs. Each
/// recorded value counts where the lowest value it stands for falls (so one on a bound is in
/// the bucket it bounds), and the counts add up to the histogram's.
pub fn histogram_buckets(histogram: &Histogram<u64>, buckets: usize) -> Vec<HistogramBucket> {
    if histogram.is_empty() || buckets == 0 {
        return Vec::new();
    }
    let (min, max) = (histogram.min(), histogram.max());
    // min() and max() are a bucket's lowest and highest equivalents: alike values differ there.
    let buckets = if histogram.equivalent(min, max) { 1 } else { buckets };
    let step = (max - min) as f64 / buckets as f64;
    let bound = |i: usize| if i + 1 == buckets { max as f64 } else { min as f64 + step * (i + 1) as f64 };
    let mut counts = vec![0u64; buckets];
    for value in histogram.iter_recorded() {
        let above_min = histogram.lowest_equivalent(value.value_iterated_to()).saturating_sub(min) as f64;
        // The bucket whose upper bound is the first at or above the value.
        let index = if step > 0.0 { (above_min / step).ceil() as usize } else { 1 };
        counts[index.clamp(1, buckets) - 1] += value.count_at_value();
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| HistogramBucket { up_to_ms: bound(i) / 1e6, count })
        .collect()
}

/// The path's round trip in milliseconds: the lowest `min_rtt` of the connections that had an
/// RTT sample (the kernel leaves it at 0 before one); `None` when none had.
pub fn path_rtt_ms(infos: impl IntoIterator<Item = TcpInfo>) -> Option<f64> {
    infos.into_iter().map(|info| info.min_rtt_us).filter(|&us| us > 0).min().map(ms_from_us)
}

/// The segments the connections resent, added up; `None` without any TCP_INFO.
pub fn segments_resent(infos: impl IntoIterator<Item = TcpInfo>) -> Option<u64> {
    infos.into_iter().map(|info| u64::from(info.total_retransmits)).reduce(|a, b| a + b)
}

/// Responses of `stats` that waited a retransmission timeout: 200 ms or more beyond the path's
/// round trip, no more of them than lost segments were resent (a resent segment the server
/// reported as a duplicate was late, and the wait was a stall's).
fn retransmission_waits(stats: &Stats) -> u64 {
    let infos = || stats.connections().filter_map(|c| c.tcp_info);
    let resent = infos().map(|info| u64::from(info.lost_segments_resent())).sum::<u64>();
    if resent == 0 || stats.latency_ns.is_empty() {
        return 0;
    }
    let rtt_ms = nodelay_tcp::judged_rtt_ms(path_rtt_ms(infos()));
    let from_ns = ((rtt_ms + nodelay_tcp::path::RTO_MIN_MS) * 1e6) as u64;
    let histogram = &stats.latency_ns;
    let slow = if histogram.max() < from_ns { 0 } else { histogram.count_between(from_ns, histogram.max()) };
    slow.min(resent)
}

/// What the run was asked to do. Read back from a saved run too (compare's `--baseline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchSettings {
    /// The target as given (`http://`, `https://` or `tcp://`).
    pub url: String,
    /// The IP:port actually connected to.
    pub address: String,
    /// HTTP method, `scenario`, or the raw framing.
    pub method: String,
    /// `http` or `tcp`.
    pub protocol: String,
    /// Concurrent connections (`-c`).
    pub connections: usize,
    /// Generator threads (`-t`).
    pub threads: usize,
    /// Requests to send in all (`-n`); null when the run is timed.
    pub requests: Option<u64>,
    /// How long the run lasts, in seconds (`-d`); null when it counts requests.
    pub duration_s: Option<f64>,
    /// Open loop (`--rate`): requests started per second; null in closed loop.
    pub rate_per_second: Option<f64>,
    /// Connections carry many requests (keep-alive); false for a new connection per request.
    pub keep_alive: bool,
    /// Leading write sizes of each request (`--write-split`); empty for one write.
    pub write_split: Vec<usize>,
    /// How long a request may take before it fails, in seconds.
    pub timeout_s: f64,
    /// How long a connect may take before it fails, in seconds.
    pub connect_timeout_s: f64,
    /// Statuses counted as success (`--success-status`), e.g. `2xx,3xx`.
    pub success_status: String,
    /// https:// runs: how the server is trusted; null for plain HTTP and TCP.
    pub tls: Option<TlsSettings>,
    /// `--busy-poll`: the generator's threads spun instead of sleeping...
    pub busy_poll: bool,
    /// ...for this long after each event (`--busy-poll=TIME`), or always when null.
    pub busy_poll_after_us: Option<f64>,
    /// The threads waited through io_uring (`event_loop` is `io_uring`).
    pub io_uring: bool,
    /// The closed loop's waits held out for several responses (io_uring's minimum wait, or
    /// epoll's short timer sleeps), and responses were timed by the kernel's arrival stamps.
    pub batched_waits: bool,
    /// The loop the threads waited with: `io_uring` or `epoll`.
    pub event_loop: String,
    /// Why that loop: `default`, the flag that chose it (`--io-uring`, `--epoll`,
    /// `--busy-poll`), why the default is epoll for this run, or `io_uring refused: REASON`.
    pub event_loop_why: String,
    /// `1.1`, or `2` for an HTTP/2 run; null for tcp://.
    pub http_version: Option<String>,
    /// An HTTP/2 run's streams, windows and gRPC method; null otherwise.
    pub http2: Option<crate::model::http2::Http2RunSettings>,
}

/// What a run saved without a setting was asked: the defaults of `nodelay bench`.
impl Default for BenchSettings {
    fn default() -> Self {
        BenchSettings {
            url: String::new(),
            address: String::new(),
            method: "GET".into(),
            protocol: "http".into(),
            connections: 1,
            threads: 1,
            requests: None,
            duration_s: None,
            rate_per_second: None,
            keep_alive: true,
            write_split: Vec::new(),
            timeout_s: 0.0,
            connect_timeout_s: 0.0,
            success_status: String::new(),
            tls: None,
            busy_poll: false,
            busy_poll_after_us: None,
            io_uring: false,
            batched_waits: false,
            event_loop: String::new(),
            event_loop_why: String::new(),
            http_version: None,
            http2: None,
        }
    }
}

/// How the run ended, besides its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEnd {
    /// How long the run lasted.
    pub elapsed: Duration,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Open loop: requests that fell due but were never sent (every connection busy).
    pub due_not_sent: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One connection slot and the TCP_INFO of its last connection, taken before it closed.
pub struct ConnectionReport {
    /// The slot's index, from 0.
    pub connection: u32,
    /// Responses on the last TCP connection of this slot.
    pub requests: u64,
    /// The kernel's TCP_INFO of its last connection; null when not read.
    pub tcp_info: Option<TcpInfo>,
}

/// Figures for one named request of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestReport {
    /// The request's name in the scenario.
    pub name: String,
    /// Complete responses received.
    pub requests_completed: u64,
    /// Attempts that failed.
    pub errors: u64,
    /// Head and body bytes of the complete responses.
    pub response_bytes: u64,
    /// Request start to last byte, in milliseconds; null when nothing completed.
    pub latency_ms: Option<Percentiles>,
    /// Request start to first response byte, in milliseconds.
    pub first_byte_ms: Option<Percentiles>,
    /// Per response, the longest pause between two reads, in milliseconds.
    pub read_gap_ms: Option<Percentiles>,
    /// Responses per HTTP status code.
    pub status_counts: BTreeMap<String, u64>,
    /// Completed with a status outside `settings.success_status` (an error page).
    pub non_success_responses: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay bench` run: its settings, figures, findings and suggestions.
pub struct BenchReport {
    /// The schema id, `nodelay-bench/1`.
    pub schema: Cow<'static, str>,
    /// What the run was asked to do.
    pub settings: BenchSettings,
    /// Complete responses received.
    pub requests_completed: u64,
    /// Completed with a status outside `settings.success_status` (4xx/5xx by default), or a
    /// gRPC call that failed (non-OK grpc-status under HTTP 200): counted in
    /// `requests_completed` and in the latencies, and apart here, as wrk does.
    pub non_success_responses: u64,
    /// Responses on a connection that had already carried one (keep-alive reuse).
    pub reused_connection_responses: u64,
    /// Open loop (`--rate`): requests that fell due but were never sent because every
    /// connection was busy; 0 in closed loop.
    pub requests_due_not_sent: u64,
    /// Requests still in flight when the run ended: neither completed nor failed.
    pub requests_unfinished: u64,
    /// How long the run lasted, in seconds.
    pub elapsed_s: f64,
    /// `requests_completed` over `elapsed_s`.
    pub requests_per_second: f64,
    /// Head and body bytes of the complete responses.
    pub response_bytes: u64,
    /// `response_bytes` over `elapsed_s`, in bytes per second.
    pub transfer_bytes_per_second: f64,
    /// Request start (the intended start under `--rate`) to last byte, in milliseconds; null
    /// when nothing completed.
    pub latency_ms: Option<Percentiles>,
    /// The path's round trip, in milliseconds: the lowest TCP_INFO `min_rtt` sampled on the
    /// run's connections (the kernel keeps delayed ACKs out of it); null when none had an RTT
    /// sample. Under 1 ms it is loopback or a near LAN, and the text says nothing of it.
    pub path_rtt_ms: Option<f64>,
    /// Segments the run's connections resent (TCP_INFO `total_retransmits`, each connection
    /// slot's last connection); null when no connection was sampled.
    pub segments_resent: Option<u64>,
    /// Responses that waited a retransmission timeout: those 200 ms or more beyond the path's
    /// round trip, counted up to the segments resent (a lost segment costs at least the
    /// kernel's 200 ms minimum RTO); 0 when nothing was resent. Their time is in `latency_ms`.
    pub retransmission_waits: u64,
    /// Open loop (`--rate`): from when each request actually began (not when it was due) to
    /// its last byte, the latency without the coordinated-omission correction, shown beside
    /// `latency_ms`; null in closed loop, where the two are the same.
    pub latency_uncorrected_ms: Option<Percentiles>,
    /// Request start to first response byte, in milliseconds.
    pub first_byte_ms: Option<Percentiles>,
    /// Per response, the longest pause between two reads (0 when it came in one read), in
    /// milliseconds.
    pub read_gap_ms: Option<Percentiles>,
    /// TCP handshake, for requests that opened a connection, in milliseconds.
    pub connect_ms: Option<Percentiles>,
    /// Connects that took as long as a SYN retransmission (0.9-1.4 s, 2.9-3.5 s, 6.9-7.6 s):
    /// on loopback each one is a SYN the server's full listen queue dropped.
    pub connects_at_syn_retry: u64,
    /// Connects the run ended before any answer came to, waiting past 20 ms and ten times the
    /// completed ones' median: on loopback each is a SYN a full listen queue dropped, whose
    /// retry (1 s) a shorter run never sees.
    pub connects_unanswered_at_end: u64,
    /// The longest wait among them, in milliseconds; null when there were none.
    pub connect_unanswered_longest_ms: Option<f64>,
    /// TLS handshake (after the TCP one), full and resumed, for requests that opened a
    /// connection; null for plain HTTP.
    pub tls_handshake_ms: Option<Percentiles>,
    /// What the TLS handshakes settled on and cost; null for plain HTTP.
    pub tls: Option<TlsReport>,
    /// `latency_ms` in equal-width buckets from its min to its max; empty when nothing
    /// completed.
    pub latency_histogram: Vec<HistogramBucket>,
    /// `latency_ms` as a percentile spectrum (HdrHistogram's percentile distribution); empty
    /// when nothing completed.
    pub latency_spectrum: Vec<SpectrumPoint>,
    /// The largest read gap of each response, as a percentile spectrum.
    pub read_gap_spectrum: Vec<SpectrumPoint>,
    /// Requests, errors, p50 and p99 per interval (`--interval`) from the start of the run.
    pub timeline: Vec<IntervalPoint>,
    /// Where the run was measured.
    pub machine: Machine,
    /// Mean number of reads that returned part of a response.
    pub read_chunks_per_response: f64,
    /// Responses per HTTP status code; empty for tcp:// targets.
    pub status_counts: BTreeMap<String, u64>,
    /// Failed attempts per error kind (every kind listed, 0 included).
    pub errors: BTreeMap<String, u64>,
    /// The first message seen per error kind.
    pub error_examples: BTreeMap<String, String>,
    /// TCP connections opened during the run.
    pub connections_opened: u64,
    /// Per connection slot, the TCP_INFO of its last connection.
    pub connections: Vec<ConnectionReport>,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Per request name, when a scenario sent several kinds of request; otherwise null.
    pub by_request: Option<Vec<RequestReport>>,
    /// The server's side of the run when it runs on this machine; null when not looked at
    /// (a remote target, or --no-server-view).
    pub server_view: Option<ServerViewReport>,
    /// What the server view shows (`server-cpu-bound`, `upstream-connection-per-request`);
    /// empty when nothing, or when the server was not looked at.
    pub findings: Vec<Finding>,
    /// What the run's own numbers suggest, with no experiment run, each with the command
    /// that proves it; empty when nothing stands out.
    pub suggestions: Vec<Suggestion>,
    /// Each `--fail-if` threshold held against the run (src/gate): crossed or not, and by how
    /// much; empty without `--fail-if`.
    pub thresholds: Vec<crate::gate::ThresholdResult>,
    /// The CPU of nodelay's worker threads over the run, as a share of their time (1.0: every
    /// worker busy throughout); null when not measured.
    pub generator_cpu_share: Option<f64>,
    /// This machine's ephemeral ports, read after a run whose connects found no free local
    /// port (`errors.ports_exhausted`); null otherwise.
    pub local_ports: Option<nodelay_host::LocalPorts>,
    /// An HTTP/2 run's streams, windows, the server's SETTINGS and gRPC statuses; null for
    /// HTTP/1.1 and tcp://.
    pub http2: Option<crate::model::http2::Http2Report>,
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
        let over_tls = settings.tls.is_some();
        let open_loop = settings.rate_per_second.is_some();
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let non_success = |counts: &mut dyn Iterator<Item = (u16, u64)>| {
            counts.filter(|(code, _)| !success.is_success(*code)).map(|(_, n)| n).sum::<u64>()
        };
        // A gRPC call that failed (non-OK grpc-status) under a successful HTTP status.
        let grpc_failed = stats.http2.as_ref().map_or(0, |h2| {
            h2.grpc_failed_by_http_status
                .iter()
                .filter(|(code, _)| success.is_success(**code))
                .map(|(_, n)| n)
                .sum()
        });
        let per_response =
            |total: u64| if stats.completed == 0 { 0.0 } else { total as f64 / stats.completed as f64 };
        let connect_ms = Percentiles::from_ns(&stats.connect_ns);
        let unanswered = nodelay_diagnose::unanswered_connects(
            stats.connects_unanswered.iter().map(|wait| wait.as_secs_f64() * 1e3),
            connect_ms.as_ref().map(|p| p.p50),
        );
        BenchReport {
            schema: Cow::Borrowed(BENCH_SCHEMA_ID),
            settings,
            requests_completed: stats.completed,
            non_success_responses: non_success(&mut stats.status_counts()) + grpc_failed,
            reused_connection_responses: stats.reused_connection_responses,
            requests_due_not_sent: due_not_sent,
            requests_unfinished: stats.unfinished,
            elapsed_s: elapsed.as_secs_f64(),
            requests_per_second: stats.completed as f64 / seconds,
            response_bytes: stats.response_bytes,
            transfer_bytes_per_second: stats.response_bytes as f64 / seconds,
            latency_ms: Percentiles::from_ns(&stats.latency_ns),
            path_rtt_ms: path_rtt_ms(stats.connections().filter_map(|c| c.tcp_info)),
            segments_resent: segments_resent(stats.connections().filter_map(|c| c.tcp_info)),
            retransmission_waits: retransmission_waits(stats),
            latency_uncorrected_ms: if open_loop {
                Percentiles::from_ns(&stats.latency_uncorrected_ns)
            } else {
                None
            },
            first_byte_ms: Percentiles::from_ns(&stats.first_byte_ns),
            read_gap_ms: Percentiles::from_ns(&stats.read_gap_ns),
            connect_ms,
            connects_at_syn_retry: nodelay_diagnose::SYN_RETRY_WINDOWS_MS
                .iter()
                .map(|(from_ms, to_ms, _)| {
                    let (from, to) = ((*from_ms * 1e6) as u64, (*to_ms * 1e6) as u64);
                    stats
                        .connect_ns
                        .iter_recorded()
                        .filter(|v| (from..to).contains(&v.value_iterated_to()))
                        .map(|v| v.count_at_value())
                        .sum::<u64>()
                })
                .sum(),
            connects_unanswered_at_end: unanswered.0,
            connect_unanswered_longest_ms: unanswered.1,
            tls_handshake_ms: Percentiles::from_ns(&stats.tls_handshake_ns()),
            tls: over_tls.then(|| TlsReport::of(stats)),
            latency_histogram: histogram_buckets(&stats.latency_ns, HISTOGRAM_BUCKETS),
            latency_spectrum: spectrum_ms(&stats.latency_ns),
            read_gap_spectrum: spectrum_ms(&stats.read_gap_ns),
            timeline: stats
                .timeline()
                .intervals()
                .map(|i| {
                    let (start_s, duration_s) = (i.start_offset.as_secs_f64(), i.duration.as_secs_f64());
                    IntervalPoint::of(start_s, duration_s, i.errors, &i.latency_ns)
                })
                .collect(),
            machine: Machine::this(),
            read_chunks_per_response: per_response(stats.read_chunks),
            status_counts: stats.status_counts().map(|(code, n)| (code.to_string(), n)).collect(),
            errors: ErrorKind::ALL
                .iter()
                .map(|&kind| (kind.as_str().to_string(), stats.errors(kind)))
                .collect(),
            error_examples: ErrorKind::ALL
                .iter()
                .filter_map(|&kind| Some((kind.as_str().to_string(), stats.error_example(kind)?.to_string())))
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
            server_view: None,
            findings: Vec::new(),
            suggestions: Vec::new(),
            thresholds: Vec::new(),
            generator_cpu_share: None,
            local_ports: None,
            http2: stats.http2.as_deref().map(crate::model::http2::Http2Report::of),
        }
    }

    /// What the machine's ephemeral ports looked like after connects found none free.
    pub fn with_local_ports(mut self, local_ports: Option<nodelay_host::LocalPorts>) -> Self {
        self.local_ports = local_ports;
        self
    }

    /// How busy nodelay's own workers were (their CPU as a share of their time).
    pub fn with_generator_share(mut self, generator_cpu_share: Option<f64>) -> Self {
        self.generator_cpu_share = generator_cpu_share;
        self
    }

    /// The figures the passive rules read, with the options besides the URL that reached the
    /// target and curl's and nodelay's words for the request sent (for the commands they show).
    pub fn suggestion_shape(
        &self,
        tls_options: Vec<(nodelay_flags::Flag, Option<String>)>,
        request_words: Vec<String>,
        nodelay_request_words: Vec<String>,
    ) -> RunShape {
        RunShape { tls_options, request_words, nodelay_request_words, ..self.run_shape() }
    }

    /// Adds what the diagnosis made of the run: the server view's findings and what the
    /// numbers suggest.
    pub fn with_diagnosis(mut self, diagnosis: Diagnosis) -> Self {
        self.findings = diagnosis.findings;
        self.suggestions = diagnosis.suggestions;
        self
    }

    /// The figures the passive rules read.
    fn run_shape(&self) -> RunShape {
        let pick = |p: &Option<Percentiles>, f: fn(&Percentiles) -> f64| p.as_ref().map(f);
        // The deciles of the total latency, from the spectrum.
        let latency_quantiles_ms = (1..=9)
            .filter_map(|decile| {
                let wanted = f64::from(decile) * 10.0;
                self.latency_spectrum.iter().find(|p| p.percentile >= wanted).map(|p| p.latency_ms)
            })
            .collect();
        RunShape {
            url: self.settings.url.clone(),
            tls_options: Vec::new(),
            request_words: Vec::new(),
            nodelay_request_words: Vec::new(),
            connections: self.settings.connections,
            threads: self.settings.threads,
            keep_alive: self.settings.keep_alive,
            responses: self.requests_completed,
            reused_responses: self.reused_connection_responses,
            non_success: self.non_success_responses,
            grpc_method: self.settings.http2.as_ref().and_then(|h2| h2.grpc_method.clone()),
            path_rtt_ms: self.path_rtt_ms,
            h2_streams_asked: self.settings.http2.as_ref().map(|h2| h2.streams_per_connection),
            h2_stream_limit: self.http2.as_ref().and_then(|h2| h2.peer_max_concurrent_streams),
            h2_queued_p50_ms: self.http2.as_ref().and_then(|h2| h2.queued_ms.map(|q| q.p50)),
            grpc_failures: self
                .http2
                .as_ref()
                .map_or_else(String::new, crate::model::http2::Http2Report::grpc_failures),
            read_gap_p50_ms: pick(&self.read_gap_ms, |p| p.p50),
            read_gap_p90_ms: pick(&self.read_gap_ms, |p| p.p90),
            read_chunks_mean: self.read_chunks_per_response,
            connect_p50_ms: pick(&self.connect_ms, |p| p.p50),
            connect_p90_ms: pick(&self.connect_ms, |p| p.p90),
            connect_timeouts: self.errors.get(ErrorKind::ConnectTimeout.as_str()).copied().unwrap_or(0),
            connects_at_syn_retry: self.connects_at_syn_retry,
            connects_unanswered_at_end: self.connects_unanswered_at_end,
            connect_unanswered_longest_ms: self.connect_unanswered_longest_ms,
            connect_p99_ms: pick(&self.connect_ms, |p| p.p99),
            first_byte_p50_ms: pick(&self.first_byte_ms, |p| p.p50),
            first_byte_p90_ms: pick(&self.first_byte_ms, |p| p.p90),
            first_byte_p99_ms: pick(&self.first_byte_ms, |p| p.p99),
            latency_quantiles_ms,
            generator_cpu_share: self.generator_cpu_share,
            generator_spins: self.settings.busy_poll,
            ports_exhausted: self.errors.get(ErrorKind::PortsExhausted.as_str()).copied().unwrap_or(0),
            local_ports: self.local_ports,
        }
    }

    /// Adds the server's side of the run (what it shows comes with the diagnosis).
    pub fn with_server_view(mut self, view: ServerViewReport) -> Self {
        self.server_view = Some(view);
        self
    }

    /// Failed attempts of every kind together.
    pub fn total_errors(&self) -> u64 {
        self.errors.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram_of(values_ns: &[u64]) -> Histogram<u64> {
        let mut histogram = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for value in values_ns {
            histogram.record(*value).unwrap();
        }
        histogram
    }

    #[test]
    fn buckets_span_min_to_max_and_count_every_value() {
        // 1 ms to 10 ms, one value per millisecond, and a second 10 ms.
        let values: Vec<u64> = (1..=10).map(|ms| ms * 1_000_000).chain([10_000_000]).collect();
        let buckets = histogram_buckets(&histogram_of(&values), 3);
        assert_eq!(buckets.len(), 3);
        assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), 11);
        assert!((buckets[0].up_to_ms - 4.0).abs() < 0.01, "{buckets:?}");
        assert!((buckets[2].up_to_ms - 10.0).abs() < 0.01, "{buckets:?}");
        // 1-4 ms, 5-7 ms, 8-10 ms and the second 10 ms.
        assert_eq!(buckets.iter().map(|b| b.count).collect::<Vec<_>>(), [4, 3, 4], "{buckets:?}");
    }

    #[test]
    fn alike_values_make_one_bucket_and_none_make_none() {
        let buckets = histogram_buckets(&histogram_of(&[5_000_000; 7]), HISTOGRAM_BUCKETS);
        assert_eq!(buckets.len(), 1);
        assert_eq!(buckets[0].count, 7);
        assert!(histogram_buckets(&histogram_of(&[]), HISTOGRAM_BUCKETS).is_empty());
    }

    #[test]
    fn percentiles_include_p95_and_stdev() {
        let values: Vec<u64> = (1..=100).map(|ms| ms * 1_000_000).collect();
        let p = Percentiles::from_ns(&histogram_of(&values)).unwrap();
        assert!((p.p95 - 95.0).abs() < 0.1, "{p:?}");
        assert!((p.stdev - 28.87).abs() < 0.1, "{p:?}");
        assert!((p.min - 1.0).abs() < 0.01 && (p.max - 100.0).abs() < 0.1, "{p:?}");
    }
}
