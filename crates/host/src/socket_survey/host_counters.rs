//! The network namespace's delayed-ACK counters, from /proc/net/netstat's `TcpExt` lines (a
//! line of names, then a line of values): the one place the kernel counts its delayed-ACK
//! timers, for all sockets at once.

use serde::{Deserialize, Serialize};
use std::io;

/// Counters of this network namespace since boot (or its creation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTcpCounters {
    /// ACKs sent when a delayed-ACK timer fired (`DelayedACKs`): each one an ACK held for
    /// the timer's length (40 ms or more on Linux).
    pub delayed_acks: u64,
    /// Delayed-ACK timers that fired while the program held the socket, and were put off
    /// again (`DelayedACKLocked`).
    pub delayed_acks_locked: u64,
    /// Quick-ACK mode entered because a delayed ACK was lost: the peer retransmitted what it
    /// had sent (`DelayedACKLost`).
    pub delayed_acks_lost: u64,
    /// Small writes the kernel held back to merge them (`TCPAutoCorking`).
    pub autocorked_writes: u64,
}

impl HostTcpCounters {
    /// Reads /proc/net/netstat, of the calling thread's namespace (the one its sockets are in).
    pub fn read() -> io::Result<HostTcpCounters> {
        let text = std::fs::read_to_string("/proc/thread-self/net/netstat")?;
        parse(&text).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "/proc/net/netstat: no TcpExt"))
    }
}

/// The counters of a netstat text; `None` without a `TcpExt` pair of lines.
fn parse(text: &str) -> Option<HostTcpCounters> {
    let mut lines = text.lines().filter_map(|line| line.strip_prefix("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let pairs: Vec<(&str, u64)> =
        names.split_whitespace().zip(values.split_whitespace().map(|v| v.parse().unwrap_or(0))).collect();
    let get = |name: &str| pairs.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
    Some(HostTcpCounters {
        delayed_acks: get("DelayedACKs"),
        delayed_acks_locked: get("DelayedACKLocked"),
        delayed_acks_lost: get("DelayedACKLost"),
        autocorked_writes: get("TCPAutoCorking"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_by_name() {
        let text = "TcpExt: SyncookiesSent DelayedACKs DelayedACKLocked DelayedACKLost TCPAutoCorking\n\
                    TcpExt: 1 4869733 350 7043 9\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let counters = parse(text).unwrap();
        assert_eq!(
            counters,
            HostTcpCounters {
                delayed_acks: 4869733,
                delayed_acks_locked: 350,
                delayed_acks_lost: 7043,
                autocorked_writes: 9
            }
        );
        assert_eq!(parse("IpExt: A\nIpExt: 1\n"), None);
        assert!(HostTcpCounters::read().is_ok(), "this machine's /proc/net/netstat");
    }
}
