//! Reading the server's side of a run: which process to watch (the one behind a local
//! target, or `--pid`), and its view or, in one line, why there is none.

use nodelay_host::{SamplerPace, ServerView, ServerWatch, Target};
use nodelay_report::ServerViewReport;
use std::net::{SocketAddr, UdpSocket};

/// Whether and how to read the server's side of a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerViewOptions {
    /// The server's process ID [default: the process listening on the target's port, when
    /// the target is on this machine].
    pub pid: Option<i32>,
    /// Do not read the server's side at all.
    pub no_server_view: bool,
}

/// A watch in progress, or why there is none.
pub enum Watching {
    /// Not looked at: a remote target, or --no-server-view.
    Off,
    /// `named`: the process was named by --pid, for a target on this port.
    On {
        /// The sampler running.
        watch: Box<ServerWatch>,
        /// The PID named and the target's port, to warn when that process did not listen there.
        named: Option<(i32, u16)>,
    },
    /// The server is local but cannot be read here: why.
    Unavailable(String),
}

/// Starts watching the server behind `address` (or `--pid`), when it runs on this machine,
/// its sampler looking at `pace`.
pub fn watch(address: SocketAddr, args: &ServerViewOptions, pace: SamplerPace) -> Watching {
    let target = match args.pid {
        _ if args.no_server_view => return Watching::Off,
        Some(pid) => Target::Pid(pid),
        None if is_this_machine(address) => Target::Address(address),
        None => return Watching::Off,
    };
    let named = args.pid.map(|pid| (pid, address.port()));
    match ServerWatch::start_paced(target, pace) {
        Ok(watch) => Watching::On { watch: Box::new(watch), named },
        Err(error) => Watching::Unavailable(error.to_string()),
    }
}

impl Watching {
    /// The run ends sooner than planned (interrupted): the sampler looks quickly from now.
    pub fn ending(&self) {
        if let Watching::On { watch, .. } = self {
            watch.ending();
        }
    }

    /// Ends the watch of a run that completed `requests` and made `own_connects` connect()s
    /// (failed ones included): the report (unless off) and the view behind it (when read).
    pub fn finish(self, requests: u64, own_connects: u64) -> (Option<ServerViewReport>, Option<ServerView>) {
        match self {
            Watching::Off => (None, None),
            Watching::Unavailable(why) => (Some(ServerViewReport::unavailable(why)), None),
            Watching::On { watch, named } => match watch.finish(own_connects) {
                Ok(view) => {
                    let mut report = ServerViewReport::new(&view, requests);
                    report.warnings.extend(named.and_then(|(pid, port)| not_listening(&view, pid, port)));
                    (Some(report), Some(view))
                }
                Err(error) => (Some(ServerViewReport::unavailable(error.to_string())), None),
            },
        }
    }
}

/// A warning when the process named by --pid did not listen on the target's port: its figures
/// may be another program's than the server's (a container's server behind a proxy's port is
/// the case --pid is for, and is said so).
fn not_listening(view: &ServerView, pid: i32, port: u16) -> Option<String> {
    if view.listening_ports.contains(&port) {
        return None;
    }
    let command = view.processes.iter().find(|p| p.pid == pid).map_or("?", |p| p.command.as_str());
    Some(format!(
        "PID {pid} ({command}) did not listen on port {port}, the target's: unless it serves the target \
         from behind another process (a container behind a proxy), these figures are not the server's"
    ))
}

/// The pace for a run of this length (`None`: bounded by a request count or an interrupt
/// only): relaxed when its end is known, so that the sampler looks quickly as it nears.
pub fn pace_for(duration: Option<std::time::Duration>, max_requests: Option<u64>) -> SamplerPace {
    match (duration, max_requests) {
        (Some(duration), None) => match std::time::Instant::now().checked_add(duration) {
            Some(end) => SamplerPace::RelaxedUntil(end),
            None => SamplerPace::Steady,
        },
        _ => SamplerPace::Steady,
    }
}

/// Whether `address` is one of this machine's: loopback, or an address a socket can bind.
pub fn is_this_machine(address: SocketAddr) -> bool {
    address.ip().is_loopback() || UdpSocket::bind(SocketAddr::new(address.ip(), 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn only_a_run_bounded_by_its_duration_alone_is_relaxed() {
        let before = Instant::now();
        let SamplerPace::RelaxedUntil(end) = pace_for(Some(Duration::from_secs(5)), None) else {
            panic!("a 5 s run is relaxed");
        };
        assert!(end >= before + Duration::from_secs(5) && end <= Instant::now() + Duration::from_secs(5));
        assert_eq!(pace_for(Some(Duration::from_secs(5)), Some(1000)), SamplerPace::Steady, "may end sooner");
        assert_eq!(pace_for(None, Some(1000)), SamplerPace::Steady);
        assert_eq!(pace_for(None, None), SamplerPace::Steady);
        assert_eq!(pace_for(Some(Duration::MAX), None), SamplerPace::Steady, "no end to plan for");
    }
}
