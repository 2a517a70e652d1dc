//! One keep-alive request, then the connection left idle: how long does the server keep it
//! (`doctor --idle-probe`)? A client pool that keeps a connection idle longer than the
//! server does reuses a closed one: its next request fails (Node.js `ECONNRESET`) or is
//! retried on a new connection. Servers may announce their timeout (`Keep-Alive: timeout=N`).

use crate::hold_probe::{header_values, respond_then_wait};
use std::net::SocketAddr;
use std::time::Duration;

/// What the server did with a keep-alive connection left idle after one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleProbe {
    /// Status of the response.
    pub status: u16,
    /// The response said `Connection: close`: there was no idle connection to keep.
    pub said_close: bool,
    /// `Keep-Alive: timeout=N` of the response, in seconds.
    pub announced_timeout_s: Option<u64>,
    /// How long after the response the server closed the idle connection; `None`: still
    /// open after `waited`.
    pub closed_after: Option<Duration>,
    /// How long the probe waited for the close, from the response's end.
    pub waited: Duration,
}

/// Sends `request` (a keep-alive request) on a new connection, reads the response, and waits
/// until `wait` (from the start) is over for the server to close the idle connection.
/// `None` when no complete response arrived within `wait`.
pub fn probe_idle(address: SocketAddr, request: &[u8], wait: Duration) -> Option<IdleProbe> {
    let held = respond_then_wait(address, request, wait)?;
    let said_close =
        header_values(&held.head, "connection").any(|v| v.split(',').any(|t| t.trim() == "close"));
    Some(IdleProbe {
        status: held.status,
        said_close,
        announced_timeout_s: announced_timeout_s(&held.head),
        closed_after: held.closed_after,
        waited: held.waited,
    })
}

/// `Keep-Alive: timeout=5, max=100` -> 5.
fn announced_timeout_s(head: &[u8]) -> Option<u64> {
    header_values(head, "keep-alive").find_map(|value| {
        value.split(',').find_map(|parameter| {
            let (name, number) = parameter.split_once('=')?;
            (name.trim() == "timeout").then(|| number.trim().parse().ok()).flatten()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A server that answers once and closes the connection `idle_ms` later.
    fn server(response: &'static [u8], idle_ms: u64) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request);
            socket.write_all(response).unwrap();
            socket.set_read_timeout(Some(Duration::from_millis(idle_ms))).unwrap();
            let _ = socket.read(&mut request);
        });
        address
    }

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    #[test]
    fn an_announced_timeout_and_the_close_are_both_seen() {
        let response = b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=0, max=5\r\nContent-Length: 2\r\n\r\nok";
        let probe = probe_idle(server(response, 300), REQUEST, Duration::from_secs(3)).unwrap();
        assert_eq!(probe.announced_timeout_s, Some(0));
        let after = probe.closed_after.expect("closed");
        assert!(after >= Duration::from_millis(280) && after < Duration::from_secs(2), "{after:?}");
        assert!(!probe.said_close);
    }

    #[test]
    fn a_connection_still_open_at_the_end_of_the_wait_says_so() {
        let probe = probe_idle(
            server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 5000),
            REQUEST,
            Duration::from_millis(300),
        )
        .unwrap();
        assert_eq!((probe.closed_after, probe.announced_timeout_s), (None, None));
        assert!(probe.waited >= Duration::from_millis(250));
    }

    #[test]
    fn the_timeout_is_read_among_parameters() {
        assert_eq!(
            announced_timeout_s(b"HTTP/1.1 200 OK\r\nkeep-alive: max=9, TIMEOUT=75\r\n\r\n"),
            Some(75)
        );
        assert_eq!(announced_timeout_s(b"HTTP/1.1 200 OK\r\nKeep-Alive: max=9\r\n\r\n"), None);
    }
}
