//! The sock_diag-only mode, for a host where watch may not capture packets (no CAP_NET_RAW):
//! every second the host crate's socket survey lists the TCP sockets that can stall (Nagle on,
//! a delayed ACK pending, bytes sent and not yet acknowledged), grouped by process and local
//! port. It sees socket states, not packets: it cannot time a stall nor prove one happened.

use crate::args::WatchArgs;
use crate::event::{Event, Mode, ModeLine};
use crate::run::{TICK, WatchEnd, WatchError};
use serde::Serialize;
use std::io;
use std::time::{Duration, Instant};

/// What the sock_diag mode can see, and what it cannot: the mode line says it.
pub const SEES: &str = "socket states every second: per process and port, the TCP sockets with \
                        TCP_NODELAY off, a delayed ACK pending and bytes unacknowledged; not \
                        packets, so a stall is neither timed nor proven";

/// One process's sockets on one local port, as the survey saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurveyGroup {
    /// The process, when its descriptors could be read.
    pub pid: Option<u32>,
    /// Its command name.
    pub command: Option<String>,
    /// The local port.
    pub port: u16,
    /// Connected sockets.
    pub sockets: u64,
    /// Of those, with TCP_NODELAY off (Nagle on: can hold a small write).
    pub nagle_on: u64,
    /// Of those, with a delayed ACK pending now.
    pub delayed_ack_pending: u64,
    /// Bytes sent and not yet acknowledged, summed.
    pub unacked_bytes: u64,
    /// Bytes written and not yet sent, summed (what Nagle holds shows here).
    pub notsent_bytes: u64,
}

/// One second's survey.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Survey {
    /// Seconds since watch started.
    pub elapsed_s: f64,
    /// TCP sockets surveyed.
    pub sockets: u64,
    /// The groups with a socket that can stall, most sockets first.
    pub groups: Vec<SurveyGroup>,
    /// Processes whose descriptors could not be read (their sockets have no process).
    pub unreadable_processes: u64,
}

/// Whether this process may capture packets; why not when it may not.
pub fn capture_allowed() -> Result<(), String> {
    // TODO(host): nodelay_host::socket_survey::capture_allowed() once it lands; until then
    // opening the packet socket answers (EPERM).
    Ok(())
}

/// Runs the survey every second until `stop()` or the duration.
pub fn run(
    args: &WatchArgs,
    ports: &[u16],
    why: &str,
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
    };
    sink(&Event::Mode(mode)).map_err(WatchError::Output)?;
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + d);
    let mut findings = false;
    let mut next = started;
    loop {
        let now = Instant::now();
        if stop() || deadline.is_some_and(|d| now >= d) {
            break;
        }
        if now >= next {
            let survey = survey(started, ports, args.pid);
            findings |= !survey.groups.is_empty();
            sink(&Event::Survey(survey)).map_err(WatchError::Output)?;
            next += TICK;
        }
        let until = deadline.map_or(next, |d| d.min(next));
        std::thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
    }
    sink(&Event::FinalSurvey(survey(started, ports, args.pid))).map_err(WatchError::Output)?;
    Ok(WatchEnd { findings })
}

/// One survey of the host's sockets.
fn survey(started: Instant, _ports: &[u16], _pid: Option<u32>) -> Survey {
    // TODO(host): nodelay_host::socket_survey once it lands.
    Survey {
        elapsed_s: started.elapsed().as_secs_f64(),
        sockets: 0,
        groups: Vec::new(),
        unreadable_processes: 0,
    }
}
