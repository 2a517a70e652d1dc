//! nodelay's load engine: per-thread event loops (epoll through mio) that keep connections
//! busy, time every `read()`, and emit typed records to per-thread sinks.
//!
//! The engine knows sockets, time and HTTP framing; it never prints. Callers turn the
//! records into statistics, diagnoses and reports.

#![warn(missing_docs)]

mod arrival;
mod config;
mod control;
mod cpu;
mod deadline_read;
mod expect_probe;
mod hold_probe;
mod idle_probe;
mod limits;
mod pacer;
pub mod path;
mod poller;
mod quantile;
mod record;
mod select;
mod sink;
mod stats;
mod tcp_info;
mod time;
mod timeline;
mod tls;
mod worker;

/// For bench/floor_client.rs, which must receive as `--io-uring` does; not an API.
#[doc(hidden)]
pub use arrival::{enable as enable_arrival_stamps, read_stamped};
pub use config::{BusyPoll, EngineConfig, RequestSpec, Selection, SocketOptions};
pub use control::Control;
pub use expect_probe::{ExpectAnswer, ExpectProbe, probe_expect_continue, with_expect_continue};
pub use hold_probe::{HoldProbe, probe_hold};
pub use idle_probe::{IdleProbe, probe_idle};
pub use limits::{
    DescriptorLimit, DescriptorShortage, descriptor_limit, descriptors_needed, reserve_descriptors,
};
pub use nodelay_wire::{Framing, RawFraming};
pub use pacer::{Claim, Pacer};
pub use quantile::{distribution_ns, quantile_ms};
pub use record::{ConnectionRecord, ErrorKind, ErrorRecord, PAUSE_MIN, ResponseRecord, TlsSummary};
pub use sink::{CollectingSink, RecordSink};
pub use stats::{RequestStats, Stats};
pub use tcp_info::{
    KERNEL_TCP_FIGURES, ListenQueue, TcpInfo, is_syn_sent, read_listen_queue, read_tcp_info, set_quickack,
};
pub use time::later;
pub use timeline::{DEFAULT_INTERVAL, IntervalFigures, Timeline};
pub use tls::{
    TlsClient, TlsOptions, TlsSetupError, TlsTrust, describe_tls_error, looks_like_tls_record, speaks_tls,
};

use std::time::{Duration, Instant, SystemTime};
use worker::{Worker, WorkerPlan};

/// Why `EngineConfig::io_uring` cannot work here (no io_uring, refused by
/// `kernel.io_uring_disabled` or a seccomp filter, or a kernel before 6.12), or `None`.
pub fn io_uring_unavailable() -> Option<String> {
    poller::Poller::uring(1).err().map(|e| e.to_string())
}

/// Per-thread sinks and how long the run took.
pub struct RunOutput<S> {
    /// Each thread's sink, in thread order.
    pub sinks: Vec<S>,
    /// From the start until the last thread's loop stopped (its connections' closing after).
    pub elapsed: Duration,
    /// Open loop (`--rate`): requests that fell due but were never sent because every
    /// connection was busy; 0 in closed loop.
    pub due_not_sent: u64,
    /// The worker threads' own CPU (user + system), summed: the generator's, without what
    /// runs beside it in the process (a server view's sampler, the progress bar).
    pub worker_cpu: Duration,
}

/// Runs the configured load. `make_sink(thread)` builds each thread's sink; `control` lets
/// the caller stop the run early and watch progress.
pub fn run<S, F>(config: &EngineConfig, control: &Control, make_sink: F) -> std::io::Result<RunOutput<S>>
where
    S: RecordSink + Send,
    F: Fn(usize) -> S + Sync,
{
    let threads = config.threads.clamp(1, config.connections.max(1));
    let start = Instant::now();
    let started_at = SystemTime::now();
    let results: Vec<std::io::Result<(worker::WorkerOutput<S>, Duration)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let plan = plan_for_thread(config, thread, threads);
                let make_sink = &make_sink;
                scope.spawn(move || {
                    let mut sink = make_sink(thread);
                    sink.run_started(config, started_at);
                    let output = Worker::new(config, control, plan, start, sink)?.run()?;
                    Ok((output, cpu::thread_cpu_time()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("engine worker panicked")).collect()
    });
    let outputs = results.into_iter().collect::<std::io::Result<Vec<_>>>()?;
    // Until the last loop stopped: closing the connections afterwards is no part of the run
    // (4000 of them took 58 ms, 2.9 % off the req/s of a 2 s run).
    let last_loop_end = outputs.iter().map(|(output, _)| output.loop_ended).max();
    let elapsed = last_loop_end.map_or_else(|| start.elapsed(), |end| end.saturating_duration_since(start));
    let due_not_sent = outputs.iter().map(|(output, _)| output.due_not_sent).sum();
    let worker_cpu = outputs.iter().map(|(_, cpu)| *cpu).sum();
    let sinks = outputs
        .into_iter()
        .map(|(mut output, _)| {
            output.sink.run_ended(elapsed);
            output.sink
        })
        .collect();
    Ok(RunOutput { sinks, elapsed, due_not_sent, worker_cpu })
}

/// Splits connections, request quota and rate across threads in proportion, so that the
/// parts add up exactly to the whole.
fn plan_for_thread(config: &EngineConfig, thread: usize, threads: usize) -> WorkerPlan {
    let connections = config.connections.max(1);
    let first_slot = connections * thread / threads;
    let end_slot = connections * (thread + 1) / threads;
    let share = |total: u64| {
        total * end_slot as u64 / connections as u64 - total * first_slot as u64 / connections as u64
    };
    WorkerPlan {
        thread,
        first_slot,
        connections: end_slot - first_slot,
        quota: config.max_requests.map(share),
        rate_per_second: config
            .rate_per_second
            .map(|rate| rate * (end_slot - first_slot) as f64 / connections as f64),
        // The threads' schedules interleave: thread k starts k slots of the whole rate in, so
        // 4 threads at 0.5 req/s in all send at 0, 2, 4 and 6 s, not all four at once.
        first_slot_after: config
            .rate_per_second
            .and_then(|rate| Duration::try_from_secs_f64(thread as f64 / rate).ok())
            .unwrap_or(Duration::ZERO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_plans_add_up() {
        let mut config = EngineConfig::new("127.0.0.1:1".parse().unwrap(), Vec::new());
        config.connections = 3;
        config.max_requests = Some(10);
        config.rate_per_second = Some(90.0);
        let plans: Vec<_> = (0..2).map(|t| plan_for_thread(&config, t, 2)).collect();
        assert_eq!(plans.iter().map(|p| p.connections).sum::<usize>(), 3);
        assert_eq!(plans.iter().map(|p| p.quota.unwrap()).sum::<u64>(), 10);
        let rate: f64 = plans.iter().map(|p| p.rate_per_second.unwrap()).sum();
        assert!((rate - 90.0).abs() < 1e-9);
        assert_eq!(plans[1].first_slot, plans[0].connections);
        // Thread 1 starts one slot of the whole rate (1/90 s) after thread 0.
        assert_eq!(plans[0].first_slot_after, Duration::ZERO);
        assert_eq!(plans[1].first_slot_after, Duration::from_secs_f64(1.0 / 90.0));
        config.rate_per_second = None;
        assert_eq!(plan_for_thread(&config, 1, 2).first_slot_after, Duration::ZERO);
    }
}
