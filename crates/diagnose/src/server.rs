//! Findings from the server view (the server's own /proc counters during a run): is it slow
//! because it works (`server-cpu-bound`) or because it waits, and does it open a new
//! connection to its upstream for every request (`upstream-connection-per-request`).
//! Pure: the view and the number of requests the run completed in, findings out.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Fix, Proof, ProofKind};
use crate::fixes::{cpu_bound, detected_first, stack_of_command, upstream_keep_alive};
use nodelay_host::{ServerView, ThreadLoad, Upstream};
use nodelay_tcp::time::ms_from_us;

/// A thread (or all cores) busy at least this share of the run is the bottleneck.
pub const CPU_BOUND_SHARE: f64 = 0.8;
/// At least this many new upstream connections per request is "one per request"...
pub const CONNECTIONS_PER_REQUEST: f64 = 0.5;
/// ...once the run has this many requests to count against.
pub const MIN_REQUESTS: u64 = 10;
/// One request at a time, the server's busiest thread was on a CPU at least this share of each
/// request's time. Not higher: the rest also holds the client's and the network's time, which
/// on a loaded machine (two cores shared with the client) can be more than the server's own.
pub const WORKING_SHARE: f64 = 0.4;
/// A busiest thread with more CPU per request than this times each request's time is busy
/// beside the requests (the timer's rounding allowed for).
const BESIDE_REQUESTS: f64 = 1.2;
/// ...and so is one on a CPU or waiting for one more than this times each request's median
/// time: more than a busy machine's long tail puts between the mean (what the counters give
/// per request) and the median. (Not yet enough for a JVM's JIT thread on a busy machine,
/// on a CPU 117 % of each request's time with little wait of its own: issue 44's note.)
const RUNNABLE_BESIDE_REQUESTS: f64 = 3.0;
/// Below this much CPU per request, one request's CPU is no latency worth a finding (under
/// load the ceiling tells more: bench). 1.5 ms caps one thread near 670 requests/s.
pub const MIN_CPU_PER_REQUEST_MS: f64 = 1.5;
/// A server thread that waited for a CPU this share of the run was short of cores.
const CONTENDED_SHARE: f64 = 0.1;
/// The machine had a task waiting for a CPU this share of the run.
const PRESSURE_SHARE: f64 = 0.25;

/// What the server's counters say about its load, in the units the reports show.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerLoad {
    /// The server's CPU per completed request; `None` when none completed.
    pub cpu_per_request_ms: Option<f64>,
    /// The process's CPU as a share of one core over the run (2.0: two cores busy).
    pub cores_busy: f64,
    /// The thread busiest over the run (on a CPU or waiting for one).
    pub busiest: Option<ThreadShare>,
    /// Requests per second the server could reach before its bottleneck saturates.
    pub ceiling_per_second: Option<f64>,
    /// One thread was saturated (busy at least [`CPU_BOUND_SHARE`] of the run and doing
    /// most of the work).
    pub one_thread_bound: bool,
    /// One thread did most of the work: it sets the ceiling.
    pub main_thread: bool,
}

/// One thread's share of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadShare {
    /// The thread's name (`comm`).
    pub name: String,
    /// The thread's ID.
    pub tid: i32,
    /// Share of the run it spent on a CPU (0 to 1).
    pub on_cpu: f64,
    /// Share of the run it spent runnable but waiting for a CPU (0 to 1).
    pub waiting_for_cpu: f64,
}

impl ThreadShare {
    fn of(thread: &ThreadLoad, wall_us: u64) -> Self {
        let share = |us: u64| us as f64 / wall_us.max(1) as f64;
        ThreadShare {
            name: thread.name.clone(),
            tid: thread.tid,
            on_cpu: share(thread.on_cpu_us),
            waiting_for_cpu: share(thread.waiting_for_cpu_us),
        }
    }

    /// On a CPU or wanting one: a thread busy this share of the run had no time to wait.
    pub fn busy(&self) -> f64 {
        self.on_cpu + self.waiting_for_cpu
    }
}

