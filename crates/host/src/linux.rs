//! The Linux implementation: /proc for ports, processes and descriptors, pidfd for copies.

use crate::other_namespace;
use crate::pidfd::{self, PidFd};
use crate::socket_fds::socket_fds;
use crate::table_line::TableLine;
use crate::tcp_table::{self, States};
use crate::{HostError, Inspection, NodelayChange, ProcessInfo, Restored, SocketState, SocketView, Target};
use procfs::ProcError;
use procfs::net::TcpState;
use procfs::process::Process;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;

pub(crate) const NEEDS_PIDFD: &str =
    "reading another process's sockets needs Linux 5.6 or later (pidfd_getfd)";

/// A TCP socket of a process, listed from /proc but not yet taken.
pub(crate) struct Listed {
    pub(crate) pid: i32,
    pub(crate) fd: i32,
    pub(crate) inode: u64,
    pub(crate) entry: TableLine,
}

/// The TCP sockets of the target, read through copies of their descriptors.
pub fn inspect(target: Target) -> Result<Inspection, HostError> {
    let (processes, listed) = sockets_of(target, States::All)?;
    let sockets = take_all(&processes, listed)?
        .iter()
        .map(|(socket, copy)| view(socket, copy))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Inspection { processes, sockets })
}

/// Sets TCP_NODELAY on every socket of the target that lacks it (on a dry run, only says
/// which). All copies are taken before anything is changed, so a process that may not be
/// read changes nothing; a socket that refuses the option undoes the ones set before it.
pub fn set_nodelay(target: Target, dry_run: bool) -> Result<NodelayChange, HostError> {
    let (mut processes, listed) = sockets_of(target, States::All)?;
    let mut taken = take_all(&processes, listed)?;
    keep_accepting(target, &mut processes, &mut taken);
    let listening = taken
        .iter()
        .filter(|(socket, _)| socket.entry.state == TcpState::Listen)
        .map(|(socket, _)| socket.entry.local)
        .collect();
    let mut changed: Vec<(SocketView, &OwnedFd)> = Vec::new();
    let mut already_on = 0;
    for (socket, copy) in &taken {
        let before = view(socket, copy)?;
        if before.nodelay {
            already_on += 1;
            continue;
        }
        if !dry_run && let Err(error) = pidfd::set_tcp_nodelay(copy, true) {
            for (_, done) in &changed {
                let _ = pidfd::set_tcp_nodelay(done, false);
            }
            return Err(socket_error("set TCP_NODELAY on", socket, error));
        }
        changed.push((before, copy));
    }
    let changed = changed.into_iter().map(|(before, _)| before).collect();
    Ok(NodelayChange { processes, dry_run, changed, already_on, listening })
}

/// The processes behind `target` for the server view: every holder of a listening socket that
/// accepts it (an Address or a Port), or the process named (a Pid). A copy of each listening
/// socket is taken and closed at once, so a process that may not be read is an error now
/// rather than a hole in the view later.
pub(crate) fn server_processes(target: Target) -> Result<Vec<ProcessInfo>, HostError> {
    let (mut processes, listed) = sockets_of(target, States::Listening)?;
    let mut taken = take_all(&processes, listed)?;
    if !matches!(target, Target::Pid(_)) {
        keep_accepting(target, &mut processes, &mut taken);
    }
    Ok(processes)
}

/// Leaves out what an IPv4 address target does not reach: a wildcard IPv6 listener with
/// IPV6_V6ONLY, and the processes left with no socket.
fn keep_accepting(target: Target, processes: &mut Vec<ProcessInfo>, taken: &mut Vec<(Listed, OwnedFd)>) {
    if let Target::Address(address) = target
        && address.is_ipv4()
    {
        taken.retain(|(socket, copy)| !(socket.entry.local.is_ipv6() && pidfd::v6only(copy)));
        let accepting: HashSet<u64> = taken.iter().map(|(socket, _)| socket.inode).collect();
        // A socket shared by several processes (nginx's master and workers) is listed once,
        // under the first: ask each process for its own descriptors.
        processes.retain(|process| holds_any(process.pid, &accepting));
    }
}

