//! Which local process and descriptor holds the TCP socket of a 4-tuple, for `nodelay watch`
//! to name a stalled flow's process ("nginx (PID 812), fd 9"). One scan maps 4-tuples to
//! socket inodes through sock_diag (every state but TIME-WAIT and SYN-RECV, whose sockets no
//! descriptor holds), then inodes to (PID, fd) through every /proc/PID/fd.
//!
//! A process that ends during the scan is skipped; one whose descriptors may not be read
//! (another user's, without root or CAP_SYS_PTRACE) is skipped and counted, so the caller can
//! say "N processes not readable": their sockets have no owner in the index. Kernel threads,
//! which hold no descriptors, are not counted. Only sockets of the calling thread's network
//! namespace are indexed (a container's are not, unless watch runs in its namespace).
//!
//! Cost, measured here (2 cores, release build, ~90 processes): ~6 ms a scan with a few
//! sockets; with 10 000 TCP sockets open (5 000 loopback connections, both ends in one
//! process) ~66 ms on a quiet machine, ~100 ms at load average 5. Most of it is the kernel's:
//! one readlink of /proc/PID/fd/N per descriptor (~5 µs each here, a stat costs the same),
//! the listing of those directories, and the dump. Refreshing every second costs ~1 % of a
//! core per 1 000 sockets. Measured by `cargo test --release -p nodelay-host --test
//! socket_owner -- --ignored --nocapture scan_time`.

use crate::linux::printable;
use crate::sock_diag;
use crate::socket_fds::socket_fds;
use procfs::ProcError;
use procfs::net::TcpState;
use procfs::process::Process;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io;
use std::net::{IpAddr, SocketAddr};

/// `PF_KTHREAD` of /proc/PID/stat's flags: a kernel thread, which has no descriptors.
const PF_KTHREAD: u32 = 0x0020_0000;
/// `INET_DIAG_SKV6ONLY`: whether an IPv6 listener refuses IPv4 (sent for listeners).
const INET_DIAG_SKV6ONLY: u16 = 11;
/// `comm` is cut at 15 bytes: a name that long may be a longer program name cut short.
const COMM_MAX_BYTES: usize = 15;

/// The process and descriptor that hold one TCP socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketOwner {
    /// The process ID.
    pub pid: u32,
    /// Its name: `comm`, or `argv[0]`'s file name when `comm` is that name cut at 15 bytes.
    /// Control characters are replaced by `?`.
    pub command: String,
    /// The descriptor number in that process (its lowest, if it holds several).
    pub fd: i32,
    /// The socket's inode.
    pub inode: u64,
}

/// One TCP socket of the table, as the index keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Indexed {
    pub(crate) inode: u64,
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    pub(crate) state: TcpState,
    /// IPv6 listener with IPV6_V6ONLY: refuses IPv4 connections.
    pub(crate) v6only: bool,
}

/// The states whose sockets a descriptor may hold: all but TIME-WAIT and SYN-RECV.
pub(crate) const HELD_STATES: u32 =
    sock_diag::ALL_STATES & !(1 << TcpState::TimeWait as u32) & !(1 << TcpState::NewSynRecv as u32);

/// The TCP sockets of this network namespace and the processes that hold them, at one scan.
#[derive(Debug, Clone, Default)]
pub struct OwnerIndex {
    /// By inode; a socket several processes share (a forked server's listener, or any socket
    /// in a child between its fork and its exec) is under the oldest process that holds it.
    owners: HashMap<u64, Holder>,
    /// Inode by (local, remote), addresses canonical (IPv4-mapped IPv6 as IPv4).
    by_tuple: HashMap<(SocketAddr, SocketAddr), u64>,
    /// Listening sockets by port, the oldest owner's first.
    listeners: HashMap<u16, Vec<(u64, Indexed)>>,
    unreadable_processes: usize,
    vanished_processes: usize,
}

impl OwnerIndex {
    /// Scans the TCP socket table and every process's descriptors. Fails only when the socket
    /// table cannot be read (sock_diag refused) or /proc cannot be listed; a process that ends
    /// or may not be read is skipped.
    pub fn scan() -> io::Result<OwnerIndex> {
        OwnerIndex::from_table(table()?, None)
    }