/// The server's load over a run that completed `requests` requests.
pub fn server_load(view: &ServerView, requests: u64) -> ServerLoad {
    let cpu_s = view.cpu_us() as f64 / 1e6;
    let wall_s = view.wall_us.max(1) as f64 / 1e6;
    let busiest = view.threads.iter().max_by_key(|t| t.on_cpu_us + t.waiting_for_cpu_us);
    let share = busiest.map(|t| ThreadShare::of(t, view.wall_us));
    let cores_busy = cpu_s / wall_s;
    // CPython runs one thread's bytecode at a time: its threads share one core's worth.
    let cpus = if runs_one_thread_at_a_time(view) { 1.0 } else { f64::from(view.online_cpus.max(1)) };
    // One thread is the limit when it was busy and did most of the process's work.
    let one_thread_bound = share.as_ref().is_some_and(|s| s.busy() >= CPU_BOUND_SHARE)
        && busiest.is_some_and(|t| t.on_cpu_us as f64 >= 0.5 * view.cpu_us() as f64);
    // A thread that did most of the work sets the ceiling even when it was not saturated
    // (an event loop): more cores would not help it.
    let main_thread = busiest.is_some_and(|t| t.on_cpu_us as f64 >= 0.5 * view.cpu_us() as f64);
    let ceiling_per_second = match busiest {
        _ if requests == 0 || cpu_s <= 0.0 => None,
        Some(thread) if main_thread && thread.on_cpu_us > 0 => {
            Some(requests as f64 / (thread.on_cpu_us as f64 / 1e6))
        }
        _ => Some(requests as f64 * cpus / cpu_s),
    };
    ServerLoad {
        cpu_per_request_ms: (requests > 0).then(|| cpu_s * 1e3 / requests as f64),
        cores_busy,
        busiest: share,
        ceiling_per_second,
        one_thread_bound,
        main_thread,
    }
}

/// The server's runtime lets one thread run at a time (CPython's GIL): however many cores the
/// machine has, its ceiling is one core's.
pub fn runs_one_thread_at_a_time(view: &ServerView) -> bool {
    view.processes.first().is_some_and(|p| stack_of_command(&p.command) == Some("Python"))
}

/// Findings from the server view, most important first; none when the server is neither
/// CPU-bound nor reconnecting to its upstreams. `sequential_p50_ms`: the median time per
/// request when they were sent one at a time (the doctor's baseline), which the server's
/// CPU per request is compared with; `None` under concurrent load (bench).
pub(crate) fn server_findings(
    view: &ServerView,
    requests: u64,
    sequential_p50_ms: Option<f64>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.extend(cpu_bound_finding(view, requests, sequential_p50_ms));
    findings.extend(
        view.upstreams.iter().filter_map(|upstream| connection_per_request(view, upstream, requests)),
    );
    findings
}

fn process_name(view: &ServerView) -> String {
    match view.processes.first() {
        Some(process) => format!("{} (PID {})", process.command, process.pid),
        None => "the server".into(),
    }
}

pub(crate) fn stack_fixes(view: &ServerView, mut fixes: Vec<Fix>) -> Vec<Fix> {
    if let Some(stack) = view.processes.first().and_then(|p| stack_of_command(&p.command)) {
        detected_first(&mut fixes, stack);
    }
    fixes
}

/// What shows the server is CPU-bound.
enum Basis {
    /// One thread was busy nearly the whole run.
    OneThread(ThreadShare),
    /// Its threads kept nearly every core busy.
    AllCores { cores_busy: f64, cpus: f64 },
    /// One request at a time: its CPU per request is nearly all of each request's time.
    PerRequest { cpu_ms: f64, waiting_ms: f64, total_ms: f64 },
}

