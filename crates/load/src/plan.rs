//! A load made ready to run: the target and options validated into a workload and the
//! engine's settings (shared by bench and compare), run once into merged statistics, and
//! reported.

use crate::request::RequestOptions;
use crate::run::{Finished, RunObserver, run_engine};
use crate::target::parse_target;
use crate::usage::usage;
use crate::workload::{Workload, build_workload};
use anyhow::{Result, bail};
use nodelay_engine::{BusyPoll, CONNECTIONS_TO_BATCH, EngineConfig, Framing, SocketOptions, Stats};
use nodelay_flags::Flag;
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
    /// Which loop waits for the sockets: `None` lets `choose_event_loop` pick (io_uring
    /// where its waits can batch and the kernel allows it), `Some(true)` requires io_uring
    /// (`--io-uring`), `Some(false)` takes epoll (`--epoll`).
    pub io_uring: Option<bool>,
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
    /// `--io-uring` was required and this machine refused it: why (epoll runs instead, and a
    /// warning says so; a default that falls back says it only in `settings.event_loop_why`).
    pub io_uring_refused: Option<String>,
    /// curl's words for the request's method, headers and body, for the commands a report
    /// suggests.
    pub curl_request: Vec<String>,
    /// nodelay's own words for the request (method, headers, body, HTTP/2, gRPC), for the
    /// nodelay commands a report suggests.
    pub nodelay_request: Vec<String>,
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
    let protocol = &load.request.protocol;
    let mut workload = build_workload(&target, &load.request, !load.no_keepalive)?;
    crate::protocol::speak_http2(&mut workload, protocol, crate::protocol::LOAD_WINDOW_BYTES)?;
    let http2 = workload.http2;
    if http2.is_some() && load.io_uring == Some(true) {
        return Err(usage(format!("{}: HTTP/2 runs wait with epoll", Flag::IoUring)));
    }
    let connections = load.connections as usize;
    let threads = load.threads.map_or_else(default_threads, |t| t as usize).min(connections);
    let wire = if http2.is_some() { Wire::Http2 } else { Wire::Http1 };
    let event_loop =
        choose_event_loop(load, connections, threads, wire, nodelay_engine::io_uring_unavailable);
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
        io_uring: event_loop.io_uring,
        batched_waits: event_loop.batched,
        http2,
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let settings = BenchSettings {
        url: workload.url.clone(),
        address: workload.address.to_string(),
        method: workload.label.clone(),
        protocol: if matches!(workload.framing, Framing::Http { .. }) { "http" } else { "tcp" }.into(),
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
        batched_waits: config.batched_waits || config.io_uring,
        event_loop: if config.io_uring { "io_uring" } else { "epoll" }.into(),
        event_loop_why: event_loop.why,
        http_version: match (&config.http2, &config.framing) {
            (Some(_), _) => Some("2".into()),
            (None, Framing::Http { .. }) => Some("1.1".into()),
            (None, _) => None,
        },
        http2: config.http2.as_ref().map(|settings| {
            nodelay_report::Http2RunSettings::of(settings, config.tls.is_some(), protocol.grpc.clone())
        }),
    };
    Ok(Load {
        workload,
        config,
        settings,
        success: load.success_status.clone(),
        io_uring_refused: event_loop.refused,
        curl_request: crate::curl::curl_request_words(&load.request),
        nodelay_request: crate::command_words::nodelay_request_words(&load.request),
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

/// What a run speaks, as far as its loop is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Http1,
    Http2,
}

/// The loop a run waits with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventLoop {
    io_uring: bool,
    /// The closed loop's waits hold out for several responses (`EngineConfig::batched_waits`).
    batched: bool,
    /// What `settings.event_loop_why` says: `default`, a flag, or why the default is epoll.
    why: String,
    /// `--io-uring` was required and refused: why.
    refused: Option<String>,
}