/// Whether process `pid` (still) has a descriptor for one of `inodes`.
fn holds_any(pid: i32, inodes: &HashSet<u64>) -> bool {
    Process::new(pid)
        .and_then(|process| socket_fds(&process))
        .is_ok_and(|sockets| sockets.iter().any(|(_, inode)| inodes.contains(inode)))
}

/// Turns TCP_NODELAY off again on the sockets `change` turned it on, those that still exist
/// (same process, descriptor and inode). Goes on past a failure and lists each.
pub fn restore(change: &NodelayChange) -> Restored {
    let mut outcome = Restored::default();
    if change.dry_run {
        return outcome;
    }
    let mut by_pid: BTreeMap<i32, Vec<&SocketView>> = BTreeMap::new();
    for socket in &change.changed {
        by_pid.entry(socket.pid).or_default().push(socket);
    }
    for (pid, sockets) in by_pid {
        let handle = match PidFd::open(pid) {
            Ok(handle) => handle,
            // The process ended and took its sockets with it.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                outcome.gone += sockets.len();
                continue;
            }
            Err(e) => {
                outcome
                    .failed
                    .extend(sockets.iter().map(|s| format!("PID {pid} fd {}: pidfd_open: {e}", s.fd)));
                continue;
            }
        };
        for socket in sockets {
            let copy = match handle.take(socket.fd) {
                Ok(copy) if pidfd::inode(&copy).ok() == Some(socket.inode) => copy,
                // Closed, or the number now names something else.
                Ok(_) => {
                    outcome.gone += 1;
                    continue;
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::ESRCH)) => {
                    outcome.gone += 1;
                    continue;
                }
                Err(e) => {
                    outcome.failed.push(format!("PID {pid} fd {}: pidfd_getfd: {e}", socket.fd));
                    continue;
                }
            };
            match pidfd::set_tcp_nodelay(&copy, false) {
                Ok(()) => outcome.restored += 1,
                Err(e) => outcome.failed.push(format!("PID {pid} fd {}: setsockopt: {e}", socket.fd)),
            }
        }
    }
    outcome
}

/// `nodelay exec`'s fallback: TCP_NODELAY on every TCP socket of `pid` that lacks it;
/// returns how many it changed.
pub fn force_nodelay(pid: i32) -> Result<usize, HostError> {
    set_nodelay(Target::Pid(pid), false).map(|change| change.changed.len())
}

/// Whether a listener bound to an address (on the target's port) accepts connections to
/// `address`: an IPv4 target is accepted by 0.0.0.0 and by a dual-stack [::] (IPV6_V6ONLY is
/// checked on the socket itself, later); an IPv6 target only by [::].
fn accepting(address: SocketAddr) -> impl Fn(&SocketAddr) -> bool + Copy {
    accepting_where(address, is_local_ip(address.ip()))
}

/// [`accepting`] in a namespace where `address` is (`local`) or is not one of its own.
fn accepting_where(address: SocketAddr, local: bool) -> impl Fn(&SocketAddr) -> bool + Copy {
    let target = mapped(address.ip());
    move |bound| {
        mapped(bound.ip()) == target
            || (local && bound.ip().is_unspecified() && (target.is_ipv4() || bound.is_ipv6()))
    }
}