/// One request at a time, the request path's CPU per request and its time on a CPU or
/// waiting for one, in ms. The path is the busiest thread when it did most of the work; when
/// no thread did (a pool whose workers take turns), the process (`cpu_ms`). A thread kept
/// from a CPU it asked for was working too: on a machine whose cores are taken (other
/// programs, a laptop's), each request's time is its CPU plus that wait, and a CPU-bound
/// server must not pass for one that waits on something else.
fn request_path_ms(view: &ServerView, requests: u64, cpu_ms: f64) -> (f64, f64) {
    let per_request = |us: u64| ms_from_us(us) / requests.max(1) as f64;
    match view.threads.first().filter(|t| t.on_cpu_us as f64 >= 0.5 * view.cpu_us() as f64) {
        Some(thread) => {
            (per_request(thread.on_cpu_us), per_request(thread.on_cpu_us + thread.waiting_for_cpu_us))
        }
        None => (cpu_ms, cpu_ms),
    }
}

/// Whether the server's request path, one request at a time, worked (on a CPU or waiting for
/// one) at least `share` of `server_ms` per request: a slow first byte that is this work, not a
/// wait on something else.
pub(crate) fn works_through(view: &ServerView, requests: u64, server_ms: f64, share: f64) -> bool {
    if requests < MIN_REQUESTS {
        return false;
    }
    let Some(cpu_ms) = server_load(view, requests).cpu_per_request_ms else { return false };
    let (path_ms, runnable_ms) = request_path_ms(view, requests, cpu_ms);
    path_ms >= MIN_CPU_PER_REQUEST_MS && runnable_ms >= share * server_ms
}

