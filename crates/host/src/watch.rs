//! Watching a server through a run: [`ServerWatch::start`] reads the start values of the
//! processes behind a target, a background thread samples their outgoing connections while
//! the run lasts, and [`ServerWatch::finish`] reads the end values into a [`ServerView`].
//!
//! What is read, and where:
//! - CPU: `utime` + `stime` of /proc/PID/stat (clock ticks; exited threads included).
//! - Threads: /proc/PID/task/TID/schedstat (ns on a CPU, ns waiting for one).
//! - Upstreams: the processes' sockets (/proc/PID/fd inodes found in the socket table) of
//!   which they are the client, at the start and the end; in between, every 1 ms or more (10
//!   ms after the first 100 ms; at `SamplerPace::RelaxedUntil`, 160 ms while the namespace's
//!   TCP open counts and the threads stand still), the sockets the sampler meets when those
//!   counts moved (asked through `pidfd_getfd` copies: reading the table costs milliseconds);
//!   the table's connections before and after; TCP_INFO `segments_out` of the connections
//!   that lived through the run. Every copy is closed at once.
//! - CPU pressure: /proc/pressure/cpu `some ... total=`.
//! - Connects: /proc/PID/net/snmp `Tcp: ActiveOpens` of the server's namespaces at both ends.
//! - Accept queue: /proc/PID/net/netstat `ListenOverflows` and `ListenDrops` at both ends,
//!   and the listener's backlog from TCP_INFO of a copy of it at the end.
//!
//! Limits of the upstream counts, which come from socket tables, not from tracing. `opened`
//! is a lower bound:
//! - It counts the connections to the destination that the sampler saw or that are in the
//!   table at the end (a closed one stays in TIME-WAIT for 60 s on the side that closed
//!   first) and are other sockets than those on the same addresses at the start (a new
//!   4-tuple, another inode, or a TIME-WAIT whose timer restarted: loopback reuses a
//!   4-tuple 1 s into its TIME-WAIT, so back-to-back runs meet their own leftovers).
//! - A 4-tuple used several times in one run counts once. The kernel's choice of local port
//!   goes round the range every ~range/9 connects to one destination, and then meets ports
//!   it used before (`local_ports::connects_per_round`): through an nginx proxy over the default
//!   28 k ports, 18.5 k connects counted 10.9 k and 39 k counted 13.5 k. Such an upstream is
//!   marked `ports_cycled`, and `namespace_connects_by_others` (the namespace's `ActiveOpens`
//!   over the run, less nodelay's own connects) bounds its count from above.
//! - A connection is missed when the destination closed first on another host (our side
//!   never enters TIME-WAIT), when it was reset (no TIME-WAIT either), when it closed more
//!   than 60 s before the end, or when a reuse came within 100 ms of the TIME-WAIT it
//!   replaced (an explicitly bound port); and /proc/net/tcp is no snapshot: a line that
//!   changes while it is read may be missed.
//! - A connection to the same destination opened by *another* process counts too.
//! - A destination is known only if the server held a connection to it at the start, at
//!   the end, or at one of the sampler's instants (every 1 ms or more, then 10 ms; at the
//!   relaxed pace 160 ms after a still second until a connect or an accept moves the counts):
//!   a server that opens a connection for a few microseconds, rarely, may not be caught.
//! - At the relaxed pace, a thread that ends during a still stretch more than 250 ms before
//!   the run's planned end is counted up to the last look, at most 160 ms before it ended
//!   (the process's CPU counts all of it).
//! - The processes are those holding the listening socket at the start, and those that hold
//!   it at the end (counted since they started: a worker forked during the run).

mod connections;
mod listen_queue;
mod load;
mod mib;
mod reading;
mod sampler;
pub(crate) mod tcp_opens;

use crate::linux::{no_permission, proc_error, server_processes};
use crate::{CpuPressure, HostError, ProcessInfo, SamplerPace, ServerView, Target, ThreadLoad};
use connections::{ConnectionReadings, Directed, Incarnation};
use load::{CpuTicks, ThreadTimes};
use procfs::ProcError;
use reading::{HeldSocket, Watched};
use sampler::Sampler;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Instant;
use tcp_opens::RunConnects;

/// A server being watched; dropping it without `finish` stops the sampling.
pub struct ServerWatch {
    target: Target,
    started: Instant,
    watched: Vec<Watched>,
    start: Start,
    sampler: Sampler,
}

