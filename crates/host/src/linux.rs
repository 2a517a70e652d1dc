//! The Linux implementation: /proc for ports, processes and descriptors, pidfd for copies.

use crate::pidfd::{self, PidFd};
use crate::{HostError, Inspection, NodelayChange, ProcessInfo, SocketState, SocketView, Target};
use procfs::ProcError;
use procfs::net::{TcpNetEntry, TcpState};
use procfs::process::{FDTarget, Process};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;

pub(crate) const NEEDS_PIDFD: &str =
    "reading another process's sockets needs Linux 5.6 or later (pidfd_getfd)";

/// A TCP socket of a process, listed from /proc but not yet taken.
struct Listed {
    pid: i32,
    fd: i32,
    inode: u64,
    entry: TcpNetEntry,
}

/// The TCP sockets of the target, read through copies of their descriptors.
pub fn inspect(target: Target) -> Result<Inspection, HostError> {
    let (processes, listed) = sockets_of(target)?;
    let mut sockets = Vec::new();
    for_each_taken(&processes, listed, |socket, copy| {
        sockets.push(view(socket, &copy)?);
        Ok(())
    })?;
    Ok(Inspection { processes, sockets })
}

/// Sets TCP_NODELAY on every socket of the target that lacks it (on a dry run, only says
/// which). For a port: its listening sockets and the connections they accepted.
pub fn set_nodelay(target: Target, dry_run: bool) -> Result<NodelayChange, HostError> {
    let (processes, listed) = sockets_of(target)?;
    let mut changed = Vec::new();
    let mut already_on = 0;
    for_each_taken(&processes, listed, |socket, copy| {
        let before = view(socket, &copy)?;
        if before.nodelay {
            already_on += 1;
            return Ok(());
        }
        if !dry_run {
            pidfd::set_tcp_nodelay(&copy, true).map_err(|e| socket_error("set TCP_NODELAY on", socket, e))?;
        }
        changed.push(before);
        Ok(())
    })?;
    Ok(NodelayChange { processes, dry_run, changed, already_on })
}

/// Turns TCP_NODELAY off again on the sockets `change` turned it on, those that still exist
/// (same process, descriptor and inode). Returns how many it restored.
pub fn restore(change: &NodelayChange) -> Result<usize, HostError> {
    if change.dry_run {
        return Ok(0);
    }
    let mut restored = 0;
    let mut by_pid: BTreeMap<i32, Vec<&SocketView>> = BTreeMap::new();
    for socket in &change.changed {
        by_pid.entry(socket.pid).or_default().push(socket);
    }
    for (pid, sockets) in by_pid {
        // A process that ended took its sockets with it: nothing to restore there.
        let Ok(handle) = PidFd::open(pid) else { continue };
        for socket in sockets {
            let Ok(copy) = handle.take(socket.fd) else { continue };
            if pidfd::inode(&copy).ok() != Some(socket.inode) {
                continue;
            }
            pidfd::set_tcp_nodelay(&copy, false).map_err(|e| {
                HostError::io(format!("restoring TCP_NODELAY on PID {pid} fd {}", socket.fd), e)
            })?;
            restored += 1;
        }
    }
    Ok(restored)
}

/// `nodelay exec`'s fallback: TCP_NODELAY on every TCP socket of `pid` that lacks it;
/// returns how many it changed.
pub fn force_nodelay(pid: i32) -> Result<usize, HostError> {
    set_nodelay(Target::Pid(pid), false).map(|change| change.changed.len())
}

/// The processes listening on `address`, a target this machine may serve: a listener bound
/// to that address, or to the wildcard address when `address` is one of this machine's.
pub fn listeners_of(address: SocketAddr) -> Result<Vec<ProcessInfo>, HostError> {
    port_owners(address.port(), accepting(address))
}

/// Whether a listener bound to an address (on the target's port) accepts connections to
/// `address`.
fn accepting(address: SocketAddr) -> impl Fn(&SocketAddr) -> bool {
    let local = is_local_ip(address.ip());
    move |bound| mapped(bound.ip()) == mapped(address.ip()) || (local && bound.ip().is_unspecified())
}

