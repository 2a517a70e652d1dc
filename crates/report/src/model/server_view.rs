//! The server's side of a run, as reported by bench and doctor: CPU per request, its
//! busiest threads, the upstream connections it opened, CPU pressure, and warnings; or, in
//! one line, why it could not be read. Its serde form is part of the bench and doctor JSON
//! contracts (`server_view`).

use nodelay_diagnose::{server_load, server_warnings};
use nodelay_host::{ProcessInfo, ServerView};
use serde::{Deserialize, Serialize};

/// Busiest threads listed.
const THREADS_SHOWN: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The server's side of a run, read from /proc on this machine: its CPU, threads and upstream
/// connections.
pub struct ServerViewReport {
    /// False when the server's processes could not be read; `why_unavailable` says why.
    pub available: bool,
    /// Why the server's processes could not be read; null when they were.
    pub why_unavailable: Option<String>,
    /// Every process holding the listening socket.
    pub processes: Vec<ProcessInfo>,
    /// How long the server was watched, in seconds.
    pub wall_s: f64,
    /// Requests completed while the server was watched.
    pub requests: u64,
    /// CPU time in user mode, all the processes, in milliseconds.
    pub cpu_user_ms: f64,
    /// CPU time in the kernel, all the processes, in milliseconds.
    pub cpu_system_ms: f64,
    /// CPU time per request completed, in milliseconds; null when none completed.
    pub cpu_per_request_ms: Option<f64>,
    /// The processes' CPU as cores kept busy over the run (1.0: one core all the time).
    pub cores_busy: f64,
    /// Requests/s the server's CPU could sustain at this cost (its busiest thread, or all cores).
    pub ceiling_per_second: Option<f64>,
    /// The ceiling is set by one thread doing most of the work; otherwise by all the cores.
    pub ceiling_one_thread: bool,
    /// The ceiling is one core's although the machine has more: the runtime runs one thread
    /// at a time (CPython's GIL).
    pub ceiling_one_core: bool,
    /// The busiest threads, most CPU first (at most 3).
    pub threads: Vec<ThreadReport>,
    /// Upstream destinations the server connected to during the run.
    pub upstreams: Vec<UpstreamReport>,
    /// connect()s in the server's network namespace during the run by others than nodelay
    /// (`Tcp: ActiveOpens`): an upper bound of the connections the server opened.
    pub namespace_connects_by_others: Option<u64>,
    /// Share of the run during which some task on this machine waited for a CPU.
    pub cpu_pressure_share: Option<f64>,
    /// The listening socket's accept queue and the handshakes dropped on it during the run.
    pub listen_queue: Option<nodelay_host::ListenQueueView>,
    /// CPUs online on this machine.
    pub online_cpus: u32,
    /// What the view's figures warn of, in words.
    pub warnings: Vec<String>,
    /// Parts that could not be read (a process that ended during the run, ...).
    pub unread: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One thread of the server and the CPU it used.
pub struct ThreadReport {
    /// Its process's id.
    pub pid: i32,
    /// The thread's id.
    pub tid: i32,
    /// The thread's name (comm).
    pub name: String,
    /// CPU time it used, in milliseconds.
    pub on_cpu_ms: f64,
    /// Shares of the run, 0 to 1.
    pub on_cpu_share: f64,
    /// Share of the run it spent runnable, waiting for a CPU.
    pub waiting_for_cpu_share: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// Connections the server opened to one upstream destination during the run.
pub struct UpstreamReport {
    /// The destination, IP:port.
    pub destination: String,
    /// TCP connections to it that appeared during the run (new 4-tuples, TIME-WAIT included).
    pub opened: u64,
    /// `opened` per request completed; null when none completed.
    pub opened_per_request: Option<f64>,
    /// Connections to it established at the end of the run.
    pub open_at_end: u64,
    /// Segments sent on connections that existed at both the start and the end (a keep-alive pool).
    pub pooled_segments_out: u64,
    /// The connects went round the local port range: `opened` counts each 4-tuple once and
    /// is a lower bound, maybe far under the true count.
    pub ports_cycled: bool,
}

impl ServerViewReport {
    /// The report of a server view, `requests` being the responses completed while it was taken.
    pub fn new(view: &ServerView, requests: u64) -> Self {
        let load = server_load(view, requests);
        let wall_us = view.wall_us.max(1) as f64;
        let threads = view
            .threads
            .iter()
            .take(THREADS_SHOWN)
            .map(|t| ThreadReport {
                pid: t.pid,
                tid: t.tid,
                name: t.name.clone(),
                on_cpu_ms: nodelay_tcp::time::ms_from_us(t.on_cpu_us),
                on_cpu_share: t.on_cpu_us as f64 / wall_us,
                waiting_for_cpu_share: t.waiting_for_cpu_us as f64 / wall_us,
            })
            .collect();
        let upstreams = view
            .upstreams
            .iter()
            .map(|u| UpstreamReport {
                destination: u.destination.to_string(),
                opened: u.opened,
                opened_per_request: (requests > 0).then(|| u.opened as f64 / requests as f64),
                open_at_end: u.open_at_end,
                pooled_segments_out: u.pooled_segments_out,
                ports_cycled: u.ports_cycled,
            })
            .collect();
        ServerViewReport {
            available: true,
            why_unavailable: None,
            processes: view.processes.clone(),
            wall_s: view.wall_us as f64 / 1e6,
            requests,
            cpu_user_ms: nodelay_tcp::time::ms_from_us(view.cpu_user_us),
            cpu_system_ms: nodelay_tcp::time::ms_from_us(view.cpu_system_us),
            cpu_per_request_ms: load.cpu_per_request_ms,
            cores_busy: load.cores_busy,
            ceiling_per_second: load.ceiling_per_second,
            ceiling_one_thread: load.main_thread,
            ceiling_one_core: !load.main_thread && nodelay_diagnose::runs_one_thread_at_a_time(view),
            threads,
            upstreams,
            namespace_connects_by_others: view.namespace_connects_by_others,
            cpu_pressure_share: view.cpu_pressure.map(|p| p.some_waiting_share),
            listen_queue: view.listen_queue,
            online_cpus: view.online_cpus,
            warnings: server_warnings(view),
            unread: view.unread.clone(),
        }
    }

