//! The watched processes read at one instant (the start or the end of a run): their CPU
//! ticks, their threads' scheduler times, their TCP sockets, the socket table of their
//! network namespace, and the machine's CPU pressure. Everything through `procfs`.

use super::connections::{self, Directed, Incarnation};
use super::load::{CpuTicks, ThreadTimes};
use crate::ProcessInfo;
use crate::pidfd::{self, PidFd};
use crate::socket_fds::socket_fds;
use crate::table_line::TableLine;
use crate::tcp_table;
use procfs::net::TcpState;
use procfs::process::Process;
use procfs::{Current, ProcError};
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The inode of /proc/`pid`/ns/net, 0 when it cannot be read.
pub fn netns_of(pid: &str) -> u64 {
    std::fs::metadata(format!("/proc/{pid}/ns/net")).map_or(0, |m| m.ino())
}

/// Whether the namespace of inode `netns` is the calling thread's (0, unknown, is not).
pub fn is_our_namespace(netns: u64) -> bool {
    // The calling thread's: a thread may have a namespace of its own (unshare(CLONE_NEWNET)),
    // and its sockets, and its children, are there, not in /proc/self's (the main thread's).
    netns != 0 && netns == netns_of("thread-self")
}

/// A process behind the target. `process` holds /proc/PID open, so a PID reused by another
/// program after this one ended reads as ended, never as the other program.
pub struct Watched {
    pub info: ProcessInfo,
    pub process: Process,
    /// The inode of its network namespace: processes that share one share a socket table.
    pub netns: u64,
}

impl Watched {
    pub fn open(info: ProcessInfo) -> Result<Watched, ProcError> {
        let process = Process::new(info.pid)?;
        Ok(Watched { netns: netns_of(&info.pid.to_string()), info, process })
    }

    /// Whether it is in the calling thread's network namespace.
    pub fn shares_our_namespace(&self) -> bool {
        is_our_namespace(self.netns)
    }

    /// "PID 42 (nginx)", for what could not be read.
    pub fn named(&self) -> String {
        format!("PID {} ({})", self.info.pid, self.info.command)
    }
}

/// A TCP socket a watched process holds.
#[derive(Debug, Clone)]
pub struct HeldSocket {
    pub pid: i32,
    pub fd: i32,
    pub inode: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: TcpState,
}

impl HeldSocket {
    /// The socket `line` lists, held by `pid` as descriptor `fd`.
    fn new(pid: i32, fd: i32, line: &TableLine) -> HeldSocket {
        HeldSocket {
            pid,
            fd,
            inode: line.inode,
            local: line.local,
            remote: connections::normal(line.remote),
            state: line.state.clone(),
        }
    }

    /// A connection the server made (it is the client): connected, from a port it does not
    /// listen on.
    pub fn is_client(&self, listening_ports: &HashSet<u16>) -> bool {
        self.state != TcpState::Listen
            && self.remote.port() != 0
            && !listening_ports.contains(&self.local.port())
    }
}

/// The ports the sockets listen on.
pub fn listening_ports(sockets: &[HeldSocket]) -> HashSet<u16> {
    sockets.iter().filter(|s| s.state == TcpState::Listen).map(|s| s.local.port()).collect()
}

/// One process at one instant.
pub struct ProcessReading {
    pub cpu: CpuTicks,
    pub sockets: Vec<HeldSocket>,
    /// Empty, with a phrase in `unread`, where the threads could not be read.
    pub threads: Vec<ThreadTimes>,
}

/// Reads one process; `table` is its namespace's sockets by inode. An error means the
/// process itself could not be read (ended, or not ours to read).
pub fn read_process(
    watched: &Watched,
    table: &HashMap<u64, &TableLine>,
    unread: &mut Vec<String>,
) -> Result<ProcessReading, ProcError> {
    let stat = watched.process.stat()?;
    let cpu = CpuTicks { user: stat.utime, system: stat.stime };
    let sockets = socket_fds(&watched.process)?
        .into_iter()
        .filter_map(|(fd, inode)| Some(HeldSocket::new(watched.info.pid, fd, table.get(&inode)?)))
        .collect();
    let threads = thread_times(&watched.process).unwrap_or_else(|error| {
        unread.push(format!("threads of {}: {error}", watched.named()));
        Vec::new()
    });
    Ok(ProcessReading { cpu, sockets, threads })
}

