//! How many TCP connections a network namespace has opened so far: `ActiveOpens` (each
//! connect() that sent its SYN, counted in tcp_connect) and `PassiveOpens` (each accepted
//! handshake) of /proc/PID/net/snmp. The sampler lists a server's descriptors only when these
//! moved since its last listing (a connection the server made is one of the active opens),
//! and may slow its pace while they and the threads stay still: one read of the file costs
//! ~10 µs where the listing costs ~2 µs a descriptor (~100 µs for nginx holding 50
//! connections), 100 times a second on the load generator's core. The view reads the active
//! opens at both ends of a run too ([`RunConnects`]): an upper bound of the connections the
//! server opened where the socket table's count falls short.

use super::reading::{Watched, is_our_namespace};
use procfs::process::Process;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Bounds the file read (~1.3 KiB here; each ICMP type seen adds a few bytes).
const MAX_FILE_BYTES: usize = 1 << 20;

/// The namespace's counts at one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opens {
    pub active: u64,
    pub passive: u64,
}

/// The counters' file of one namespace, held open: the kernel ties it to the namespace at
/// open, so later reads count that namespace even after the process that named it ended.
pub(crate) struct TcpOpens {
    file: File,
    buffer: Vec<u8>,
}

impl TcpOpens {
    /// The counters of `process`'s network namespace.
    pub fn open(process: &Process) -> io::Result<TcpOpens> {
        let file = File::open(format!("/proc/{}/net/snmp", process.pid))?;
        // Still the same process, so the PID named it when the file was opened.
        process.stat().map_err(|e| io::Error::other(e.to_string()))?;
        Ok(TcpOpens { file, buffer: vec![0; 4096] })
    }

    /// The counts now; `None` when they cannot be read (then every look lists descriptors).
    pub fn read(&mut self) -> Option<Opens> {
        // A read at offset 0 makes the kernel print the file anew; the rest follows in order
        // (its IcmpMsg lines grow with each ICMP type the namespace has seen).
        let mut length = 0;
        loop {
            if length == self.buffer.len() {
                if length >= MAX_FILE_BYTES {
                    return None;
                }
                self.buffer.resize(length * 2, 0);
            }
            match self.file.read_at(&mut self.buffer[length..], length as u64).ok()? {
                0 => break,
                read => length += read,
            }
        }
        opens(&self.buffer[..length])
    }
}

/// The TCP open counters of each network namespace the processes are in (by the inode of
/// /proc/PID/ns/net), opened through the first of its processes that allows it; `None` for one
/// that cannot be read.
pub(crate) fn per_namespace(watched: &[Watched]) -> Vec<(u64, Option<TcpOpens>)> {
    let mut counters: Vec<(u64, Option<TcpOpens>)> = Vec::new();
    for one in watched {
        // 0: its namespace is unknown, so it is not taken for any other process's.
        if one.netns == 0 {
            counters.push((0, TcpOpens::open(&one.process).ok()));
        } else if counters.iter().all(|(netns, _)| *netns != one.netns) {
            let same = watched.iter().filter(|other| other.netns == one.netns);
            counters.push((one.netns, same.map(|other| TcpOpens::open(&other.process)).find_map(Result::ok)));
        }
    }
    counters
}

/// The active opens of the server's namespaces at the start of a run, to count the connect()s
/// made in them by the end.
pub(crate) struct RunConnects {
    /// Per namespace: its inode (0 unknown), its counters, and their active opens at the start.
    namespaces: Vec<(u64, TcpOpens, u64)>,
}

impl RunConnects {
    /// `None` when a namespace's counters cannot be read: then nothing bounds the server's.
    pub fn start(watched: &[Watched]) -> Option<RunConnects> {
        let mut namespaces = Vec::new();
        for (netns, counters) in per_namespace(watched) {
            let mut counters = counters?;
            let at_start = counters.read()?.active;
            namespaces.push((netns, counters, at_start));
        }
        Some(RunConnects { namespaces })
    }

    /// The connect()s made in the namespaces since the start, less `own_connects` (the run's,
    /// made from this process's namespace) when it is one of them.
    pub fn by_others(mut self, own_connects: u64) -> Option<u64> {
        let shares_ours = self.namespaces.iter().any(|(netns, _, _)| is_our_namespace(*netns));
        let mut made = 0u64;
        for (_, counters, at_start) in &mut self.namespaces {
            made = made.saturating_add(counters.read()?.active.saturating_sub(*at_start));
        }
        Some(if shares_ours { made.saturating_sub(own_connects) } else { made })
    }
}

/// The counts from the text of /proc/net/snmp, in its `Tcp:` section.
pub(crate) fn opens(snmp: &[u8]) -> Option<Opens> {
    let text = std::str::from_utf8(snmp).ok()?;
    let [active, passive] = super::mib::counters(text, "Tcp", ["ActiveOpens", "PassiveOpens"])?;
    Some(Opens { active, passive })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens\n\
        Tcp: 1 200 120000 -1 3158 3114\n\
        Udp: InDatagrams NoPorts\nUdp: 5 6\n";

    #[test]
    fn the_values_are_read_by_their_names() {
        assert_eq!(opens(SNMP.as_bytes()), Some(Opens { active: 3158, passive: 3114 }));
    }

    #[test]
    fn text_without_both_counters_has_none() {
        assert_eq!(opens(b""), None);
        assert_eq!(opens(b"Tcp: ActiveOpens PassiveOpens\n"), None, "no values line");
        assert_eq!(opens(b"Tcp: RtoAlgorithm PassiveOpens\nTcp: 1 2\n"), None);
        assert_eq!(opens(b"Tcp: ActiveOpens PassiveOpens\nTcp: many 2\n"), None);
        assert_eq!(opens(b"Tcp: ActiveOpens PassiveOpens\nTcp: 1\n"), None, "a short values line");
    }

    #[test]
    fn a_file_longer_than_the_buffer_is_read_whole() {
        let file = File::open("/proc/self/net/snmp").unwrap();
        let mut small = TcpOpens { file, buffer: vec![0; 16] };
        let whole = std::fs::read("/proc/self/net/snmp").unwrap();
        assert!(small.read().is_some());
        assert!(small.buffer.len() >= whole.len(), "grown to {} for {}", small.buffer.len(), whole.len());
    }

    #[test]
    fn a_connection_moves_both_counts_of_this_namespace() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut counters = TcpOpens::open(&Process::myself().unwrap()).unwrap();
        let before = counters.read().expect("this namespace's counts");
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _accepted = listener.accept().unwrap();
        let after = counters.read().unwrap();
        // Other tests of this process connect too: at least ours.
        assert!(after.active > before.active && after.passive > before.passive, "{before:?} then {after:?}");
    }
}