    /// As [`OwnerIndex::scan`], but only process `pid`'s descriptors are read: its sockets
    /// have an owner, no other socket has. Much cheaper than a whole scan.
    pub fn scan_process(pid: u32) -> io::Result<OwnerIndex> {
        OwnerIndex::from_table(table()?, Some(pid))
    }

    /// The index of `sockets` (the table, or part of it), their owners read from /proc: every
    /// process's, or only `pid`'s.
    pub(crate) fn from_table(sockets: Vec<Indexed>, pid: Option<u32>) -> io::Result<OwnerIndex> {
        let mut index = OwnerIndex::default();
        let mut by_inode: HashMap<u64, Indexed> = HashMap::with_capacity(sockets.len());
        for socket in sockets {
            index.by_tuple.insert((canonical(socket.local), canonical(socket.remote)), socket.inode);
            if socket.state == TcpState::Listen {
                index.listeners.entry(socket.local.port()).or_default().push((socket.inode, socket.clone()));
            }
            by_inode.insert(socket.inode, socket);
        }
        match pid {
            // Nothing to own (a port nobody uses): the walk of /proc would find nothing.
            _ if by_inode.is_empty() => {}
            None => index.find_owners(&by_inode)?,
            Some(pid) => index.read_process(pid as i32, &by_inode),
        }
        for listening in index.listeners.values_mut() {
            let owners = &index.owners;
            listening
                .sort_by_key(|(inode, _)| (owners.get(inode).map_or((u64::MAX, 0), Holder::age_key), *inode));
        }
        Ok(index)
    }

    /// Walks /proc: each process's socket descriptors that are in `sockets`.
    fn find_owners(&mut self, sockets: &HashMap<u64, Indexed>) -> io::Result<()> {
        let mut pids: Vec<i32> = std::fs::read_dir("/proc")?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        pids.sort_unstable();
        for pid in pids {
            self.read_process(pid, sockets);
        }
        Ok(())
    }

    /// Adds the sockets `pid` holds, or counts it as vanished or unreadable.
    fn read_process(&mut self, pid: i32, sockets: &HashMap<u64, Indexed>) {
        match process_sockets(pid, sockets) {
            Read::Held { command, started_ticks, held } => {
                for (fd, inode) in held {
                    let holder = Holder {
                        owner: SocketOwner { pid: pid as u32, command: command.clone(), fd, inode },
                        started_ticks,
                    };
                    match self.owners.entry(inode) {
                        Entry::Vacant(entry) => {
                            entry.insert(holder);
                        }
                        Entry::Occupied(mut entry) if holder.age_key() < entry.get().age_key() => {
                            entry.insert(holder);
                        }
                        Entry::Occupied(_) => {}
                    }
                }
            }
            Read::Nothing => {}
            Read::Vanished => self.vanished_processes += 1,
            Read::Unreadable => self.unreadable_processes += 1,
        }
    }

    /// The owner of the socket whose local address is `local` and peer `remote` (IPv4 and
    /// IPv4-mapped IPv6 addresses are the same here). `None` when no such socket was held at
    /// the scan, or its process could not be read.
    pub fn owner(&self, local: SocketAddr, remote: SocketAddr) -> Option<&SocketOwner> {
        let inode = self.by_tuple.get(&(canonical(local), canonical(remote)))?;
        self.owners.get(inode).map(|holder| &holder.owner)
    }

    /// The owner of either end of a flow seen between `a` and `b`, for a packet whose
    /// direction does not say which end is local: `a`'s socket first (both are found when both
    /// ends are on this host).
    pub fn flow_owners(&self, a: SocketAddr, b: SocketAddr) -> [Option<&SocketOwner>; 2] {
        [self.owner(a, b), self.owner(b, a)]
    }

    /// The owner of a socket listening on `port`, any address (the oldest process's when
    /// several listen).
    pub fn owner_of_port(&self, port: u16) -> Option<&SocketOwner> {
        self.listeners.get(&port)?.iter().find_map(|(inode, _)| self.by_inode(*inode))
    }