/// Every thread's schedstat. A thread that ends while they are listed is left out; a kernel
/// without schedstat (CONFIG_SCHED_INFO) is an error.
pub fn thread_times(process: &Process) -> Result<Vec<ThreadTimes>, ProcError> {
    let mut times = Vec::new();
    let mut failure = None;
    for task in process.tasks()?.filter_map(Result::ok) {
        match task.schedstat() {
            Ok(stat) => times.push(ThreadTimes {
                pid: task.pid,
                tid: task.tid,
                on_cpu_ns: stat.sum_exec_runtime,
                waiting_for_cpu_ns: stat.run_delay,
            }),
            Err(ProcError::NotFound(_)) => {}
            Err(error) => failure = Some(error),
        }
    }
    match failure {
        Some(error) if times.is_empty() => Err(error),
        _ => Ok(times),
    }
}

/// The name of a thread (`comm`), `?` for one that ended since.
pub fn thread_name(process: &Process, tid: i32) -> String {
    process
        .task_from_tid(tid)
        .and_then(|task| task.stat())
        .map_or_else(|_| "?".into(), |stat| crate::linux::printable(&stat.comm))
}

/// The socket tables of the watched processes' network namespaces (usually one), each read
/// through the first of its processes that can still be read.
pub fn socket_tables(watched: &[Watched]) -> Result<HashMap<u64, Vec<TableLine>>, ProcError> {
    let mut tables = HashMap::new();
    let mut failure = None;
    for one in watched {
        if tables.contains_key(&one.netns) {
            continue;
        }
        match tcp_table::read(Some(&one.process)) {
            Ok(entries) => {
                tables.insert(one.netns, entries);
            }
            Err(error) => failure = Some(error),
        }
    }
    match failure {
        Some(error) if tables.is_empty() => Err(error),
        _ => Ok(tables),
    }
}

/// Every connection end in the tables.
pub fn all_ends(tables: &HashMap<u64, Vec<TableLine>>) -> HashMap<Directed, Incarnation> {
    tables.values().flat_map(|lines| connections::ends(lines)).collect()
}

/// A namespace's sockets that have an owner, by inode.
pub fn by_inode(lines: &[TableLine]) -> HashMap<u64, &TableLine> {
    lines.iter().filter(|line| line.inode != 0).map(|line| (line.inode, line)).collect()
}

/// TCP_INFO `segments_out` of some sockets of process `pid`, by inode, read through copies
/// closed at once. Sockets closed since they were listed, or a process that ended, are left
/// out; a process whose descriptors may not be taken is an error (EPERM).
pub fn segments_out(pid: i32, sockets: &[&HeldSocket]) -> io::Result<HashMap<u64, u32>> {
    let mut found = HashMap::new();
    let handle = match PidFd::open(pid) {
        Ok(handle) => handle,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(found),
        Err(e) => return Err(e),
    };
    for socket in sockets {
        let copy = match handle.take(socket.fd) {
            Ok(copy) => copy,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::ESRCH)) => continue,
            Err(e) => return Err(e),
        };
        // The number may name another file by now.
        if pidfd::inode(&copy).ok() == Some(socket.inode)
            && let Some(info) = nodelay_tcp::read_tcp_info(&copy)
        {
            found.insert(socket.inode, info.segments_out);
        }
    }
    Ok(found)
}

/// The `some` line's `total` of /proc/pressure/cpu (µs during which at least one task
/// waited for a CPU); `None` where the kernel has no PSI (built without, or booted `psi=0`,
/// which leaves the file there but refuses reads).
pub fn cpu_pressure_some_us() -> Result<Option<u64>, ProcError> {
    if !Path::new("/proc/pressure/cpu").exists() {
        return Ok(None);
    }
    match procfs::CpuPressure::current() {
        Ok(pressure) => Ok(Some(pressure.some.total)),
        Err(ProcError::Io(error, _)) if error.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(None),
        Err(error) => Err(error),
    }
}

pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(online).unwrap_or(1).max(1)
}