/// The start values.
struct Start {
    cpu: HashMap<i32, CpuTicks>,
    threads: Vec<ThreadTimes>,
    ends: HashMap<Directed, Incarnation>,
    tables_read_at: Instant,
    listening_ports: HashSet<u16>,
    destinations: BTreeSet<SocketAddr>,
    /// The server's client connections, by inode: destination and segments sent so far.
    segments_out: HashMap<u64, (SocketAddr, u32)>,
    pressure_some_us: Option<u64>,
    listen_counters: Option<listen_queue::ListenCounters>,
    /// The namespaces' connect()s so far; `None` where their counters could not be read.
    connects: Option<RunConnects>,
    unread: Vec<String>,
}

/// The watched processes at one instant.
struct Moment {
    cpu: HashMap<i32, CpuTicks>,
    threads: Vec<ThreadTimes>,
    /// Each socket once, under the first process that holds it.
    sockets: Vec<HeldSocket>,
    /// Every connection end in the socket tables, and when they were read.
    ends: HashMap<Directed, Incarnation>,
    tables_read_at: Instant,
    /// Processes that could not be read (index in the watched list), and why.
    failed: Vec<(usize, ProcError)>,
    /// Why no socket table could be read (then there are no sockets or ends).
    table_failure: Option<ProcError>,
}

impl ServerWatch {
    /// Finds the processes behind `target` (every holder of its listening socket, as
    /// `inspect` does) and reads their start values.
    pub fn start(target: Target) -> Result<ServerWatch, HostError> {
        ServerWatch::start_paced(target, SamplerPace::Steady)
    }

    /// As `start`, the sampler looking at `pace`.
    pub fn start_paced(target: Target, pace: SamplerPace) -> Result<ServerWatch, HostError> {
        let mut watched = open_all(target, server_processes(target)?)?;
        let mut unread = Vec::new();
        let pressure_some_us = read_pressure(&mut unread);
        let moment = read_moment(&watched, &mut unread);
        let mut moment = drop_ended(target, &mut watched, moment)?;
        if let Some(error) = moment.table_failure.take() {
            return Err(table_error(target, error));
        }
        let start = start_values(moment, pressure_some_us, unread, &watched)?;
        let sampled = watched.iter().filter_map(|w| Watched::open(w.info.clone()).ok()).collect();
        let sampler = Sampler::start(sampled, start.listening_ports.clone(), pace)
            .map_err(|e| HostError::io("starting the server view's sampling thread", e))?;
        // The run is timed from here: reading the socket tables (milliseconds, up to a second
        // on a loaded machine with many TIME-WAIT entries) is not part of it.
        let started = Instant::now();
        Ok(ServerWatch { target, started, watched, start, sampler })
    }

    /// The run ends sooner than the pace planned (interrupted): the sampler looks now, then
    /// quickly, until `finish`.
    pub fn ending(&self) {
        self.sampler.ending();
    }

    /// Samples of the server's outgoing connections taken so far, one every 1 ms or more: a run
    /// shorter than a sample learns its upstreams only from the start and the end.
    pub fn samples_taken(&self) -> u64 {
        self.sampler.samples()
    }