    /// The owner of the listening socket that accepts connections to `local`: bound to that
    /// address, else to the wildcard of its family, else (IPv4) to a dual-stack `[::]`. For a
    /// connection whose own socket was closed before the scan.
    pub fn listener_for(&self, local: SocketAddr) -> Option<&SocketOwner> {
        let local_ip = canonical(local).ip();
        let listening = self.listeners.get(&local.port())?;
        let rank = |socket: &Indexed| {
            let bound = canonical(socket.local).ip();
            if bound == local_ip {
                Some(0)
            } else if bound.is_unspecified() && bound.is_ipv4() == local_ip.is_ipv4() {
                Some(1)
            } else if bound.is_unspecified() && local_ip.is_ipv4() && !socket.v6only {
                Some(2)
            } else {
                None
            }
        };
        listening
            .iter()
            .filter_map(|(inode, socket)| Some((rank(socket)?, self.by_inode(*inode)?)))
            .min_by_key(|(rank, _)| *rank)
            .map(|(_, owner)| owner)
    }

    /// The owner of the socket with this inode.
    pub fn by_inode(&self, inode: u64) -> Option<&SocketOwner> {
        self.owners.get(&inode).map(|holder| &holder.owner)
    }

    /// How many sockets have an owner in the index.
    pub fn owned_sockets(&self) -> usize {
        self.owners.len()
    }

    /// Processes whose descriptors could not be read (another user's, without root or
    /// CAP_SYS_PTRACE): their sockets have no owner here. Kernel threads are not counted.
    pub fn unreadable_processes(&self) -> usize {
        self.unreadable_processes
    }

    /// Processes that ended while the scan read them: skipped, their sockets gone with them.
    pub fn vanished_processes(&self) -> usize {
        self.vanished_processes
    }
}

/// The sockets of this namespace a descriptor may hold (TIME-WAIT and SYN-RECV left out):
/// from sock_diag, or from /proc/net/tcp and tcp6 where it is refused (a seccomp profile
/// that blocks netlink sockets), which cannot tell an IPv6-only listener from a dual-stack one.
fn table() -> io::Result<Vec<Indexed>> {
    let mut sockets = Vec::new();
    let dumped = sock_diag::dump_tcp(HELD_STATES, 0, &[], &mut |body| {
        let Some(line) = sock_diag::parse_socket(body) else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "sock_diag: a socket message too short"));
        };
        if line.inode != 0 {
            let v6only = attribute(body, INET_DIAG_SKV6ONLY).is_some_and(|value| value.first() == Some(&1));
            let (inode, local, remote, state) = (line.inode, line.local, line.remote, line.state);
            sockets.push(Indexed { inode, local, remote, state, v6only });
        }
        Ok(())
    });
    if let Err(refused) = dumped {
        let lines = crate::tcp_table::read_proc(None)
            .map_err(|error| io::Error::other(format!("sock_diag: {refused}; /proc/net/tcp: {error}")))?;
        sockets = lines
            .into_iter()
            .filter(|line| line.inode != 0)
            .map(|line| Indexed {
                inode: line.inode,
                local: line.local,
                remote: line.remote,
                state: line.state,
                v6only: false,
            })
            .collect();
    }
    Ok(sockets)
}

/// A socket's owner, and when its process started.
#[derive(Debug, Clone)]
struct Holder {
    owner: SocketOwner,
    /// Clock ticks after boot.
    started_ticks: u64,
}

impl Holder {
    /// Sorts the oldest process first (then the lowest PID): the one that opened or accepted
    /// a shared socket rather than a child forked since (PIDs wrap around, start times do
    /// not).
    fn age_key(&self) -> (u64, u32) {
        (self.started_ticks, self.owner.pid)
    }
}