/// Whether this machine owns `ip`: only then can a socket bind to it.
pub(crate) fn is_local_ip(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
pub(crate) fn mapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The target's processes and their TCP sockets in `states`.
fn sockets_of(target: Target, states: States) -> Result<(Vec<ProcessInfo>, Vec<Listed>), HostError> {
    match target {
        Target::Pid(pid) => {
            let process = open_process(pid)?;
            let info = process_info(&process)?;
            let mut seen = HashSet::new();
            let mut listed = listed_sockets(&process, &info, states)?;
            // A socket with several descriptors (dup) is one socket.
            listed.retain(|socket| seen.insert(socket.inode));
            Ok((vec![info], listed))
        }
        Target::Port(port) => {
            listeners_and_accepted(port, |_| true, |local| local.port() == port, None, states)
        }
        Target::Address(address) => {
            match listeners_and_accepted(address.port(), accepting(address), |_| false, None, states) {
                // Not one of our addresses: the server may run here in another namespace.
                Err(HostError::NobodyListens(port)) if !is_local_ip(address.ip()) => {
                    // The address is such a namespace's own: its wildcard listeners accept it.
                    let listens = accepting_where(address, true);
                    for (process, namespace) in other_namespace::holding(address.ip()) {
                        let namespace = Some((&process, namespace));
                        match listeners_and_accepted(port, listens, |_| false, namespace, states) {
                            Err(HostError::NobodyListens(_)) => continue,
                            found => return found,
                        }
                    }
                    Err(HostError::NobodyListens(port))
                }
                other => other,
            }
        }
    }
}

/// The listening sockets on `port` whose bound address `listens`, in every process that holds
/// one, and those processes' connections on `port` whose local address `accepted` (a
/// connection's local address is the one its client connected to).
/// `namespace`: another network namespace to read (a process of it, and its id), else ours.
fn listeners_and_accepted(
    port: u16,
    listens: impl Fn(&SocketAddr) -> bool,
    accepted: impl Fn(&SocketAddr) -> bool,
    namespace: Option<(&Process, other_namespace::Namespace)>,
    states: States,
) -> Result<(Vec<ProcessInfo>, Vec<Listed>), HostError> {
    let owners = port_owners(port, &listens, namespace)?;
    let mut seen = HashSet::new();
    let mut listed = Vec::new();
    for owner in &owners {
        let process = match open_process(owner.pid) {
            Ok(process) => process,
            // A worker that ended since the scan: its sockets went with it.
            Err(HostError::NoSuchProcess(_)) => continue,
            Err(error) => return Err(error),
        };
        for socket in listed_sockets(&process, owner, states)? {
            let local = &socket.entry.local;
            let wanted =
                if socket.entry.state == TcpState::Listen { listens(local) } else { accepted(local) };
            if local.port() == port && wanted && seen.insert(socket.inode) {
                listed.push(socket);
            }
        }
    }
    Ok((owners, listed))
}

/// Copies of the listed sockets, one pidfd per process. Sockets closed and processes ended
/// since they were listed are left out; a process that may not be read is an error.
fn take_all(processes: &[ProcessInfo], listed: Vec<Listed>) -> Result<Vec<(Listed, OwnedFd)>, HostError> {
    let mut handles: HashMap<i32, Option<PidFd>> = HashMap::new();
    let mut taken = Vec::new();
    for socket in listed {
        let info = processes
            .iter()
            .find(|p| p.pid == socket.pid)
            .expect("listed sockets belong to listed processes");
        let handle = match handles.entry(socket.pid) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(match PidFd::open(socket.pid) {
                Ok(handle) => Some(handle),
                // Ended since it was listed: its sockets went with it.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => None,
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    return Err(HostError::Unsupported(NEEDS_PIDFD));
                }
                Err(e) => return Err(HostError::io(format!("pidfd_open of PID {}", socket.pid), e)),
            }),
        };
        let Some(handle) = handle else { continue };
        let copy = match handle.take(socket.fd) {
            Ok(copy) => copy,
            // Closed since it was listed, or the process ended.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::ESRCH)) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => return Err(no_permission(info)),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                return Err(HostError::Unsupported(NEEDS_PIDFD));
            }
            Err(e) => return Err(socket_error("take", &socket, e)),
        };
        // The number may have been reused for something else since it was listed.
        if pidfd::inode(&copy).ok() == Some(socket.inode) {
            taken.push((socket, copy));
        }
    }
    Ok(taken)
}

