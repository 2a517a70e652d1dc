//! One HTTP/1.0 request that does not ask for keep-alive, and what the server does after its
//! response: close (as HTTP/1.0 wants), or hold the connection open — often while saying
//! `Connection: keep-alive`, a hop-by-hop header a proxy copied from its upstream. Clients
//! that wait for the close (`ab` without -k) then wait for the server's idle timeout.

use crate::deadline_read::read_by;
use nodelay_wire::{Feed, ResponseParser};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A response head larger than this is not worth probing further.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What the server did with an HTTP/1.0 request that did not ask for keep-alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldProbe {
    /// Status of the response.
    pub status: u16,
    /// The response said `Connection: keep-alive`.
    pub said_keep_alive: bool,
    /// How long after the response ended the server closed; `None`: still open after `waited`.
    pub closed_after: Option<Duration>,
    /// How long the probe waited for the close.
    pub waited: Duration,
}

/// Sends `request` (an HTTP/1.0 request without keep-alive) on a new connection, reads the
/// response, then waits up to `wait` for the server to close. `None` when no complete
/// response arrived within `wait` (the probe then says nothing).
pub fn probe_hold(address: SocketAddr, request: &[u8], wait: Duration) -> Option<HoldProbe> {
    let held = respond_then_wait(address, request, wait)?;
    Some(HoldProbe {
        status: held.status,
        said_keep_alive: says_keep_alive(&held.head),
        closed_after: held.closed_after,
        waited: held.waited,
    })
}

/// One response, then the connection left alone: what came back and when it ended.
pub(crate) struct Held {
    pub status: u16,
    /// The start of the response (its head, at most `MAX_HEAD_BYTES`).
    pub head: Vec<u8>,
    /// How long after the response's end the server closed (or reset) the connection;
    /// `None`: still open after `waited`.
    pub closed_after: Option<Duration>,
    pub waited: Duration,
}

/// Sends `request` on a new connection, reads the response until its framing says it is
/// complete, then waits until `wait` (from the start) is over for the server to close.
/// `None` when no complete response arrived within `wait`.
pub(crate) fn respond_then_wait(address: SocketAddr, request: &[u8], wait: Duration) -> Option<Held> {
    let deadline = Instant::now() + wait;
    let mut stream = TcpStream::connect_timeout(&address, wait).ok()?;
    stream.set_nodelay(true).ok()?;
    stream.write_all(request).ok()?;
    let mut parser = ResponseParser::new(false, MAX_HEAD_BYTES, u64::MAX);
    let mut head = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    // The response, until its framing says it is complete (or the server closes).
    loop {
        let read = read_by(&mut stream, &mut buffer, deadline).ok()??;
        if read == 0 {
            // Closed: a body delimited by the close, or a response cut short.
            parser.finish().ok()?;
            let status = parser.status();
            return Some(Held { status, head, closed_after: Some(Duration::ZERO), waited: Duration::ZERO });
        }
        if head.len() < MAX_HEAD_BYTES {
            head.extend_from_slice(&buffer[..read.min(MAX_HEAD_BYTES - head.len())]);
        }
        if let Feed::Complete { .. } = parser.feed(&buffer[..read]).ok()? {
            break;
        }
    }
    // Then, how long the server keeps the connection.
    let ended = Instant::now();
    let status = parser.status();
    loop {
        match read_by(&mut stream, &mut buffer, deadline) {
            Ok(None) => return Some(Held { status, head, closed_after: None, waited: ended.elapsed() }),
            // Bytes after a complete response: wait on until the deadline.
            Ok(Some(read)) if read > 0 => continue,
            // Closed or reset: the server let go.
            _ => {
                let after = ended.elapsed();
                return Some(Held { status, head, closed_after: Some(after), waited: after });
            }
        }
    }
}

/// Whether a response head carries `Connection: keep-alive`.
fn says_keep_alive(head: &[u8]) -> bool {
    header_values(head, "connection").any(|value| value.split(',').any(|token| token.trim() == "keep-alive"))
}

/// The values of header `name` (lowercase) in a response head, lowercased.
pub(crate) fn header_values<'a>(head: &'a [u8], name: &'a str) -> impl Iterator<Item = String> + 'a {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(head.len());
    head[..end].split(|&b| b == b'\n').filter_map(move |line| {
        let line = String::from_utf8_lossy(line).to_ascii_lowercase();
        let (header, value) = line.split_once(':')?;
        (header.trim() == name).then(|| value.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn server(response: &'static [u8], close: bool) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request);
            socket.write_all(response).unwrap();
            if !close {
                // Hold until the client goes away.
                let _ = socket.read(&mut request);
            }
        });
        address
    }

    const REQUEST: &[u8] = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n";

    #[test]
    fn a_server_that_closes_is_seen_closing() {
        let address = server(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", true);
        let probe = probe_hold(address, REQUEST, Duration::from_secs(2)).unwrap();
        assert!(probe.closed_after.is_some_and(|after| after < Duration::from_secs(1)), "{probe:?}");
        assert!(!probe.said_keep_alive);
        assert_eq!(probe.status, 200);
    }

    #[test]
    fn a_server_that_holds_after_saying_keep_alive_is_seen_holding() {
        let address =
            server(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false);
        let probe = probe_hold(address, REQUEST, Duration::from_millis(300)).unwrap();
        assert_eq!(probe.closed_after, None, "{probe:?}");
        assert!(probe.said_keep_alive);
        assert!(probe.waited >= Duration::from_millis(250));
    }

    #[test]
    fn keep_alive_is_read_among_other_tokens_and_in_any_case() {
        assert!(says_keep_alive(b"HTTP/1.1 200 OK\r\nCONNECTION: Upgrade, Keep-Alive\r\n\r\n"));
        assert!(!says_keep_alive(b"HTTP/1.1 200 OK\r\nX-Connection: keep-alive\r\n\r\n"));
        assert!(!says_keep_alive(b"HTTP/1.1 200 OK\r\n\r\nConnection: keep-alive"));
    }
}