fn cpu_bound_finding(view: &ServerView, requests: u64, sequential_p50_ms: Option<f64>) -> Option<Finding> {
    if requests < MIN_REQUESTS {
        return None;
    }
    let load = server_load(view, requests);
    let cpus = f64::from(view.online_cpus.max(1));
    let cpu_ms = load.cpu_per_request_ms?;
    // Reported beside the CPU, not added to it: on a loaded machine every thread of the
    // server waits, busy with a request or not.
    let waiting_ms =
        ms_from_us(view.threads.iter().map(|t| t.waiting_for_cpu_us).sum::<u64>()) / requests as f64;
    // One request at a time, a busy thread only means the server has no wait of its own to
    // add: what matters is whether its CPU is most of each request's time, and whether that
    // time is worth a finding. Under concurrent load, whether a thread or the cores ran full.
    // One request at a time, the request path is one thread at a time: the busiest thread's
    // CPU per request, which cannot exceed each request's time. More than that is work beside
    // the requests (a JVM's JIT compiler and GC warming up), not the requests' cost.
    let (path_ms, path_runnable_ms) = request_path_ms(view, requests, cpu_ms);
    let basis = match (&load.busiest, sequential_p50_ms) {
        (_, Some(total_ms))
            if path_ms >= MIN_CPU_PER_REQUEST_MS
                && path_runnable_ms >= WORKING_SHARE * total_ms
                && path_ms <= BESIDE_REQUESTS * total_ms
                && path_runnable_ms <= RUNNABLE_BESIDE_REQUESTS * total_ms =>
        {
            Basis::PerRequest { cpu_ms: path_ms, waiting_ms, total_ms }
        }
        (_, Some(_)) => return None,
        (Some(busiest), None) if load.one_thread_bound => Basis::OneThread(busiest.clone()),
        (_, None) if load.cores_busy >= CPU_BOUND_SHARE * cpus => {
            Basis::AllCores { cores_busy: load.cores_busy, cpus }
        }
        _ => return None,
    };
    let (seen, share, ceiling) = match &basis {
        Basis::OneThread(busiest) => (
            format!(
                "its busiest thread, {} (TID {}), was on CPU {:.0} % of the run and waiting for a CPU {:.0} %",
                busiest.name,
                busiest.tid,
                busiest.on_cpu * 100.0,
                busiest.waiting_for_cpu * 100.0
            ),
            busiest.busy(),
            load.ceiling_per_second.map(|c| format!("; ceiling ≈ {c:.0} requests/s")),
        ),
        Basis::AllCores { cores_busy, cpus } => (
            format!("its threads kept {cores_busy:.1} of {cpus:.0} cores busy"),
            cores_busy / cpus,
            load.ceiling_per_second.map(|c| format!("; ceiling ≈ {c:.0} requests/s")),
        ),
        Basis::PerRequest { cpu_ms, waiting_ms, total_ms } => (
            format!(
                "its busiest thread spent {cpu_ms:.2} ms on a CPU{} of each {total_ms:.2} ms request ({:.0} %): it \
                 works rather than waits",
                if *waiting_ms >= 0.01 {
                    format!(" and {waiting_ms:.2} ms waiting for one")
                } else {
                    String::new()
                },
                cpu_ms / total_ms * 100.0
            ),
            cpu_ms / total_ms,
            Some(format!("; ceiling ≈ {:.0} requests/s per busy thread", 1e3 / cpu_ms)),
        ),
    };
    // A server thread kept from a CPU shared the cores (with nodelay's own threads, on one
    // machine): part of its limit is the machine's, so its ceiling is not proven.
    let contended = load.busiest.as_ref().filter(|b| b.waiting_for_cpu >= CONTENDED_SHARE);
    let context = match (&basis, contended) {
        (_, Some(busiest)) => format!(
            ". It also waited for a CPU {:.0} % of the run: the cores were shared (with nodelay's own threads, if on \
             this machine), so part of that limit is the machine's; pin the server and nodelay to different cores \
             (taskset) before reading its ceiling",
            busiest.waiting_for_cpu * 100.0
        ),
        (Basis::PerRequest { .. }, None) => String::new(),
        (_, None) => {
            ". Under a load that keeps it busy (a closed loop at full speed) every server is CPU-bound: \
                      this is its ceiling, not a stall"
                .into()
        }
    };
    let mut evidence = vec![Evidence::new("server CPU per request (all its threads)", cpu_ms, "ms")];
    if let Basis::PerRequest { total_ms, .. } = basis {
        evidence.push(Evidence::new("median time per request, one at a time", total_ms, "ms"));
    }
    if let Some(busiest) = &load.busiest {
        evidence.push(Evidence::new("busiest thread on CPU, share of the run", busiest.on_cpu * 100.0, "%"));
        evidence.push(Evidence::new(
            "busiest thread waiting for a CPU, share of the run",
            busiest.waiting_for_cpu * 100.0,
            "%",
        ));
    }
    evidence.push(Evidence::new("cores the server kept busy", load.cores_busy, "cores"));
    if let Some(ceiling) = load.ceiling_per_second {
        evidence.push(Evidence::new("ceiling at this CPU cost", ceiling, "requests/s"));
    }
    Some(Finding {
        id: FindingId::ServerCpuBound,
        title: format!("{} is CPU-bound: {seen}{}{context}", process_name(view), ceiling.unwrap_or_default()),
        proven: contended.is_none(),
        confidence: match (&basis, contended) {
            (_, Some(_)) => Confidence::Low,
            // At saturation it is what is expected of any server: worth knowing, not alarming.
            (Basis::OneThread(_) | Basis::AllCores { .. }, None) => Confidence::Low,
            _ if share >= 0.9 => Confidence::High,
            _ => Confidence::Medium,
        },
        evidence,
        proof: vec![Proof {
            kind: ProofKind::ServerView,
            experiment: "the server's own CPU counters during the run (/proc/PID/stat, task schedstat)"
                .into(),
            baseline_p50_ms: 0.0,
            experiment_p50_ms: 0.0,
            removed: false,
            result: seen,
        }],
        fix_summary:
            "It is slow because it works, not because it waits: profile it and cut the work per request, \
                      or spread requests over more threads, processes or cores."
                .into(),
        fix: stack_fixes(view, cpu_bound()),
    })
}

/// What the server-view proof of `upstream-connection-per-request` read.
const CONNECTION_TABLES: &str = "the server's TCP connections, start against end of the run (/proc/net/tcp)";