fn socket_error(what: &str, socket: &Listed, error: io::Error) -> HostError {
    HostError::io(format!("cannot {what} PID {} fd {}", socket.pid, socket.fd), error)
}

fn view(socket: &Listed, copy: &OwnedFd) -> Result<SocketView, HostError> {
    let read =
        |option| pidfd::tcp_flag(copy, option).map_err(|e| socket_error("read an option of", socket, e));
    let state = state(&socket.entry.state);
    let connected = !matches!(state, SocketState::Listen | SocketState::Close);
    Ok(SocketView {
        pid: socket.pid,
        fd: socket.fd,
        inode: socket.inode,
        state,
        local: socket.entry.local,
        peer: connected.then_some(socket.entry.remote),
        nodelay: read(libc::TCP_NODELAY)?,
        cork: read(libc::TCP_CORK)?,
        tcp_info: if connected { nodelay_tcp::read_tcp_info(copy) } else { None },
    })
}

pub(crate) fn state(state: &TcpState) -> SocketState {
    match state {
        TcpState::Listen => SocketState::Listen,
        TcpState::Established => SocketState::Established,
        TcpState::SynSent => SocketState::SynSent,
        TcpState::SynRecv | TcpState::NewSynRecv => SocketState::SynRecv,
        TcpState::FinWait1 => SocketState::FinWait1,
        TcpState::FinWait2 => SocketState::FinWait2,
        TcpState::TimeWait => SocketState::TimeWait,
        TcpState::Close => SocketState::Close,
        TcpState::CloseWait => SocketState::CloseWait,
        TcpState::LastAck => SocketState::LastAck,
        TcpState::Closing => SocketState::Closing,
    }
}

pub(crate) fn open_process(pid: i32) -> Result<Process, HostError> {
    let process = Process::new(pid).map_err(|e| proc_error(e, pid, None))?;
    // Process::new only opens /proc/PID, which threads have too (unlisted).
    let status = process.status().map_err(|e| proc_error(e, pid, None))?;
    if status.tgid != pid {
        return Err(HostError::Thread { tid: pid, pid: status.tgid });
    }
    // A zombie whose other threads still run (its main thread called pthread_exit) is alive.
    if status.state.starts_with('Z') && status.threads <= 1 {
        return Err(HostError::Exited(pid));
    }
    Ok(process)
}

pub(crate) fn process_info(process: &Process) -> Result<ProcessInfo, HostError> {
    let pid = process.pid;
    let command = printable(&process.stat().map_err(|e| proc_error(e, pid, None))?.comm);
    let uid = process.uid().map_err(|e| proc_error(e, pid, None))?;
    Ok(ProcessInfo { pid, command, uid })
}