    /// Reads the end values: the server's side of the run since `start`, in which this
    /// process opened `own_connects` connections (the load's, the failed ones included).
    pub fn finish(self, own_connects: u64) -> Result<ServerView, HostError> {
        let ServerWatch { target, started, mut watched, mut start, sampler } = self;
        let sampled = sampler.stop();
        let wall_us = duration_us(started.elapsed());
        let namespace_connects_by_others = start.connects.take().and_then(|c| c.by_others(own_connects));
        let mut unread = std::mem::take(&mut start.unread);
        let pressure_some_us = read_pressure(&mut unread);
        // The watched processes first: the search for late holders scans all of /proc.
        let mut end = read_moment(&watched, &mut unread);
        let late = late_holders(target, &watched, &mut unread);
        if !late.is_empty() {
            end.absorb(read_moment(&late, &mut unread), watched.len());
            watched.extend(late);
        }
        note_failed(&watched, &end, &mut unread);
        let (cpu_user_us, cpu_system_us) = cpu_since(&start.cpu, &end.cpu);
        // The server calling itself (its own listening port on this machine) is not an
        // upstream: the run's own connections to it would count as opened.
        let listening_ports: HashSet<u16> =
            start.listening_ports.union(&reading::listening_ports(&end.sockets)).copied().collect();
        // Threads that ended during the run count up to when the sampler last saw them.
        let mut end_threads = end.threads.clone();
        let mut names: HashMap<(i32, i32), String> = HashMap::new();
        let alive: HashSet<(i32, i32)> = end_threads.iter().map(|t| (t.pid, t.tid)).collect();
        for (key, (times, name)) in &sampled.threads {
            // A live thread is named as it is now (threads often name themselves once started).
            if !alive.contains(key) {
                names.insert(*key, name.clone());
                end_threads.push(*times);
            }
        }
        let threads = thread_loads(&watched, &start.threads, &end_threads, &names);
        let port = match target {
            Target::Address(address) => Some(address.port()),
            Target::Port(port) => Some(port),
            Target::Pid(_) => None,
        };
        let listen_queue = listen_queue::view(
            start.listen_counters,
            watched.first().and_then(|w| listen_queue::counters(w.info.pid)),
            listen_queue::listener_queue(&end.sockets, port),
        );
        // /proc/sys/net shows the reader's namespace: the range is known when it is the server's.
        let connects_per_round = watched
            .first()
            .filter(|w| w.shares_our_namespace())
            .and_then(|_| crate::local_ports::connects_per_round());
        let connections =
            connection_readings(&mut start, end, sampled, &listening_ports, connects_per_round, &mut unread);
        let mut processes: Vec<_> = watched.iter().map(|w| w.info.clone()).collect();
        processes.sort_by_key(|p| p.pid);
        Ok(ServerView {
            processes,
            wall_us,
            cpu_user_us,
            cpu_system_us,
            threads,
            upstreams: connections::upstreams(&connections)
                .into_iter()
                .filter(|u| {
                    !(listening_ports.contains(&u.destination.port())
                        && crate::linux::is_local_ip(u.destination.ip()))
                })
                .collect(),
            cpu_pressure: pressure_share(start.pressure_some_us, pressure_some_us, wall_us),
            listen_queue,
            online_cpus: reading::online_cpus(),
            listening_ports: {
                let mut ports: Vec<u16> = listening_ports.into_iter().collect();
                ports.sort_unstable();
                ports
            },
            namespace_connects_by_others,
            unread,
        })
    }
}

impl Moment {
    fn empty() -> Moment {
        Moment {
            cpu: HashMap::new(),
            threads: Vec::new(),
            sockets: Vec::new(),
            ends: HashMap::new(),
            tables_read_at: Instant::now(),
            failed: Vec::new(),
            table_failure: None,
        }
    }

    /// Adds what a later reading of other processes found; `offset` is their first index
    /// in the watched list. The first reading's tables stay.
    fn absorb(&mut self, later: Moment, offset: usize) {
        self.cpu.extend(later.cpu);
        self.threads.extend(later.threads);
        let known: HashSet<u64> = self.sockets.iter().map(|s| s.inode).collect();
        self.sockets.extend(later.sockets.into_iter().filter(|s| !known.contains(&s.inode)));
        for (end, incarnation) in later.ends {
            self.ends.entry(end).or_insert(incarnation);
        }
        self.failed.extend(later.failed.into_iter().map(|(index, error)| (index + offset, error)));
    }
}

/// Opens the processes found for `target`; a worker that ended since it was found takes
/// no part in the run, a PID target that ended is gone.
fn open_all(target: Target, processes: Vec<ProcessInfo>) -> Result<Vec<Watched>, HostError> {
    let opened = processes.into_iter().filter_map(|info| match Watched::open(info.clone()) {
        Ok(watched) => Some(Ok(watched)),
        Err(ProcError::NotFound(_)) if !matches!(target, Target::Pid(_)) => None,
        Err(error) => Some(Err(proc_error(error, info.pid, Some(&info)))),
    });
    opened.collect()
}

/// Reads every watched process, and the socket tables of their namespaces.
fn read_moment(watched: &[Watched], unread: &mut Vec<String>) -> Moment {
    let tables_read_at = Instant::now();
    let (tables, table_failure) = match reading::socket_tables(watched) {
        Ok(tables) => (tables, None),
        Err(error) => (HashMap::new(), Some(error)),
    };
    let by_netns: HashMap<u64, _> =
        tables.iter().map(|(netns, entries)| (*netns, reading::by_inode(entries))).collect();
    let ends = reading::all_ends(&tables);
    let mut moment = Moment { ends, tables_read_at, table_failure, ..Moment::empty() };
    let mut seen = HashSet::new();
    let no_table = HashMap::new();
    for (index, one) in watched.iter().enumerate() {
        let table = by_netns.get(&one.netns).unwrap_or(&no_table);
        match reading::read_process(one, table, unread) {
            Ok(process) => {
                moment.cpu.insert(one.info.pid, process.cpu);
                moment.threads.extend(process.threads);
                moment.sockets.extend(process.sockets.into_iter().filter(|s| seen.insert(s.inode)));
            }
            Err(error) => moment.failed.push((index, error)),
        }
    }
    moment
}

