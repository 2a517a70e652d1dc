//! The sock_diag-only mode, for a host where watch may not capture packets (no CAP_NET_RAW):
//! every second the host crate's socket survey lists the TCP sockets that can stall (Nagle on,
//! a delayed ACK pending, bytes sent and not yet acknowledged), grouped by process and local
//! port. It sees socket states, not packets: it cannot time a stall nor prove one happened.

use crate::args::WatchOptions;
use crate::error::{WatchEnd, WatchError};
use crate::event::{Event, Mode, ModeLine, Survey, TICK};
use nodelay_host::socket_survey::{self, ProcessSockets, SurveyFilter, Surveyor};
use std::io;
use std::time::{Duration, Instant};

/// What the sock_diag mode can see, and what it cannot: the mode line says it.
pub const SEES: &str = "socket states every second (TCP_NODELAY, a small write held back, a delayed \
                        ACK owed, bytes unacknowledged), not packets: no stall is timed or proven";

/// Whether this process may capture packets; why not when it may not.
pub fn capture_allowed() -> Result<(), String> {
    socket_survey::capture_allowed()
}

/// Runs the survey every second until `stop()` or the duration.
pub fn run(
    args: &WatchOptions,
    ports: &[u16],
    why: &str,
    metrics_url: Option<String>,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn FnMut(&Event) -> io::Result<()>,
) -> Result<WatchEnd, WatchError> {
    let mode = ModeLine {
        mode: Mode::SockDiag,
        interface: None,
        ports: ports.to_vec(),
        pid: args.pid,
        why: format!("no packet capture: {why}"),
        sees: SEES.into(),
        metrics_url,
    };
    sink(&Event::Mode(mode)).map_err(WatchError::Output)?;
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + d);
    // A socket's owner and options are read once while it lives, not every second.
    let mut surveyor = Surveyor::new(SurveyFilter { ports: ports.to_vec(), pid: args.pid });
    let mut findings = false;
    let mut before = None;
    let mut next = started;
    loop {
        let now = Instant::now();
        if stop() || deadline.is_some_and(|d| now >= d) {
            break;
        }
        if now >= next {
            let survey = take(started, &mut surveyor, &mut before)?;
            findings |= survey.nagle_prone() > 0;
            sink(&Event::Survey(survey)).map_err(WatchError::Output)?;
            next += TICK;
        }
        let until = deadline.map_or(next, |d| d.min(next));
        std::thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
    }
    let last = take(started, &mut surveyor, &mut before)?;
    findings |= last.nagle_prone() > 0;
    sink(&Event::FinalSurvey(last)).map_err(WatchError::Output)?;
    Ok(WatchEnd { findings })
}

/// One survey, the delayed ACKs counted since `before` (which it replaces).
fn take(
    started: Instant,
    surveyor: &mut Surveyor,
    before: &mut Option<socket_survey::Survey>,
) -> Result<Survey, WatchError> {
    let survey = surveyor.survey().map_err(|e| WatchError::Failed(format!("surveying the sockets: {e}")))?;
    let delayed_acks_per_s = before.as_ref().and_then(|before| {
        let change = socket_survey::Survey::compare(before, &survey);
        Some(change.delayed_acks? as f64 / change.interval_s.max(1e-3))
    });
    let mut processes: Vec<ProcessSockets> =
        survey.by_process().into_iter().filter(|p| p.nodelay_off > 0 || p.nagle_holding > 0).collect();
    processes.sort_by_key(|p| (std::cmp::Reverse((p.nagle_prone, p.nagle_holding, p.nodelay_off)), p.pid));
    let report = Survey {
        elapsed_s: started.elapsed().as_secs_f64(),
        sockets: survey.sockets.len() as u64,
        processes,
        unreadable_processes: survey.unreadable_processes as u64,
        delayed_acks_per_s,
    };
    *before = Some(survey);
    Ok(report)
}