/// A program names itself (and its threads): never let it put escape sequences on the
/// user's terminal.
pub(crate) fn printable(name: &str) -> String {
    name.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

pub(crate) fn proc_error(error: ProcError, pid: i32, info: Option<&ProcessInfo>) -> HostError {
    match error {
        ProcError::NotFound(_) => HostError::NoSuchProcess(pid),
        ProcError::PermissionDenied(_) => match info {
            Some(info) => no_permission(info),
            None => HostError::NoPermission {
                pid,
                command: "?".into(),
                why: "its /proc entry cannot be read".into(),
            },
        },
        other => HostError::io(format!("reading /proc/{pid}"), io::Error::other(other.to_string())),
    }
}

/// The TCP sockets in `states` among the process's descriptors, with their table entries
/// (the process's own network namespace).
fn listed_sockets(process: &Process, info: &ProcessInfo, states: States) -> Result<Vec<Listed>, HostError> {
    let sockets = socket_fds(process).map_err(|e| proc_error(e, info.pid, Some(info)))?;
    if sockets.is_empty() {
        return Ok(Vec::new());
    }
    let table = tcp_table(Some(process), states).map_err(|e| proc_error(e, info.pid, Some(info)))?;
    Ok(sockets
        .into_iter()
        .filter_map(|(fd, inode)| {
            // Several descriptors may share a socket: each is listed, the table entry cloned.
            let entry = table.get(&inode)?.clone();
            Some(Listed { pid: info.pid, fd, inode, entry })
        })
        .collect())
}

/// TCP sockets in `states` by inode: the process's network namespace, or ours.
fn tcp_table(process: Option<&Process>, states: States) -> Result<HashMap<u64, TableLine>, ProcError> {
    let lines = tcp_table::read_once_in(process, states)?;
    Ok(lines.into_iter().filter(|line| line.inode != 0).map(|line| (line.inode, line)).collect())
}

/// The processes holding a listening socket on `port` whose bound address `accepts`, in our
/// network namespace or in `namespace` (read through one of its processes).
fn port_owners(
    port: u16,
    accepts: impl Fn(&SocketAddr) -> bool,
    namespace: Option<(&Process, other_namespace::Namespace)>,
) -> Result<Vec<ProcessInfo>, HostError> {
    let table = tcp_table(namespace.map(|(process, _)| process), States::Listening)
        .map_err(|e| HostError::io("reading the TCP socket table", io::Error::other(e.to_string())))?;
    let listening: HashMap<u64, &TableLine> = table
        .iter()
        .filter(|(_, entry)| {
            entry.state == TcpState::Listen && entry.local.port() == port && accepts(&entry.local)
        })
        .map(|(&inode, entry)| (inode, entry))
        .collect();
    if listening.is_empty() {
        return Err(HostError::NobodyListens(port));
    }
    let mut owners = Vec::new();
    let mut found = HashSet::new();
    let processes = procfs::process::all_processes()
        .map_err(|e| HostError::io("listing /proc", io::Error::other(e.to_string())))?;
    for process in processes.filter_map(Result::ok) {
        // Socket inodes are unique machine-wide, but only the namespace's own processes
        // are read when it is another.
        if let Some((_, id)) = namespace
            && other_namespace::namespace_of(Some(&process)) != Some(id)
        {
            continue;
        }
        // Another user's descriptors are unreadable without privilege: skip, say so below.
        let Ok(sockets) = socket_fds(&process) else { continue };
        let held: Vec<u64> = sockets
            .into_iter()
            .map(|(_, inode)| inode)
            .filter(|inode| listening.contains_key(inode))
            .collect();
        if !held.is_empty()
            && let Ok(info) = process_info(&process)
        {
            found.extend(held);
            owners.push(info);
        }
    }
    // Every listener must be found: fixing some and silently skipping the others (of a user
    // whose processes cannot be read) would claim more than was done.
    if let Some(hidden) = listening.iter().find(|(inode, _)| !found.contains(*inode)).map(|(_, entry)| entry)
    {
        return Err(HostError::PortOwnerHidden { port, uid: hidden.uid });
    }
    Ok(owners)
}

/// Which permission is missing, in words, for a process whose descriptors we may not take.
pub(crate) fn no_permission(info: &ProcessInfo) -> HostError {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let why = if euid != 0 && info.uid != euid {
        format!("it runs as uid {} and you are uid {euid}; that needs root or CAP_SYS_PTRACE", info.uid)
    } else if yama > 0 {
        format!(
            "kernel.yama.ptrace_scope is {yama}, which leaves another process's descriptors to root or CAP_SYS_PTRACE"
        )
    } else {
        "pidfd_getfd needs root, CAP_SYS_PTRACE, or the same user (the process may have made itself undumpable)"
            .into()
    };
    HostError::NoPermission { pid: info.pid, command: info.command.clone(), why }
}