/// What reading one process gave.
#[derive(Debug)]
enum Read {
    /// Its name, start time, and the (fd, inode) of its descriptors that are indexed sockets.
    Held { command: String, started_ticks: u64, held: Vec<(i32, u64)> },
    /// It holds none of the sockets.
    Nothing,
    /// It ended before it was read.
    Vanished,
    /// Its descriptors may not be read.
    Unreadable,
}

/// The indexed sockets process `pid` holds.
fn process_sockets(pid: i32, sockets: &HashMap<u64, Indexed>) -> Read {
    let process = match Process::new(pid) {
        Ok(process) => process,
        Err(ProcError::NotFound(_)) => return Read::Vanished,
        Err(_) => return Read::Unreadable,
    };
    let held: Vec<(i32, u64)> = match socket_fds(&process) {
        Ok(fds) => fds.into_iter().filter(|(_, inode)| sockets.contains_key(inode)).collect(),
        Err(ProcError::NotFound(_)) => return Read::Vanished,
        Err(_) => {
            return match process.stat() {
                Ok(stat) if stat.flags & PF_KTHREAD != 0 => Read::Nothing,
                Err(ProcError::NotFound(_)) => Read::Vanished,
                _ => Read::Unreadable,
            };
        }
    };
    if held.is_empty() {
        return Read::Nothing;
    }
    match command(&process) {
        Some((command, started_ticks)) => Read::Held { command, started_ticks, held },
        None => Read::Vanished,
    }
}

/// `comm`, or `argv[0]`'s file name when `comm` is that name cut short, and the process's start
/// time; `None` once the process ended.
pub(crate) fn command(process: &Process) -> Option<(String, u64)> {
    let stat = process.stat().ok()?;
    let comm = stat.comm;
    if comm.len() >= COMM_MAX_BYTES
        && let Ok(arguments) = process.cmdline()
        && let Some(name) = arguments.first().and_then(|argv0| argv0.rsplit('/').next())
        && name.starts_with(&comm)
    {
        return Some((printable(name), stat.starttime));
    }
    Some((printable(&comm), stat.starttime))
}

/// The payload of the first attribute of `kind` after an `inet_diag_msg`.
pub(crate) fn attribute(message: &[u8], kind: u16) -> Option<&[u8]> {
    let mut rest = message.get(sock_diag::MESSAGE_BYTES..)?;
    while rest.len() >= 4 {
        let length = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let found = u16::from_ne_bytes([rest[2], rest[3]]) & 0x3fff; // without NLA_F_ flags
        if length < 4 || length > rest.len() {
            return None;
        }
        if found == kind {
            return Some(&rest[4..length]);
        }
        rest = rest.get((length + 3) & !3..).unwrap_or_default();
    }
    None
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for: a dual-stack socket's
/// IPv4 peers are listed mapped, and a capture sees them as IPv4.
pub(crate) fn canonical(address: SocketAddr) -> SocketAddr {
    match address.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), address.port()),
            None => address,
        },
        IpAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_read_as_ipv4() {
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:80".parse().unwrap();
        assert_eq!(canonical(mapped), "127.0.0.1:80".parse().unwrap());
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }

    #[test]
    fn attributes_are_found_past_others_and_truncation_is_none() {
        let mut message = vec![0u8; sock_diag::MESSAGE_BYTES];
        // A 5-byte attribute of kind 7 (padded to 8), then kind 11 with one byte.
        message.extend_from_slice(&[5, 0, 7, 0, 42, 0, 0, 0]);
        message.extend_from_slice(&[5, 0, 11, 0, 1, 0, 0, 0]);
        assert_eq!(attribute(&message, 7), Some(&[42][..]));
        assert_eq!(attribute(&message, 11), Some(&[1][..]));
        assert_eq!(attribute(&message, 2), None);
        message[sock_diag::MESSAGE_BYTES] = 200;
        assert_eq!(attribute(&message, 11), None, "a length past the end");
    }

    #[test]
    fn a_process_that_ended_is_vanished_and_one_holding_nothing_is_nothing() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(matches!(process_sockets(pid, &HashMap::new()), Read::Vanished));
        let own = std::process::id() as i32;
        assert!(matches!(process_sockets(own, &HashMap::new()), Read::Nothing));
    }
}