/// Which loop a run waits with, and whether its waits are batched. Waits batch where they
/// can: a closed loop (open loop sends on the pacer's clock and holds out for nothing) on
/// kept-alive connections (no wait holds out while a connection opens), with some thread
/// holding at least `CONNECTIONS_TO_BATCH` of them, not busy-polling. Elsewhere batching would
/// gain nothing and time responses by their arrival rather than by their read, as wrk and oha
/// do; those runs' figures stay what they were. The poller is io_uring by default where runs
/// batch (its waits cost fewest wake-ups), else epoll, which batches too where io_uring is
/// refused (`unavailable` says why, if it is). `--epoll` asks for the classic loop: epoll,
/// never batched. HTTP/2 runs have a loop of their own on epoll, batched on the same terms.
fn choose_event_loop(
    load: &LoadOptions,
    connections: usize,
    threads: usize,
    wire: Wire,
    unavailable: impl FnOnce() -> Option<String>,
) -> EventLoop {
    let most_per_thread = connections.div_ceil(threads.max(1));
    let batches = load.busy_poll.is_none()
        && load.rate.is_none()
        && !load.no_keepalive
        && most_per_thread >= CONNECTIONS_TO_BATCH;
    if wire == Wire::Http2 {
        let (batched, why) = match load.io_uring {
            Some(false) => (false, Flag::Epoll.to_string()),
            _ => (batches, "HTTP/2 runs wait with epoll".to_string()),
        };
        return EventLoop { io_uring: false, batched, why, refused: None };
    }
    let epoll =
        |why: &str| EventLoop { io_uring: false, batched: batches, why: why.to_string(), refused: None };
    let required = match load.io_uring {
        // The classic loop, for figures on wrk's and oha's clock: woken for every response
        // and timing it at its read.
        Some(false) => return EventLoop { batched: false, ..epoll(&Flag::Epoll.to_string()) },
        Some(true) => true,
        None if load.busy_poll.is_some() => return epoll(&Flag::BusyPoll.to_string()),
        None if load.rate.is_some() => return epoll("default for open loop"),
        None if load.no_keepalive => return epoll("default for a new connection per request"),
        None if most_per_thread < CONNECTIONS_TO_BATCH => {
            return epoll(&format!("default under {CONNECTIONS_TO_BATCH} connections per thread"));
        }
        None => false,
    };
    match unavailable() {
        Some(reason) => EventLoop {
            io_uring: false,
            batched: batches,
            why: format!("io_uring refused: {reason}"),
            refused: required.then_some(reason),
        },
        // io_uring's waits are always batched, even where `--io-uring` asks for it on a run that
        // batches nothing: they only change the clock then.
        None => EventLoop {
            io_uring: true,
            batched: true,
            why: if required { Flag::IoUring.to_string() } else { "default".to_string() },
            refused: None,
        },
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nodelay_report::SuccessStatuses;

    fn options(io_uring: Option<bool>) -> LoadOptions {
        LoadOptions {
            connections: 50,
            requests: None,
            duration: None,
            threads: Some(1),
            rate: None,
            request: RequestOptions::default(),
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            no_keepalive: false,
            success_status: SuccessStatuses::parse("2xx").unwrap(),
            interval: Duration::from_secs(1),
            busy_poll: None,
            io_uring,
        }
    }

    fn allowed() -> Option<String> {
        None
    }

    fn refused() -> Option<String> {
        Some("Operation not permitted (os error 1)".into())
    }

    fn chosen(load: &LoadOptions, connections: usize, threads: usize) -> (bool, String) {
        let choice = choose_event_loop(load, connections, threads, Wire::Http1, allowed);
        assert!(!choice.io_uring || choice.batched, "io_uring's waits are always batched");
        (choice.io_uring, choice.why)
    }

    fn batched(load: &LoadOptions, connections: usize, threads: usize) -> bool {
        choose_event_loop(load, connections, threads, Wire::Http1, refused).batched
    }

    #[test]
    fn io_uring_is_the_default_where_its_waits_can_batch() {
        let load = options(None);
        assert_eq!(chosen(&load, 50, 1), (true, "default".into()));
        assert_eq!(chosen(&load, 8, 2), (true, "default".into()));
        // 3 and 2 connections: no wait would ever hold out.
        assert_eq!(chosen(&load, 5, 2), (false, "default under 4 connections per thread".into()));
        assert!(!chosen(&load, 1, 1).0);
        let open = LoadOptions { rate: Some(100.0), ..options(None) };
        assert_eq!(chosen(&open, 50, 1), (false, "default for open loop".into()));
        let fresh = LoadOptions { no_keepalive: true, ..options(None) };
        assert_eq!(chosen(&fresh, 50, 1), (false, "default for a new connection per request".into()));
        let spin = LoadOptions { busy_poll: Some(nodelay_engine::BusyPoll::Always), ..options(None) };
        assert_eq!(chosen(&spin, 50, 1), (false, "--busy-poll".into()));
    }

    #[test]
    fn epoll_batches_where_io_uring_would() {
        // Refused io_uring: epoll batches the runs io_uring would have.
        assert!(batched(&options(None), 50, 1));
        assert!(batched(&options(None), 8, 2));
        assert!(!batched(&options(None), 5, 2));
        assert!(!batched(&LoadOptions { rate: Some(100.0), ..options(None) }, 50, 1));
        assert!(!batched(&LoadOptions { no_keepalive: true, ..options(None) }, 50, 1));
        let spin = LoadOptions { busy_poll: Some(nodelay_engine::BusyPoll::Always), ..options(None) };
        assert!(!batched(&spin, 50, 1));
        // --epoll is the classic loop, wrk's clock: never batched.
        let epoll = choose_event_loop(&options(Some(false)), 50, 1, Wire::Http1, allowed);
        assert!(!epoll.io_uring && !epoll.batched);
    }

    #[test]
    fn the_flags_choose_and_a_refusal_is_told() {
        // --io-uring wherever it is asked; --epoll even where io_uring would batch.
        assert_eq!(chosen(&options(Some(true)), 1, 1), (true, "--io-uring".into()));
        assert_eq!(chosen(&options(Some(false)), 50, 1), (false, "--epoll".into()));
        let refusal = "io_uring refused: Operation not permitted (os error 1)".to_string();
        let default = choose_event_loop(&options(None), 50, 1, Wire::Http1, refused);
        assert_eq!(
            default,
            EventLoop { io_uring: false, batched: true, why: refusal.clone(), refused: None }
        );
        let required = choose_event_loop(&options(Some(true)), 50, 1, Wire::Http1, refused);
        assert_eq!((required.io_uring, required.why), (false, refusal));
        assert_eq!(required.refused.as_deref(), Some("Operation not permitted (os error 1)"));
        // The kernel is asked only when io_uring could be taken.
        let never = || -> Option<String> { panic!("asked the kernel for an epoll run") };
        assert_eq!(choose_event_loop(&options(Some(false)), 50, 1, Wire::Http1, never).why, "--epoll");
        // HTTP/2 has a loop of its own, on epoll, whatever the rest would choose; it batches
        // on the same terms (TLS or not), but never under --epoll.
        let never = || -> Option<String> { panic!("asked the kernel for an HTTP/2 run") };
        let h2 = choose_event_loop(&options(None), 50, 1, Wire::Http2, never);
        assert!(!h2.io_uring && h2.batched, "{}", h2.why);
        let classic = choose_event_loop(&options(Some(false)), 50, 1, Wire::Http2, never);
        assert!(!classic.batched && classic.why == "--epoll");
        let few = choose_event_loop(&options(None), 2, 1, Wire::Http2, never);
        assert!(!few.batched);
    }
}
