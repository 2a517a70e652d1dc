//! nodelay's load engine: per-thread event loops (epoll through mio) that keep connections
//! busy, time every `read()`, and emit typed records to per-thread sinks (shared by groups of
//! threads when there are many more threads than cores).
//!
//! The engine knows sockets, time and HTTP framing; it never prints. Callers turn the
//! records into statistics, diagnoses and reports.

#![warn(missing_docs)]

mod arrival;
mod config;
mod connect;
mod control;
mod cpu;
mod deadline_read;
mod expect_probe;
mod h2;
mod h2_stats;
mod hold_probe;
mod idle_probe;
mod limits;
mod pacer;
mod poller;
mod record;
mod select;
mod sink;
mod stats;
mod timeline;
mod tls;
mod worker;

/// For bench/floor_client.rs, which must receive as `--io-uring` does; not an API.
#[doc(hidden)]
pub use arrival::{enable as enable_arrival_stamps, read_stamped};
pub use config::{BusyPoll, EngineConfig, Http2Settings, RequestSpec, Selection, SocketOptions};
pub use control::Control;
pub use expect_probe::{ExpectAnswer, ExpectProbe, probe_expect_continue, with_expect_continue};
/// For fuzz/fuzz_targets/h2_session.rs and h2_frames.rs; not an API.
#[doc(hidden)]
pub use h2::drive_session as fuzz_drive_h2_session;
#[doc(hidden)]
pub use h2::read_frames as fuzz_read_h2_frames;
pub use h2_stats::Http2Stats;
pub use hold_probe::{HoldProbe, probe_hold};
pub use idle_probe::{IdleProbe, probe_idle};
pub use limits::{
    DescriptorLimit, DescriptorShortage, descriptor_limit, descriptors_needed, reserve_descriptors,
};
pub use nodelay_wire::{Framing, RawFraming};
pub use pacer::{Claim, Pacer};
pub use record::{
    ConnectionRecord, ErrorKind, ErrorRecord, Http2Connection, PAUSE_MIN, PeerSettings, ResponseRecord,
    StreamRecord, TlsSummary,
};
pub use sink::{CollectingSink, RecordSink};
pub use stats::{RequestStats, Stats};
pub use timeline::{DEFAULT_INTERVAL, IntervalFigures, Timeline};
pub use tls::{
    TlsClient, TlsOptions, TlsSetupError, TlsTrust, alpn_choice, describe_tls_error, looks_like_tls_record,
    speaks_tls,
};

use sink::SharedSink;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};
pub use worker::CONNECTIONS_TO_BATCH;
use worker::{Worker, WorkerPlan};

/// Why `EngineConfig::io_uring` cannot work here (no io_uring, refused by
/// `kernel.io_uring_disabled` or a seccomp filter, or a kernel before 6.12), or `None`.
pub fn io_uring_unavailable() -> Option<String> {
    poller::Poller::uring(1).err().map(|e| e.to_string())
}