    /// The view could not be read: `why` in a few words.
    pub fn unavailable(why: String) -> Self {
        ServerViewReport {
            available: false,
            why_unavailable: Some(why),
            processes: Vec::new(),
            wall_s: 0.0,
            requests: 0,
            cpu_user_ms: 0.0,
            cpu_system_ms: 0.0,
            cpu_per_request_ms: None,
            cores_busy: 0.0,
            ceiling_per_second: None,
            ceiling_one_thread: false,
            ceiling_one_core: false,
            threads: Vec::new(),
            upstreams: Vec::new(),
            namespace_connects_by_others: None,
            cpu_pressure_share: None,
            listen_queue: None,
            online_cpus: 0,
            warnings: Vec::new(),
            unread: Vec::new(),
        }
    }

    /// `node (PID 4242)`, or `nginx (PIDs 10, 11)`.
    pub fn process_names(&self) -> String {
        let Some(first) = self.processes.first() else { return "the server".into() };
        let pids: Vec<String> = self.processes.iter().map(|p| p.pid.to_string()).collect();
        let label = if pids.len() == 1 { "PID" } else { "PIDs" };
        format!("{} ({label} {})", first.command, pids.join(", "))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nodelay_host::Upstream;

    /// nginx proxying to nginx (measured): 39 058 requests, 13 496 4-tuples counted to the
    /// upstream once its ports went round, 39 062 connects in the namespace besides nodelay's.
    pub(crate) fn churning_proxy() -> ServerViewReport {
        let view = ServerView {
            processes: vec![ProcessInfo { pid: 7, command: "nginx".into(), uid: 0 }],
            wall_us: 3_000_000,
            cpu_user_us: 120_000,
            cpu_system_us: 1_840_000,
            threads: Vec::new(),
            upstreams: vec![Upstream {
                destination: "127.0.0.1:4000".parse().unwrap(),
                opened: 13_496,
                open_at_end: 0,
                pooled_segments_out: 0,
                ports_cycled: true,
            }],
            cpu_pressure: None,
            listen_queue: None,
            online_cpus: 2,
            listening_ports: vec![8080],
            namespace_connects_by_others: Some(39_062),
            unread: Vec::new(),
        };
        ServerViewReport::new(&view, 39_058)
    }
}
