//! How many TCP connections a network namespace has opened so far: `ActiveOpens` (each
//! connect(), counted in tcp_connect) and `PassiveOpens` (each accepted handshake) of
//! /proc/PID/net/snmp. The sampler lists a server's descriptors only when these moved since
//! its last listing (a connection the server made is one of the active opens), and slows its
//! pace while they and the threads stay still. One read of the file costs ~10 µs where the
//! listing costs ~2 µs a descriptor (~100 µs for nginx holding 50 connections), 100 times a
//! second on the load generator's core.

use procfs::process::Process;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

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
        // A read at offset 0 makes the kernel print the file anew.
        let length = self.file.read_at(&mut self.buffer, 0).ok()?;
        opens(&self.buffer[..length])
    }
}

/// The counts from the text of /proc/net/snmp: the values under their names in the second of
/// the two `Tcp:` lines (names, then values).
fn opens(snmp: &[u8]) -> Option<Opens> {
    let text = std::str::from_utf8(snmp).ok()?;
    let mut tcp_lines = text.lines().filter_map(|line| line.strip_prefix("Tcp:"));
    let (names, values) = (tcp_lines.next()?, tcp_lines.next()?);
    let value = |wanted: &str| -> Option<u64> {
        let column = names.split_whitespace().position(|name| name == wanted)?;
        values.split_whitespace().nth(column)?.parse().ok()
    };
    Some(Opens { active: value("ActiveOpens")?, passive: value("PassiveOpens")? })
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