fn connection_per_request(view: &ServerView, upstream: &Upstream, requests: u64) -> Option<Finding> {
    if requests < MIN_REQUESTS {
        return None;
    }
    let destination = upstream.destination;
    let per_request = upstream.opened as f64 / requests as f64;
    // Once its local ports went round, a 4-tuple used again may have counted once: a floor.
    let (floor, at_least, counted) = if upstream.ports_cycled {
        let counted = format!(
            "{} counted (a floor: its local ports went round, and a 4-tuple used again may count once)",
            upstream.opened
        );
        ("at least ", ", at least", counted)
    } else {
        ("", "", format!("{} opened", upstream.opened))
    };
    let mut evidence = vec![
        Evidence::new(
            format!("new connections to {destination} per request{at_least}"),
            per_request,
            "count",
        ),
        Evidence::new(
            format!("connections to {destination} opened during the run{at_least}"),
            upstream.opened as f64,
            "count",
        ),
        Evidence::new("requests completed during the run", requests as f64, "count"),
    ];
    if per_request >= CONNECTIONS_PER_REQUEST {
        let seen = format!(
            "{floor}{per_request:.2} new connection to {destination} per request ({counted} for {requests} requests)"
        );
        return Some(
            Churn {
                title: format!("opens a new TCP connection to its upstream for every request: {seen}"),
                proven: true,
                confidence: if per_request >= 0.9 { Confidence::High } else { Confidence::Medium },
                evidence,
                experiment: CONNECTION_TABLES.into(),
                seen,
            }
            .finding(view),
        );
    }
    let at_most = upstream_connects_at_most(view, upstream)?;
    let at_most_per_request = at_most as f64 / requests as f64;
    if at_most_per_request < CONNECTIONS_PER_REQUEST {
        return None;
    }
    evidence.push(Evidence::new(
        format!(
            "new connections to {destination} per request, at most (connects in the server's network namespace \
             besides nodelay's, less those counted to its other upstreams)"
        ),
        at_most_per_request,
        "count",
    ));
    let seen = format!(
        "between {per_request:.2} and {at_most_per_request:.2} new connections to {destination} per request: \
         {counted} for {requests} requests, and {at_most} connects by any process of its network namespace \
         besides nodelay"
    );
    Some(
        Churn {
            title: format!("may open a new TCP connection to its upstream for every request: {seen}"),
            proven: false,
            // Any process of the namespace may have made the connects: the surer the floor, the surer the finding.
            confidence: if per_request >= CONNECTIONS_PER_REQUEST / 2.0 { Confidence::Medium } else { Confidence::Low },
            evidence,
            experiment: format!(
                "{CONNECTION_TABLES}, and its network namespace's connect count (/proc/PID/net/snmp ActiveOpens)"
            ),
            seen,
        }
        .finding(view),
    )
}

/// The most connections `upstream` can have had: the namespace's connects by others than
/// nodelay, less those counted to the server's other destinations; `None` unless its local
/// ports went round (then the table's count is the whole story).
fn upstream_connects_at_most(view: &ServerView, upstream: &Upstream) -> Option<u64> {
    if !upstream.ports_cycled {
        return None;
    }
    let others = view.namespace_connects_by_others?;
    let elsewhere: u64 =
        view.upstreams.iter().filter(|u| u.destination != upstream.destination).map(|u| u.opened).sum();
    Some(others.saturating_sub(elsewhere))
}

/// What an `upstream-connection-per-request` finding says, before the parts all of them share.
struct Churn {
    /// After the process's name.
    title: String,
    proven: bool,
    confidence: Confidence,
    evidence: Vec<Evidence>,
    experiment: String,
    seen: String,
}

impl Churn {
    fn finding(self, view: &ServerView) -> Finding {
        Finding {
            id: FindingId::UpstreamConnectionPerRequest,
            title: format!("{} {}", process_name(view), self.title),
            proven: self.proven,
            confidence: self.confidence,
            evidence: self.evidence,
            proof: vec![Proof {
                kind: ProofKind::ServerView,
                experiment: self.experiment,
                baseline_p50_ms: 0.0,
                experiment_p50_ms: 0.0,
                removed: false,
                result: self.seen,
            }],
            fix_summary:
                "Keep connections to the upstream alive and reuse them (a keep-alive agent, session or \
                          upstream pool): each new one costs a handshake and CPU on both sides."
                    .into(),
            fix: stack_fixes(view, upstream_keep_alive()),
        }
    }
}

