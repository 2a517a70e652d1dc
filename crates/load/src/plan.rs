//! A load made ready to run: the target and options validated into a workload and the
//! engine's settings (shared by bench and compare), run once into merged statistics, and
//! reported.

use crate::request::RequestOptions;
use crate::run::{Finished, RunObserver, run_engine};
use crate::target::parse_target;
use crate::usage::usage;
use crate::workload::{Workload, build_workload};
use anyhow::{Result, bail};
use nodelay_engine::{BusyPoll, EngineConfig, Framing, SocketOptions, Stats};
use nodelay_report::{BenchReport, BenchSettings, RunEnd, SuccessStatuses, TlsSettings};
use std::time::Duration;

/// How to load a target: what bench and compare were asked for, validated.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Concurrent connections.
    pub connections: u32,
    /// Stop after this many requests, completed or failed (else after `duration`).
    pub requests: Option<u64>,
    /// Stop after this long [default: 10 s unless `requests` is given].
    pub duration: Option<Duration>,
    /// Worker threads, each with its own event loop [default: one per core, at most one per
    /// connection].
    pub threads: Option<u32>,
    /// Open loop at this many requests per second in total (else a closed loop).
    pub rate: Option<f64>,
    /// What to send.
    pub request: RequestOptions,
    /// Longest wait for a complete response.
    pub timeout: Duration,
    /// Longest wait for a connection to open (TCP, then TLS).
    pub connect_timeout: Duration,
    /// A new connection for every request (`Connection: close`).
    pub no_keepalive: bool,
    /// HTTP statuses that count as success.
    pub success_status: SuccessStatuses,
    /// Length of one interval of the time series.
    pub interval: Duration,
    /// Poll without sleeping (see `BusyPoll`); `None` sleeps.
    pub busy_poll: Option<BusyPoll>,
    /// Wait for the sockets through io_uring where the kernel allows it.
    pub io_uring: bool,
}

const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// A target made ready to load: what to send, the engine's settings, and how the run is
/// described in reports. Shared by bench and compare.
pub struct Load {
    /// What is sent, to which address.
    pub workload: Workload,
    /// The engine's settings.
    pub config: EngineConfig,
    /// The settings as reports state them.
    pub settings: BenchSettings,
    /// Which statuses count as success.
    pub success: SuccessStatuses,
    /// `--io-uring` was asked for and this machine refused it: why (epoll runs instead).
    pub io_uring_refused: Option<String>,
    /// curl's words for the request's method, headers and body, for the commands a report
    /// suggests.
    pub curl_request: Vec<String>,
}

/// One run's merged figures and how it ended.
pub struct Measured {
    /// Every thread's statistics merged.
    pub stats: Stats,
    /// How long it ran and whether it was stopped early.
    pub end: RunEnd,
    /// The generator's worker threads' CPU over the run.
    pub worker_cpu: Duration,
}

impl Measured {
    /// Every thread's statistics (what `stats_of` takes out of its sink) merged, and how the
    /// run ended.
    pub(crate) fn of<S>(
        finished: &Finished<S>,
        request_kinds: usize,
        stats_of: impl Fn(&S) -> &Stats,
    ) -> Self {
        let mut stats = Stats::with_requests(request_kinds);
        for sink in &finished.output.sinks {
            stats.merge(stats_of(sink));
        }
        let end = RunEnd {
            elapsed: finished.output.elapsed,
            interrupted: finished.interrupted,
            due_not_sent: finished.output.due_not_sent,
        };
        Measured { stats, end, worker_cpu: finished.output.worker_cpu }
    }
}

/// Validates the target and the load options, without connecting.
pub fn plan_load(url: &str, load: &LoadOptions) -> Result<Load> {
    let target = parse_target(url)?;
    let workload = build_workload(&target, &load.request, !load.no_keepalive)?;
    let connections = load.connections as usize;
    let threads = load.threads.map_or_else(default_threads, |t| t as usize).min(connections);
    let io_uring_refused = load.io_uring.then(nodelay_engine::io_uring_unavailable).flatten();
    let config = EngineConfig {
        requests: workload.specs(),
        selection: workload.selection.clone(),
        framing: workload.framing.clone(),
        connections,
        threads,
        max_requests: load.requests,
        duration: if load.requests.is_some() {
            None
        } else {
            Some(load.duration.unwrap_or(DEFAULT_DURATION))
        },
        rate_per_second: load.rate,
        timeout: load.timeout,
        connect_timeout: load.connect_timeout,
        keep_alive: !load.no_keepalive,
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        interval: load.interval,
        tls: workload.tls.clone(),
        busy_poll: load.busy_poll.unwrap_or_default(),
        io_uring: load.io_uring && io_uring_refused.is_none(),
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let settings = BenchSettings {
        url: workload.url.clone(),
        address: workload.address.to_string(),
        method: workload.label.clone(),
        protocol: if matches!(workload.framing, Framing::Http { .. }) { "http" } else { "tcp" },
        connections,
        threads,
        requests: config.max_requests,
        duration_s: config.duration.map(|d| d.as_secs_f64()),
        rate_per_second: config.rate_per_second,
        keep_alive: config.keep_alive,
        write_split: load.request.write_split.clone().map(|split| split.0).unwrap_or_default(),
        timeout_s: config.timeout.as_secs_f64(),
        connect_timeout_s: config.connect_timeout.as_secs_f64(),
        success_status: load.success_status.to_string(),
        tls: workload.tls.as_ref().map(TlsSettings::of),
        busy_poll: config.busy_poll != BusyPoll::Off,
        busy_poll_after_us: match config.busy_poll {
            BusyPoll::After(window) => Some(window.as_secs_f64() * 1e6),
            _ => None,
        },
        io_uring: config.io_uring,
    };
    Ok(Load {
        workload,
        config,
        settings,
        success: load.success_status.clone(),
        io_uring_refused,
        curl_request: crate::curl::curl_request_words(&load.request),
    })
}

impl Load {
    /// Refuses, before any connection, a run that could never open its sockets.
    pub fn reserve_descriptors(&self) -> Result<()> {
        nodelay_engine::reserve_descriptors(self.config.connections as u64, self.config.threads as u64)
            .map(|_| ())
            .map_err(|shortage| usage(shortage.to_string()))
    }

    /// Runs the load once, told to `observer` as it goes. A target whose first connection
    /// fails is an error.
    pub fn measure(&self, observer: &mut dyn RunObserver) -> Result<Measured> {
        let request_kinds = self.config.requests.len();
        let finished = run_engine(&self.config, |_| Stats::with_requests(request_kinds), observer)?;
        if let Some(why) = &finished.unreachable {
            // The run's own first connection failed: one clear error, as before any load.
            bail!("cannot connect to {}: {why}", self.workload.address);
        }
        Ok(Measured::of(&finished, request_kinds, |stats| stats))
    }

    /// The report of one run (or of rounds merged into one `Measured`).
    pub fn report(&self, stats: &Stats, end: RunEnd) -> BenchReport {
        let names: Vec<String> = self.config.requests.iter().map(|r| r.name.clone()).collect();
        BenchReport::new(self.settings.clone(), &self.success, stats, &names, end)
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