/// At the start: a process that ended since it was found leaves the watch (a PID target is
/// then gone); one that may not be read is an error.
fn drop_ended(target: Target, watched: &mut Vec<Watched>, mut moment: Moment) -> Result<Moment, HostError> {
    let mut ended = HashSet::new();
    for (index, error) in moment.failed.drain(..) {
        let info = &watched[index].info;
        match error {
            ProcError::NotFound(_) if !matches!(target, Target::Pid(_)) => ended.insert(info.pid),
            error => return Err(proc_error(error, info.pid, Some(info))),
        };
    }
    watched.retain(|w| !ended.contains(&w.info.pid));
    match target {
        Target::Address(address) if watched.is_empty() => Err(HostError::NobodyListens(address.port())),
        Target::Port(port) if watched.is_empty() => Err(HostError::NobodyListens(port)),
        _ => Ok(moment),
    }
}

fn table_error(target: Target, error: ProcError) -> HostError {
    match error {
        ProcError::NotFound(_) => match target {
            Target::Pid(pid) => HostError::NoSuchProcess(pid),
            Target::Port(port) => HostError::NobodyListens(port),
            Target::Address(address) => HostError::NobodyListens(address.port()),
        },
        other => HostError::io("reading the socket table", std::io::Error::other(other.to_string())),
    }
}

fn start_values(
    moment: Moment,
    pressure_some_us: Option<u64>,
    unread: Vec<String>,
    watched: &[Watched],
) -> Result<Start, HostError> {
    let listening_ports = reading::listening_ports(&moment.sockets);
    let clients: Vec<&HeldSocket> = moment.sockets.iter().filter(|s| s.is_client(&listening_ports)).collect();
    let destinations = clients.iter().map(|s| s.remote).collect();
    let mut segments_out = HashMap::new();
    for one in watched {
        let mine: Vec<&HeldSocket> = clients.iter().copied().filter(|s| s.pid == one.info.pid).collect();
        if mine.is_empty() {
            continue;
        }
        let read = reading::segments_out(one.info.pid, &mine).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => no_permission(&one.info),
            _ => HostError::io(format!("reading the connections of {}", one.named()), e),
        })?;
        for socket in mine {
            if let Some(segments) = read.get(&socket.inode) {
                segments_out.insert(socket.inode, (socket.remote, *segments));
            }
        }
    }
    Ok(Start {
        cpu: moment.cpu,
        threads: moment.threads,
        ends: moment.ends,
        tables_read_at: moment.tables_read_at,
        listening_ports,
        destinations,
        segments_out,
        pressure_some_us,
        listen_counters: watched.first().and_then(|w| listen_queue::counters(w.info.pid)),
        connects: RunConnects::start(watched),
        unread,
    })
}

/// Processes that hold the listening socket at the end but were not watched from the start.
fn late_holders(target: Target, watched: &[Watched], unread: &mut Vec<String>) -> Vec<Watched> {
    if matches!(target, Target::Pid(_)) {
        return Vec::new();
    }
    let holders = match server_processes(target) {
        Ok(holders) => holders,
        Err(HostError::NobodyListens(port)) => {
            unread.push(format!("nothing listened on port {port} any more at the end"));
            return Vec::new();
        }
        Err(error) => {
            unread.push(format!("the listening socket's holders at the end: {error}"));
            return Vec::new();
        }
    };
    holders
        .into_iter()
        .filter(|info| watched.iter().all(|w| w.info.pid != info.pid))
        .filter_map(|info| Watched::open(info).ok())
        .collect()
}

/// Says what the end could not read: processes that ended or refused, and the socket table
/// (when some process could be read: otherwise the processes' ending says it all).
fn note_failed(watched: &[Watched], end: &Moment, unread: &mut Vec<String>) {
    if let Some(error) = &end.table_failure
        && !end.cpu.is_empty()
    {
        unread.push(format!("socket table at the end: {error}"));
    }
    for (index, error) in &end.failed {
        let named = watched[*index].named();
        unread.push(match error {
            ProcError::NotFound(_) => format!("{named} ended during the run: its CPU time is not counted"),
            error => format!("{named}: {error}"),
        });
    }
}