/// Warnings about the run itself: the generator and the server fighting for cores.
pub fn server_warnings(view: &ServerView) -> Vec<String> {
    let mut warnings = Vec::new();
    let waited = view.threads.iter().map(|t| t.waiting_for_cpu_us).max().unwrap_or(0);
    let waited_share = waited as f64 / view.wall_us.max(1) as f64;
    let pressure = view.cpu_pressure.map(|p| p.some_waiting_share);
    if waited_share >= CONTENDED_SHARE || pressure.is_some_and(|p| p >= PRESSURE_SHARE) {
        let mut seen = Vec::new();
        if waited_share >= 0.01 {
            seen.push(format!(
                "a thread of the server waited for a CPU {:.0} % of the run",
                waited_share * 100.0
            ));
        }
        if let Some(pressure) = pressure.filter(|p| *p >= 0.01) {
            seen.push(format!("some task on this machine waited for one {:.0} % of it", pressure * 100.0));
        }
        warnings.push(format!(
            "{}: nodelay and the server share {} cores here, so the numbers include that contention; pin them \
             apart (taskset) or load from another machine",
            seen.join(", and "),
            view.online_cpus
        ));
    }
    warnings
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nodelay_host::{CpuPressure, ProcessInfo};
    use std::net::SocketAddr;

    fn thread(name: &str, on_cpu_us: u64, waiting_for_cpu_us: u64) -> ThreadLoad {
        ThreadLoad { pid: 7, tid: 7, name: name.into(), on_cpu_us, waiting_for_cpu_us }
    }

    pub(crate) fn view(threads: Vec<ThreadLoad>, upstreams: Vec<Upstream>) -> ServerView {
        let cpu: u64 = threads.iter().map(|t| t.on_cpu_us).sum();
        ServerView {
            processes: vec![ProcessInfo { pid: 7, command: "node".into(), uid: 0 }],
            wall_us: 1_000_000,
            cpu_user_us: cpu * 3 / 4,
            cpu_system_us: cpu - cpu * 3 / 4,
            threads,
            upstreams,
            cpu_pressure: Some(CpuPressure { some_waiting_share: 0.05 }),
            listen_queue: None,
            online_cpus: 2,
            listening_ports: vec![8080],
            namespace_connects_by_others: None,
            unread: Vec::new(),
        }
    }

    fn upstream(opened: u64) -> Upstream {
        let destination: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        Upstream { destination, opened, open_at_end: 0, pooled_segments_out: 0, ports_cycled: false }
    }

    fn server_findings_of(view: &ServerView, requests: u64) -> Vec<Finding> {
        server_findings(view, requests, None)
    }

    #[test]
    fn at_saturation_cpu_bound_is_expected_and_unproven_when_the_cores_were_shared() {
        let saturated = view(vec![thread("nginx", 950_000, 20_000)], vec![]);
        let found = server_findings_of(&saturated, 40_000);
        assert_eq!(ids(&found), ["server-cpu-bound"]);
        assert!(found[0].title.contains("every server is CPU-bound"), "{}", found[0].title);
        assert_eq!((found[0].proven, found[0].confidence), (true, Confidence::Low));
        // nginx waited for a CPU a third of the run: the generator took it.
        let shared = view(vec![thread("nginx", 650_000, 320_000)], vec![]);
        let found = server_findings_of(&shared, 40_000);
        assert!(!found[0].proven, "{:?}", found[0]);
        assert!(found[0].title.contains("waited for a CPU 32 % of the run"), "{}", found[0].title);
        assert!(found[0].title.contains("taskset"), "{}", found[0].title);
    }

    #[test]
    fn a_python_server_s_ceiling_is_one_core_s() {
        let mut pool = view(
            vec![thread("python3", 200_000, 0), thread("python3", 200_000, 0), thread("python3", 200_000, 0)],
            vec![],
        );
        let two_cores = server_load(&pool, 1000).ceiling_per_second.unwrap();
        pool.processes[0].command = "python3".into();
        let one_core = server_load(&pool, 1000).ceiling_per_second.unwrap();
        assert!((two_cores / one_core - 2.0).abs() < 1e-9, "{two_cores} {one_core}");
    }

    #[test]
    fn one_request_at_a_time_that_is_all_cpu_is_cpu_bound_and_a_waiting_one_is_not() {
        // 40 requests of 2.6 ms, the server's threads gone by the end: 90 ms of CPU.
        let mut gone = view(vec![], vec![]);
        gone.cpu_user_us = 90_000;
        let findings = server_findings(&gone, 40, Some(2.6));
        // A JVM warming up: its JIT thread burns more CPU per request than requests take.
        let warming = view(vec![thread("C2 CompilerThre", 256_000, 116_000)], vec![]);
        assert!(server_findings(&warming, 40, Some(1.14)).is_empty());
        // On a busy machine: on a CPU 4.56 ms and waiting for one 14.5 ms of each 3.83 ms
        // request is no request path.
        let busy_warming = view(vec![thread("C2 CompilerThre", 182_400, 580_400)], vec![]);
        assert!(server_findings(&busy_warming, 40, Some(3.83)).is_empty());
        assert_eq!(ids(&findings), ["server-cpu-bound"]);
        assert!(
            findings[0].title.contains("spent 2.25 ms on a CPU of each 2.60 ms request (87 %)"),
            "{}",
            findings[0].title
        );
        gone.cpu_user_us = 6_000;
        assert!(server_findings(&gone, 40, Some(2.6)).is_empty());
        // A fast server is all CPU too, but 0.75 ms per request is no latency to speak of.
        gone.cpu_user_us = 30_000;
        assert!(server_findings(&gone, 40, Some(0.88)).is_empty());
    }

    #[test]
    fn one_request_at_a_time_a_server_kept_from_a_cpu_is_still_cpu_bound() {
        // Measured on a busy 2-core machine: a handler burning 2 ms, on a CPU 2.4 ms of each
        // 7.3 ms request and waiting 5.1 ms for one. It works, it does not wait.
        let contended = view(vec![thread("python3", 95_600, 205_800)], vec![]);
        let found = server_findings(&contended, 40, Some(7.3));
        assert_eq!(ids(&found), ["server-cpu-bound"]);
        assert!(!found[0].proven, "the cores were shared: {:?}", found[0]);
        assert!(found[0].title.contains("taskset"), "{}", found[0].title);
        // A handler that sleeps 2 ms, on the same busy machine: a little CPU, a little wait.
        let sleeping = view(vec![thread("python3", 17_000, 20_000)], vec![]);
        assert!(server_findings(&sleeping, 40, Some(4.0)).is_empty());
    }

    fn ids(findings: &[Finding]) -> Vec<&'static str> {
        findings.iter().map(|f| f.id.as_str()).collect()
    }

    #[test]
    fn a_thread_on_cpu_the_whole_run_is_cpu_bound_with_its_ceiling() {
        let findings = server_findings_of(&view(vec![thread("node", 970_000, 10_000)], vec![]), 1800);
        assert_eq!(ids(&findings), ["server-cpu-bound"]);
        let title = &findings[0].title;
        assert!(title.contains("on CPU 97 %") && title.contains("ceiling ≈ 1856 requests/s"), "{title}");
        // The node stack's fixes come first.
        assert_eq!(findings[0].fix[0].stack, "Node.js");
    }

    #[test]
    fn a_waiting_server_is_not_cpu_bound() {
        let load = server_load(&view(vec![thread("python3", 50_000, 0)], vec![]), 400);
        assert!(!load.one_thread_bound);
        assert!(server_findings_of(&view(vec![thread("python3", 50_000, 0)], vec![]), 400).is_empty());
        assert!((load.cpu_per_request_ms.unwrap() - 0.125).abs() < 1e-9);
    }

    #[test]
    fn many_threads_that_fill_every_core_are_cpu_bound_too() {
        let threads = (0..8).map(|i| thread(&format!("worker{i}"), 220_000, 5_000)).collect();
        let findings = server_findings_of(&view(threads, vec![]), 1000);
        assert_eq!(ids(&findings), ["server-cpu-bound"]);
        assert!(findings[0].title.contains("1.8 of 2 cores"), "{}", findings[0].title);
    }

    #[test]
    fn one_new_upstream_connection_per_request_is_found_and_a_pool_is_not() {
        let findings = server_findings_of(&view(vec![thread("node", 100_000, 0)], vec![upstream(500)]), 500);
        assert_eq!(ids(&findings), ["upstream-connection-per-request"]);
        assert!(findings[0].title.contains("1.00 new connection to 127.0.0.1:4000 per request"));
        let pooled = Upstream { pooled_segments_out: 1000, open_at_end: 2, ..upstream(2) };
        assert!(server_findings_of(&view(vec![thread("node", 100_000, 0)], vec![pooled]), 500).is_empty());
    }

    /// nginx proxying to nginx at 13 k requests/s for 3 s (measured): the table counted 13 496
    /// connections for 39 058 requests, its ports having gone round; the namespace made 39 062
    /// connects besides nodelay's.
    #[test]
    fn a_count_short_by_reused_ports_is_bounded_by_the_namespace_connects() {
        let cycled = Upstream { ports_cycled: true, ..upstream(13_496) };
        let mut churning = view(vec![thread("nginx", 600_000, 0)], vec![cycled.clone()]);
        churning.namespace_connects_by_others = Some(39_062);
        let findings = server_findings_of(&churning, 39_058);
        assert_eq!(ids(&findings), ["upstream-connection-per-request"]);
        let finding = &findings[0];
        assert!(!finding.proven && finding.confidence == Confidence::Medium);
        assert!(
            finding.title.contains("between 0.35 and 1.00 new connections to 127.0.0.1:4000 per request")
        );
        assert!(
            finding.title.contains("13496 counted (a floor: its local ports went round"),
            "{}",
            finding.title
        );
        assert_eq!(finding.evidence.last().unwrap().value, 39_062.0 / 39_058.0);
        assert!(finding.evidence[0].what.ends_with("per request, at least"));
        // A floor further from the threshold leaves more to other processes: less sure.
        churning.namespace_connects_by_others = Some(121_000);
        let low = server_findings_of(&churning, 120_000);
        assert_eq!(low[0].confidence, Confidence::Low, "{}", low[0].title);
        // Gone round, and still at least 0.5 per request: proven, and said to be a floor.
        let proven = server_findings_of(&churning, 20_000);
        assert!(
            proven[0].proven && proven[0].title.contains("at least 0.67 new connection"),
            "{}",
            proven[0].title
        );
        // Not gone round: the table's count stands, and 0.35 per request is no finding.
        let counted = view(vec![thread("nginx", 600_000, 0)], vec![upstream(13_496)]);
        let unknown = ServerView { namespace_connects_by_others: Some(39_062), ..counted };
        assert!(server_findings_of(&unknown, 39_058).is_empty());
        // Gone round, but the namespace's connects leave under 0.5 per request.
        churning.namespace_connects_by_others = Some(19_000);
        assert!(server_findings_of(&churning, 39_058).is_empty());
        // The connects counted to another destination are not this one's.
        let other = Upstream { destination: "127.0.0.1:5000".parse().unwrap(), ..upstream(10_000) };
        churning.upstreams.push(other);
        churning.namespace_connects_by_others = Some(29_000);
        assert!(server_findings_of(&churning, 39_058).is_empty());
        // Counters unread: the table's count alone.
        churning.namespace_connects_by_others = None;
        assert!(server_findings_of(&churning, 39_058).is_empty());
    }

    #[test]
    fn too_few_requests_prove_nothing() {
        assert!(server_findings_of(&view(vec![thread("node", 990_000, 0)], vec![upstream(5)]), 5).is_empty());
    }

    #[test]
    fn a_server_short_of_cores_is_warned_about() {
        let contended = view(vec![thread("node", 600_000, 300_000)], vec![]);
        let warnings = server_warnings(&contended);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("a thread of the server waited for a CPU 30 % of the run"),
            "{}",
            warnings[0]
        );
        assert!(warnings[0].contains("taskset"), "{}", warnings[0]);
        assert!(server_warnings(&view(vec![thread("node", 600_000, 1_000)], vec![])).is_empty());
    }
}