/// Whether this machine owns `ip`: only then can a socket bind to it.
fn is_local_ip(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
fn mapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn sockets_of(target: Target) -> Result<(Vec<ProcessInfo>, Vec<Listed>), HostError> {
    match target {
        Target::Pid(pid) => {
            let process = open_process(pid)?;
            let info = process_info(&process)?;
            let mut seen = HashSet::new();
            let mut listed = listed_sockets(&process, &info)?;
            // A socket with several descriptors (dup) is one socket.
            listed.retain(|socket| seen.insert(socket.inode));
            Ok((vec![info], listed))
        }
        Target::Port(port) => listeners_and_accepted(port, |_| true, |local| local.port() == port),
        Target::Address(address) => listeners_and_accepted(address.port(), accepting(address), |_| false),
    }
}

/// The listening sockets on `port` whose bound address `listens`, in every process that holds
/// one, and those processes' connections on `port` whose local address `accepted` (a
/// connection's local address is the one its client connected to).
fn listeners_and_accepted(
    port: u16,
    listens: impl Fn(&SocketAddr) -> bool,
    accepted: impl Fn(&SocketAddr) -> bool,
) -> Result<(Vec<ProcessInfo>, Vec<Listed>), HostError> {
    let owners = port_owners(port, &listens)?;
    let mut seen = HashSet::new();
    let mut listed = Vec::new();
    for owner in &owners {
        let process = open_process(owner.pid)?;
        for socket in listed_sockets(&process, owner)? {
            let local = &socket.entry.local_address;
            let wanted =
                if socket.entry.state == TcpState::Listen { listens(local) } else { accepted(local) };
            if local.port() == port && wanted && seen.insert(socket.inode) {
                listed.push(socket);
            }
        }
    }
    Ok((owners, listed))
}

/// Opens a pidfd per process and hands each listed socket's copy to `action`; the copy is
/// closed right after. Sockets closed meanwhile are skipped.
fn for_each_taken(
    processes: &[ProcessInfo],
    listed: Vec<Listed>,
    mut action: impl FnMut(&Listed, OwnedFd) -> Result<(), HostError>,
) -> Result<(), HostError> {
    let mut handles: HashMap<i32, PidFd> = HashMap::new();
    for socket in &listed {
        let info = processes
            .iter()
            .find(|p| p.pid == socket.pid)
            .expect("listed sockets belong to listed processes");
        let handle = match handles.entry(socket.pid) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                entry.insert(PidFd::open(socket.pid).map_err(|e| match e.raw_os_error() {
                    Some(libc::ESRCH) => HostError::NoSuchProcess(socket.pid),
                    Some(libc::ENOSYS) => HostError::Unsupported(NEEDS_PIDFD),
                    _ => HostError::io(format!("pidfd_open of PID {}", socket.pid), e),
                })?)
            }
        };
        let copy = match handle.take(socket.fd) {
            Ok(copy) => copy,
            // Closed since it was listed, or the process ended.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::ESRCH)) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => return Err(no_permission(info)),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                return Err(HostError::Unsupported(NEEDS_PIDFD));
            }
            Err(e) => return Err(socket_error("take", socket, e)),
        };
        // The number may have been reused for something else since it was listed.
        if pidfd::inode(&copy).ok() != Some(socket.inode) {
            continue;
        }
        action(socket, copy)?;
    }
    Ok(())
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
        local: socket.entry.local_address,
        peer: connected.then_some(socket.entry.remote_address),
        nodelay: read(libc::TCP_NODELAY)?,
        cork: read(libc::TCP_CORK)?,
        tcp_info: if connected { nodelay_engine::read_tcp_info(copy) } else { None },
    })
}

