//! A network namespace's TCP sockets, in any state, TIME-WAIT included: through sock_diag
//! when the namespace is ours (milliseconds cheaper, see `sock_diag`), else from
//! /proc/PID/net/tcp and tcp6, line by line (procfs's `TcpNetEntry` leaves out the timer
//! columns). A TIME-WAIT socket has the time it has left: whether that timer restarted
//! between two readings tells a reused 4-tuple from the same old one (loopback reuses a
//! TIME-WAIT 4-tuple after 1 s).
//!
//! ```text
//!   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//!    3: 0100007F:46A1 0100007F:C944 06 00000000:00000000 03:0000175B 00000000     0        0 0 3 ...
//! ```
//! In /proc, addresses are the kernel's 32-bit words printed as native integers (`%08X`),
//! ports in host order, and `tm->when` is in clock ticks.

use crate::other_namespace::namespace_of;
use crate::table_line::TableLine;
use procfs::ProcError;
use procfs::net::TcpState;
use procfs::process::Process;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The lines of one /proc table file.
struct Lines(Vec<TableLine>);

impl procfs::FromRead for Lines {
    fn from_read<R: Read>(mut reader: R) -> Result<Self, ProcError> {
        let mut text = String::new();
        reader.read_to_string(&mut text)?;
        let ticks_per_second = procfs::ticks_per_second();
        Ok(Lines(text.lines().skip(1).filter_map(|line| parse_line(line, ticks_per_second)).collect()))
    }
}

/// The TCP sockets of `process`'s network namespace (ours for `None`), IPv4 and IPv6 (a
/// kernel without IPv6 has no tcp6). Read twice, and a socket either reading has is kept:
/// the kernel lists the table a part at a time, bucket by bucket, and a socket that another
/// connection's arrival or departure moves within its bucket between two parts is skipped.
/// One reading lost one of twenty closed connections that way (the server-view test, with
/// other tests opening connections beside it).
pub fn read(process: Option<&Process>) -> Result<Vec<TableLine>, ProcError> {
    let first = read_once(process)?;
    match read_once(process) {
        Ok(second) => Ok(union(first, second)),
        Err(_) => Ok(first),
    }
}

/// One reading: sock_diag for our own namespace, /proc for another's, or where sock_diag is
/// refused (a kernel without inet_diag, a seccomp profile).
pub fn read_once(process: Option<&Process>) -> Result<Vec<TableLine>, ProcError> {
    read_once_in(process, States::All)
}

/// Which sockets a reading lists.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum States {
    All,
    /// Listening sockets only: sock_diag then skips the kernel's walk of its connection table,
    /// every bucket of it however few sockets it holds (262,144 here: 4 to 5 ms a family on a
    /// kernel whose returns go through a mitigation), for its small listening table.
    Listening,
}

/// One reading of the sockets in `states`, as `read_once`.
pub(crate) fn read_once_in(process: Option<&Process>, states: States) -> Result<Vec<TableLine>, ProcError> {
    let diag_states = match states {
        States::All => crate::sock_diag::ALL_STATES,
        States::Listening => 1 << TcpState::Listen.to_u8(),
    };
    if in_our_namespace(process)
        && let Ok(lines) = crate::sock_diag::tcp_sockets_in(diag_states)
    {
        // The namespace was checked by PID: the process must still be the one held, else
        // the PID (reused) named another process's namespace.
        if let Some(process) = process {
            process.stat()?;
        }
        return Ok(lines);
    }
    let mut lines = read_proc(process)?;
    if states == States::Listening {
        lines.retain(|line| line.state == TcpState::Listen);
    }
    Ok(lines)
}

/// Whether `process` (ours for `None`) is in this thread's network namespace; false when
/// either link cannot be read (another user's process).
pub(crate) fn in_our_namespace(process: Option<&Process>) -> bool {
    let Some(process) = process else { return true };
    match (namespace_of(None), namespace_of(Some(process))) {
        (Some(ours), Some(theirs)) => ours == theirs,
        _ => false,
    }
}

/// One reading of /proc/net/tcp and tcp6: the process's namespace, or for `None` the calling
/// thread's (as sock_diag's, which lists the namespace of the thread that asks).
pub fn read_proc(process: Option<&Process>) -> Result<Vec<TableLine>, ProcError> {
    use procfs::FromRead;
    let read = |file: &str| match process {
        Some(process) => process.read::<Lines>(file),
        None => Lines::from_file(format!("/proc/thread-self/{file}")),
    };
    let Lines(mut lines) = read("net/tcp")?;
    if let Ok(Lines(v6)) = read("net/tcp6") {
        lines.extend(v6);
    }
    Ok(lines)
}

