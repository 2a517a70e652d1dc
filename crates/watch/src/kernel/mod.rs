//! `nodelay watch` from the kernel: eBPF programs on the tracepoints where the kernel sends
//! and acknowledges (nodelay-ebpf's `HoldWatch`) time each Nagle hold, class it by the peer's
//! share of it, and sum it per sending process and pair of ports in a map; once a second the
//! map is read ([`groups`]) into the same findings, events and metrics as a capture's. The
//! process is the one that called `send()`, exactly, whenever its connection was opened; no
//! packet is copied to user space.

pub mod groups;

use crate::error::{WatchEnd, WatchError};
use crate::event::{Event, Mode, ModeLine, Summary, TICK};
use crate::prometheus::{Holder, STALL_BUCKETS, STALL_BUCKETS_SECONDS, WatchMetrics};
use groups::{HostSockets, KernelFindings};
use nodelay_ebpf::{HOLD_BUCKETS, HoldThresholds, HoldWatch};
use nodelay_tcp::timers::{KERNEL_ROUND_TRIP_SLACK, MAX_ACK_DELAY, MIN_ACK_DELAY, MIN_ROUND_TRIP_HOLD};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest wait before looking at `stop` again.
const STOP_POLL: Duration = Duration::from_millis(100);

/// The thresholds the programs class holds by: a capture's (nodelay-tcp's timers).
pub fn hold_thresholds() -> HoldThresholds {
    HoldThresholds {
        min_ack_delay: MIN_ACK_DELAY,
        max_ack_delay: MAX_ACK_DELAY,
        min_round_trip_hold: MIN_ROUND_TRIP_HOLD,
        round_trip_slack: KERNEL_ROUND_TRIP_SLACK,
        bucket_bounds: STALL_BUCKETS_SECONDS.map(Duration::from_secs_f64),
    }
}

// The kernel buckets each hold by the histogram's bounds: one bucket each, and +Inf.
const _: () = assert!(STALL_BUCKETS == HOLD_BUCKETS);

/// What the kernel source sees, for the mode line.
pub const SEES: &str = "every send on a socket with Nagle on and the ACK that releases what it held: holds timed \
                        in the kernel, named by the process that sent; no packet is copied";

/// What a kernel watch is asked for (the caller checked the options).
pub struct KernelWatchOptions {
    /// Only this process's connections.
    pub pid: Option<u32>,
    /// Only connections with one of these ports on either side; empty: all.
    pub ports: Vec<u16>,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

/// Runs the kernel watch with the programs `watch` attached, until `stop()` or the duration.
pub fn run(
    watch: HoldWatch,
    options: KernelWatchOptions,
    mode: ModeLine,
    metrics: Option<Arc<WatchMetrics>>,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn FnMut(&Event) -> io::Result<()>,
) -> Result<WatchEnd, WatchError> {
    debug_assert_eq!(mode.mode, Mode::Ebpf);
    if let Some(metrics) = &metrics {
        metrics.mode(crate::prometheus::Mode::Ebpf);
    }
    sink(&Event::Mode(mode)).map_err(WatchError::Output)?;
    let started = Instant::now();
    let deadline = options.duration.map(|d| started + d);
    let mut findings = KernelFindings::new(options.pid, options.ports);
    let mut next_tick = started + TICK;
    loop {
        let now = Instant::now();
        if stop() || deadline.is_some_and(|d| now >= d) {
            break;
        }
        if now >= next_tick {
            read(&watch, &mut findings, &metrics)?;
            for stalls in findings.new_findings() {
                sink(&Event::Finding(stalls)).map_err(WatchError::Output)?;
            }
            sink(&Event::Summary(summary(&findings, started))).map_err(WatchError::Output)?;
            next_tick = (next_tick + TICK).max(now);
        }
        let until = deadline.map_or(next_tick, |d| d.min(next_tick));
        std::thread::sleep(until.saturating_duration_since(Instant::now()).min(STOP_POLL));
    }
    read(&watch, &mut findings, &metrics)?;
    for stalls in findings.new_findings() {
        sink(&Event::Finding(stalls)).map_err(WatchError::Output)?;
    }
    let summary = summary(&findings, started);
    let found = !summary.is_healthy();
    sink(&Event::Final(summary)).map_err(WatchError::Output)?;
    Ok(WatchEnd { findings: found })
}

/// One read of the programs' map into the findings, and what is new into the metrics.
fn read(
    watch: &HoldWatch,
    findings: &mut KernelFindings,
    metrics: &Option<Arc<WatchMetrics>>,
) -> Result<(), WatchError> {
    let read = watch.read().map_err(|e| WatchError::Failed(format!("reading the kernel's counts: {e}")))?;
    let deltas = findings.update(&read, &mut HostSockets);
    let Some(metrics) = metrics else { return Ok(()) };
    for delta in deltas {
        let holder = Holder { command: &delta.process.command, pid: Some(delta.process.pid) };
        match delta.finding {
            Some(finding) => metrics.stalls_summed(
                finding.as_str(),
                holder,
                delta.port,
                delta.side.role(),
                delta.count,
                &delta.buckets,
                delta.held,
            ),
            None => metrics.exchanges(holder, delta.port, delta.side.role(), delta.count),
        }
    }
    Ok(())
}

fn summary(findings: &KernelFindings, started: Instant) -> Summary {
    Summary {
        elapsed_s: started.elapsed().as_secs_f64(),
        packets: None,
        flows: None,
        kernel: Some(findings.counts),
        exchanges: findings.exchanges,
        findings: findings.all(),
        stalls_not_grouped: findings.not_grouped,
        stalls_of_other_processes: findings.other_processes,
    }
}