fn state(state: &TcpState) -> SocketState {
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

fn open_process(pid: i32) -> Result<Process, HostError> {
    let process = Process::new(pid).map_err(|e| proc_error(e, pid, None))?;
    // Process::new only opens /proc/PID: a zombie or a thread id is not a process to fix.
    match process.stat() {
        Ok(stat) if stat.state == 'Z' => Err(HostError::NoSuchProcess(pid)),
        Ok(_) => Ok(process),
        Err(e) => Err(proc_error(e, pid, None)),
    }
}

fn process_info(process: &Process) -> Result<ProcessInfo, HostError> {
    let pid = process.pid;
    let command = process.stat().map_err(|e| proc_error(e, pid, None))?.comm;
    let uid = process.uid().map_err(|e| proc_error(e, pid, None))?;
    Ok(ProcessInfo { pid, command, uid })
}

fn proc_error(error: ProcError, pid: i32, info: Option<&ProcessInfo>) -> HostError {
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

/// The TCP sockets among the process's descriptors, with their /proc/PID/net/tcp entries
/// (the process's own network namespace).
fn listed_sockets(process: &Process, info: &ProcessInfo) -> Result<Vec<Listed>, HostError> {
    let fds = process.fd().map_err(|e| proc_error(e, info.pid, Some(info)))?;
    let mut sockets: Vec<(i32, u64)> = fds
        .filter_map(Result::ok)
        .filter_map(|fd| match fd.target {
            FDTarget::Socket(inode) => Some((fd.fd, inode)),
            _ => None,
        })
        .collect();
    if sockets.is_empty() {
        return Ok(Vec::new());
    }
    sockets.sort_unstable();
    let table = tcp_table(Some(process)).map_err(|e| proc_error(e, info.pid, Some(info)))?;
    Ok(sockets
        .into_iter()
        .filter_map(|(fd, inode)| {
            // Several descriptors may share a socket: each is listed, the table entry cloned.
            let entry = table.get(&inode)?.clone();
            Some(Listed { pid: info.pid, fd, inode, entry })
        })
        .collect())
}

/// TCP sockets by inode: the process's network namespace, or ours.
fn tcp_table(process: Option<&Process>) -> Result<HashMap<u64, TcpNetEntry>, ProcError> {
    let (v4, v6) = match process {
        Some(process) => (process.tcp()?, process.tcp6().unwrap_or_default()),
        None => (procfs::net::tcp()?, procfs::net::tcp6().unwrap_or_default()),
    };
    Ok(v4.into_iter().chain(v6).filter(|entry| entry.inode != 0).map(|entry| (entry.inode, entry)).collect())
}

/// The processes holding a listening socket on `port` whose bound address `accepts`.
fn port_owners(port: u16, accepts: impl Fn(&SocketAddr) -> bool) -> Result<Vec<ProcessInfo>, HostError> {
    let table = tcp_table(None)
        .map_err(|e| HostError::io("reading /proc/net/tcp", io::Error::other(e.to_string())))?;
    let listening: HashMap<u64, &TcpNetEntry> = table
        .iter()
        .filter(|(_, entry)| {
            entry.state == TcpState::Listen
                && entry.local_address.port() == port
                && accepts(&entry.local_address)
        })
        .map(|(&inode, entry)| (inode, entry))
        .collect();
    let Some(any) = listening.values().next() else { return Err(HostError::NobodyListens(port)) };
    let mut owners = Vec::new();
    let processes = procfs::process::all_processes()
        .map_err(|e| HostError::io("listing /proc", io::Error::other(e.to_string())))?;
    for process in processes.filter_map(Result::ok) {
        // Another user's descriptors are unreadable without privilege: skip, say so below.
        let Ok(fds) = process.fd() else { continue };
        let holds = fds
            .filter_map(Result::ok)
            .any(|fd| matches!(fd.target, FDTarget::Socket(inode) if listening.contains_key(&inode)));
        if holds && let Ok(info) = process_info(&process) {
            owners.push(info);
        }
    }
    if owners.is_empty() {
        return Err(HostError::PortOwnerHidden { port, uid: any.uid });
    }
    Ok(owners)
}

/// Which permission is missing, in words, for a process whose descriptors we may not take.
fn no_permission(info: &ProcessInfo) -> HostError {
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