/// The run's sinks and how long the run took.
pub struct RunOutput<S> {
    /// Each thread's sink, in thread order; or, with more threads than [`sink_count`] gives
    /// sinks, each group of threads' sink, in order.
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

/// Threads that each own their sink, at least: one per core if there are more cores. A
/// sink of run statistics holds ~0.6 MiB of histograms once it has timed a few loopback
/// responses (`Stats`), so 1024 threads with one each peaked at 732 MiB; more sinks than cores
/// buy no parallelism, and these few keep the usual runs lock-free.
const OWN_SINKS_MIN: usize = 16;

/// How many sinks a run of `threads` threads has: one per thread up to 16 (or one per core,
/// if more); past that, threads are grouped, in order, onto that many sinks.
pub fn sink_count(threads: usize) -> usize {
    if threads <= OWN_SINKS_MIN {
        // Without asking for the cores (cgroup files): the usual run has nothing to share.
        return threads.max(1);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads.min(OWN_SINKS_MIN.max(cores))
}

/// Runs the configured load. `make_sink(k)` builds sink `k` of [`sink_count`]: each thread's
/// own, or a group of threads' shared one (built before the threads start); `control` lets
/// the caller stop the run early and watch progress.
pub fn run<S, F>(config: &EngineConfig, control: &Control, make_sink: F) -> std::io::Result<RunOutput<S>>
where
    S: RecordSink + Send,
    F: Fn(usize) -> S + Sync,
{
    let threads = config.threads.clamp(1, config.connections.max(1));
    let sinks = sink_count(threads);
    let start = Instant::now();
    let started_at = SystemTime::now();
    let started = |mut sink: S| {
        sink.run_started(config, started_at);
        sink
    };
    let shared: Vec<Mutex<S>> = match sinks < threads {
        true => (0..sinks).map(|k| Mutex::new(started(make_sink(k)))).collect(),
        false => Vec::new(),
    };
    let results: Vec<std::io::Result<(LoopEnd, Option<S>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let plan = plan_for_thread(config, thread, threads);
                let (make_sink, shared, started) = (&make_sink, &shared, &started);
                scope.spawn(move || match shared.get(thread * sinks / threads) {
                    None => {
                        let sink = started(make_sink(thread));
                        let (end, sink) = run_loop(config, control, plan, start, sink)?;
                        Ok((end, Some(sink)))
                    }
                    Some(shared) => {
                        // One worker loop's code for every sink type (the lock costs more than
                        // the dynamic call).
                        let mut handle = SharedSink::new(shared);
                        let (end, _) =
                            run_loop(config, control, plan, start, &mut handle as &mut dyn RecordSink)?;
                        handle.finish();
                        Ok((end, None))
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("engine worker panicked")).collect()
    });
    let outputs = results.into_iter().collect::<std::io::Result<Vec<_>>>()?;
    // Until the last loop stopped: closing the connections afterwards is no part of the run
    // (4000 of them took 58 ms, 2.9 % off the req/s of a 2 s run).
    let last_loop_end = outputs.iter().map(|(end, _)| end.loop_ended).max();
    let elapsed = last_loop_end.map_or_else(|| start.elapsed(), |end| end.saturating_duration_since(start));
    let due_not_sent = outputs.iter().map(|(end, _)| end.due_not_sent).sum();
    let worker_cpu = outputs.iter().map(|(end, _)| end.cpu).sum();
    let shared = shared.into_iter().map(|sink| sink.into_inner().unwrap_or_else(PoisonError::into_inner));
    let sinks = outputs
        .into_iter()
        .filter_map(|(_, sink)| sink)
        .chain(shared)
        .map(|mut sink| {
            sink.run_ended(elapsed);
            sink
        })
        .collect();
    Ok(RunOutput { sinks, elapsed, due_not_sent, worker_cpu })
}

/// What a thread's loop tells the run, beside its records.
struct LoopEnd {
    /// When the loop stopped, before its connections were closed.
    loop_ended: Instant,
    due_not_sent: u64,
    /// The thread's CPU over the run.
    cpu: Duration,
}

/// Runs one thread's loop to its end; hands back its sink.
fn run_loop<T: RecordSink>(
    config: &EngineConfig,
    control: &Control,
    plan: WorkerPlan,
    start: Instant,
    sink: T,
) -> std::io::Result<(LoopEnd, T)> {
    let output = match config.http2 {
        Some(_) => h2::H2Worker::new(config, control, plan, start, sink)?.run()?,
        None => Worker::new(config, control, plan, start, sink)?.run()?,
    };
    let end = LoopEnd {
        loop_ended: output.loop_ended,
        due_not_sent: output.due_not_sent,
        cpu: cpu::thread_cpu_time(),
    };
    Ok((end, output.sink))
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
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener};

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

    /// A server that accepts `connections` connections and answers every request head on
    /// them with a small keep-alive response, a thread per connection, until the client closes.
    fn answering_server(connections: usize) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(connections) {
                let mut stream = stream.unwrap();
                std::thread::spawn(move || {
                    let (mut buffer, mut matched) = ([0u8; 4096], 0);
                    while let Ok(n @ 1..) = stream.read(&mut buffer) {
                        for &byte in &buffer[..n] {
                            matched = if byte == b"\r\n\r\n"[matched] {
                                matched + 1
                            } else {
                                usize::from(byte == b'\r')
                            };
                            if matched == 4 {
                                matched = 0;
                                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                                if stream.write_all(ok).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        address
    }

    #[test]
    fn threads_past_the_sink_count_share_sinks_and_every_record_arrives() {
        let threads = sink_count(usize::MAX) + 8;
        let mut config =
            EngineConfig::new(answering_server(threads), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec());
        (config.connections, config.threads) = (threads, threads);
        (config.max_requests, config.duration) = (Some(10 * threads as u64), None);
        let output = run(&config, &Control::new(threads), |_| sink::CollectingSink::default()).unwrap();

        assert_eq!(output.sinks.len(), sink_count(threads));
        assert!(output.sinks.len() < threads);
        let errors: Vec<_> = output.sinks.iter().flat_map(|sink| &sink.errors).collect();
        assert!(errors.is_empty(), "{errors:?}");
        let responses: usize = output.sinks.iter().map(|sink| sink.responses.len()).sum();
        assert_eq!(responses, 10 * threads);
        // A slot's records are all in one sink, in the order they happened.
        let mut slots: Vec<u32> = Vec::new();
        for sink in &output.sinks {
            for record in &sink.connections {
                let sequences: Vec<u32> = sink
                    .responses
                    .iter()
                    .filter(|r| r.connection == record.connection)
                    .map(|r| r.sequence_on_connection)
                    .collect();
                assert_eq!(sequences, (0..10).collect::<Vec<_>>(), "slot {}", record.connection);
                slots.push(record.connection);
            }
        }
        slots.sort();
        assert_eq!(slots, (0..threads as u32).collect::<Vec<_>>());
    }
}