/// The first reading's lines, and the second's for the addresses the first did not list.
fn union(mut first: Vec<TableLine>, second: Vec<TableLine>) -> Vec<TableLine> {
    let known: std::collections::HashSet<(SocketAddr, SocketAddr)> =
        first.iter().map(|line| (line.local, line.remote)).collect();
    first.extend(second.into_iter().filter(|line| !known.contains(&(line.local, line.remote))));
    first
}

/// One line after the header; `None` for a line that does not read as one.
pub fn parse_line(line: &str, ticks_per_second: u64) -> Option<TableLine> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [_, local, remote, state, _, timer, _, uid, _, inode, ..] = fields[..] else { return None };
    let (timer_kind, ticks) = timer.split_once(':')?;
    let time_wait_left_us = match timer_kind {
        "03" => {
            Some(u64::from_str_radix(ticks, 16).ok()?.saturating_mul(1_000_000) / ticks_per_second.max(1))
        }
        _ => None,
    };
    Some(TableLine {
        local: parse_address(local)?,
        remote: parse_address(remote)?,
        state: TcpState::from_u8(u8::from_str_radix(state, 16).ok()?)?,
        time_wait_left_us,
        inode: inode.parse().ok()?,
        uid: uid.parse().ok()?,
    })
}

/// `0100007F:1F90` (127.0.0.1:8080), or 32 hex digits for IPv6.
fn parse_address(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |at: usize| u32::from_str_radix(ip.get(at..at + 8)?, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for (index, chunk) in bytes.chunks_exact_mut(4).enumerate() {
                chunk.copy_from_slice(&word(index * 8)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

// The fixtures are what a little-endian kernel prints.
#[cfg(all(test, target_endian = "little"))]
mod tests {
    use super::*;

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_line_missed_by_one_reading_is_kept_from_the_other() {
        let line = |remote_port: u16, inode: u64| TableLine {
            local: "127.0.0.1:5000".parse().unwrap(),
            remote: SocketAddr::from(([127, 0, 0, 1], remote_port)),
            state: TcpState::TimeWait,
            time_wait_left_us: Some(1_000_000),
            inode,
            uid: 0,
        };
        let merged = union(vec![line(1, 0), line(2, 0)], vec![line(2, 7), line(3, 0)]);
        assert_eq!(merged, vec![line(1, 0), line(2, 0), line(3, 0)], "the first reading wins for port 2");
    }

    #[test]
    fn a_listener_an_established_socket_and_a_time_wait_line_read_as_such() {
        let listen = "   1: 0100007F:46A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4165444 1 00000000772af69e 100 0 0 10 0";
        let established = "   7: 0100007F:9C40 0100007F:46A1 01 00000000:00000000 02:000AFC1C 00000000  1000        0 4187392 1 0000000011a63f66 20 4 30 10 -1";
        let time_wait = "   3: 0100007F:46A1 0100007F:C944 06 00000000:00000000 03:0000175B 00000000     0        0 0 3 0000000082d024fd";
        assert_eq!(
            parse_line(listen, 100),
            Some(TableLine {
                local: at("127.0.0.1:18080"),
                remote: at("0.0.0.0:0"),
                state: TcpState::Listen,
                time_wait_left_us: None,
                inode: 4165444,
                uid: 0,
            })
        );
        let established = parse_line(established, 100).unwrap();
        assert_eq!(
            (established.state, established.time_wait_left_us, established.inode, established.uid),
            (TcpState::Established, None, 4187392, 1000)
        );
        assert_eq!((established.local, established.remote), (at("127.0.0.1:40000"), at("127.0.0.1:18081")));
        assert_eq!(
            parse_line(time_wait, 100),
            Some(TableLine {
                local: at("127.0.0.1:18081"),
                remote: at("127.0.0.1:51524"),
                state: TcpState::TimeWait,
                time_wait_left_us: Some(59_790_000),
                inode: 0,
                uid: 0,
            })
        );
    }

    #[test]
    fn ipv6_lines_read_word_by_word() {
        let mapped = "   0: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0";
        let loopback = "   1: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 98 1 0";
        let mapped = parse_line(mapped, 100).unwrap();
        assert_eq!(
            (mapped.local, mapped.remote),
            (at("[::ffff:127.0.0.1]:8080"), at("[::ffff:127.0.0.1]:54321"))
        );
        assert_eq!(parse_line(loopback, 100).unwrap().local, at("[::1]:22"));
    }

    #[test]
    fn the_header_and_broken_lines_are_no_lines() {
        let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
        assert_eq!(parse_line(header, 100), None);
        assert_eq!(parse_line("   3: 0100007F:46A1 0100007F:C944 06", 100), None);
        assert_eq!(
            parse_line("   3: 0100007:46A1 0100007F:C944 06 0:0 03:1 0 0 0 0 3", 100),
            None,
            "7 hex digits"
        );
        assert_eq!(
            parse_line("   3: 0100007F:46A1 0100007F:C944 FF 0:0 03:1 0 0 0 0 3", 100),
            None,
            "no state FF"
        );
    }
}
