//! The server's accept queue over a run: the listening socket's backlog and the connections
//! waiting in it (TCP_INFO of a copy of the listener, closed at once), and the kernel's
//! `ListenOverflows` / `ListenDrops` counters of the server's network namespace
//! (/proc/PID/net/netstat), which count handshakes dropped because an accept queue was full.
//! The counters are the namespace's, not the socket's: another listener that overflows in the
//! same run counts too, which the report says.

use super::reading::HeldSocket;
use crate::ListenQueueView;
use crate::pidfd::{self, PidFd};
use procfs::net::TcpState;

/// The namespace's two counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenCounters {
    pub overflows: u64,
    pub drops: u64,
}

/// Reads the counters of process `pid`'s network namespace; `None` when the file cannot be
/// read or lacks them (a kernel without TcpExt).
pub fn counters(pid: i32) -> Option<ListenCounters> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/netstat")).ok()?;
    parse_counters(&text)
}

/// The two counters in /proc/net/netstat's `TcpExt:` section.
fn parse_counters(text: &str) -> Option<ListenCounters> {
    let [overflows, drops] = super::mib::counters(text, "TcpExt", ["ListenOverflows", "ListenDrops"])?;
    Some(ListenCounters { overflows, drops })
}

/// The listening sockets among `sockets` that the run's connections reach (`port`; any
/// listener when the target was a PID), read through copies. The smallest backlog wins:
/// with SO_REUSEPORT each listener has its own queue, and the smallest overflows first.
pub fn listener_queue(sockets: &[HeldSocket], port: Option<u16>) -> Option<nodelay_tcp::ListenQueue> {
    let listeners = sockets
        .iter()
        .filter(|s| s.state == TcpState::Listen && port.is_none_or(|port| s.local.port() == port));
    let mut smallest: Option<nodelay_tcp::ListenQueue> = None;
    for socket in listeners {
        let Ok(handle) = PidFd::open(socket.pid) else { continue };
        let Ok(copy) = handle.take(socket.fd) else { continue };
        // The number may name another file by now.
        if pidfd::inode(&copy).ok() != Some(socket.inode) {
            continue;
        }
        if let Some(queue) = nodelay_tcp::read_listen_queue(&copy)
            && smallest.is_none_or(|s| queue.backlog < s.backlog)
        {
            smallest = Some(queue);
        }
    }
    smallest
}

/// What the run did to the accept queue: counters at both ends, the listener at the end.
pub fn view(
    start: Option<ListenCounters>,
    end: Option<ListenCounters>,
    queue: Option<nodelay_tcp::ListenQueue>,
) -> Option<ListenQueueView> {
    let (start, end) = (start?, end?);
    Some(ListenQueueView {
        backlog: queue.map(|q| q.backlog),
        queued_at_end: queue.map(|q| q.queued),
        overflows: end.overflows.saturating_sub(start.overflows),
        drops: end.drops.saturating_sub(start.drops),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_two_counters_by_name() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPTimeouts\n\
                    TcpExt: 0 64 66 40\n\
                    IpExt: InNoRoutes ListenOverflows\n\
                    IpExt: 0 9\n";
        assert_eq!(parse_counters(text), Some(ListenCounters { overflows: 64, drops: 66 }));
        let ip_first = "IpExt: InNoRoutes\nIpExt: 0\nTcpExt: ListenDrops ListenOverflows\nTcpExt: 3 2\n";
        assert_eq!(parse_counters(ip_first), Some(ListenCounters { overflows: 2, drops: 3 }));
        assert_eq!(parse_counters("TcpExt: ListenOverflows\nTcpExt: 1\n"), None, "no ListenDrops");
        assert_eq!(parse_counters("TcpExt: ListenOverflows ListenDrops\n"), None, "no values");
        assert_eq!(parse_counters(""), None);
    }

    #[test]
    fn this_process_namespace_has_the_counters() {
        assert!(counters(std::process::id() as i32).is_some());
    }

    #[test]
    fn the_view_is_what_the_run_added() {
        let start = ListenCounters { overflows: 10, drops: 12 };
        let end = ListenCounters { overflows: 74, drops: 78 };
        let queue = nodelay_tcp::ListenQueue { queued: 0, backlog: 2 };
        let view = view(Some(start), Some(end), Some(queue)).unwrap();
        assert_eq!((view.overflows, view.drops, view.backlog), (64, 66, Some(2)));
        assert_eq!(super::view(None, Some(end), None), None);
    }
}