/// User and system CPU time of the processes read at the end, since the start.
fn cpu_since(start: &HashMap<i32, CpuTicks>, end: &HashMap<i32, CpuTicks>) -> (u64, u64) {
    let ticks_per_second = procfs::ticks_per_second();
    let spent = end.iter().map(|(pid, now)| now.since(start.get(pid).copied()));
    let (user, system) = spent.fold((0, 0), |(user, system), t| (user + t.user, system + t.system));
    (load::ticks_to_us(user, ticks_per_second), load::ticks_to_us(system, ticks_per_second))
}

fn thread_loads(
    watched: &[Watched],
    start: &[ThreadTimes],
    end: &[ThreadTimes],
    names: &HashMap<(i32, i32), String>,
) -> Vec<ThreadLoad> {
    load::busiest_threads(start, end)
        .into_iter()
        .map(|thread| ThreadLoad {
            pid: thread.pid,
            tid: thread.tid,
            name: match names.get(&(thread.pid, thread.tid)) {
                Some(name) => name.clone(),
                None => watched
                    .iter()
                    .find(|w| w.info.pid == thread.pid)
                    .map_or_else(|| "?".into(), |w| reading::thread_name(&w.process, thread.tid)),
            },
            on_cpu_us: thread.on_cpu_ns / 1_000,
            waiting_for_cpu_us: thread.waiting_for_cpu_ns / 1_000,
        })
        .collect()
}

fn connection_readings(
    start: &mut Start,
    end: Moment,
    sampled: sampler::Sampled,
    listening: &HashSet<u16>,
    connects_per_round: Option<u64>,
    unread: &mut Vec<String>,
) -> ConnectionReadings {
    let clients: Vec<&HeldSocket> = end.sockets.iter().filter(|s| s.is_client(listening)).collect();
    let mut destinations = start.destinations.clone();
    destinations.extend(sampled.destinations);
    destinations.extend(clients.iter().map(|s| s.remote));
    let mut established_at_end = HashMap::new();
    for socket in clients.iter().filter(|s| s.state == procfs::net::TcpState::Established) {
        *established_at_end.entry(socket.remote).or_default() += 1;
    }
    ConnectionReadings {
        destinations,
        at_start: std::mem::take(&mut start.ends),
        at_end: end.ends,
        sampled: sampled.connections,
        elapsed_us: duration_us(end.tables_read_at.duration_since(start.tables_read_at)),
        established_at_end,
        pooled_segments_out: pooled_segments_out(start, &clients, unread),
        connects_per_round,
    }
}

/// Segments sent during the run on the client connections that lived through it, by
/// destination. `segments_out` is a 32-bit counter: it may have wrapped once.
fn pooled_segments_out(
    start: &Start,
    clients: &[&HeldSocket],
    unread: &mut Vec<String>,
) -> HashMap<SocketAddr, u64> {
    let mut by_pid: HashMap<i32, Vec<&HeldSocket>> = HashMap::new();
    for socket in clients.iter().filter(|s| start.segments_out.contains_key(&s.inode)) {
        by_pid.entry(socket.pid).or_default().push(socket);
    }
    let mut pooled = HashMap::new();
    for (pid, sockets) in by_pid {
        match reading::segments_out(pid, &sockets) {
            Ok(now) => {
                for (inode, segments) in now {
                    let (destination, before) = start.segments_out[&inode];
                    *pooled.entry(destination).or_default() += u64::from(segments.wrapping_sub(before));
                }
            }
            Err(error) => {
                unread.push(format!("segments sent on the pooled connections of PID {pid}: {error}"))
            }
        }
    }
    pooled
}

fn read_pressure(unread: &mut Vec<String>) -> Option<u64> {
    reading::cpu_pressure_some_us().unwrap_or_else(|error| {
        unread.push(format!("CPU pressure: {error}"));
        None
    })
}

fn pressure_share(start_us: Option<u64>, end_us: Option<u64>, wall_us: u64) -> Option<CpuPressure> {
    let waited_us = end_us?.saturating_sub(start_us?);
    let share = (waited_us as f64 / wall_us.max(1) as f64).clamp(0.0, 1.0);
    Some(CpuPressure { some_waiting_share: share })
}

fn duration_us(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
