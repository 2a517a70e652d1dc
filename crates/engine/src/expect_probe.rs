//! One request with `Expect: 100-continue`, its body held back as a waiting client holds it:
//! does the server answer `100 Continue`, answer at once with a final response, or stay
//! silent until the client gives up waiting (curl after 1 s, .NET Framework after 350 ms)?
//! A silent server costs every such client its whole wait on every request with a body.

use crate::deadline_read::read_by;
use nodelay_wire::{Feed, ResponseParser};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A response head larger than this is not worth probing further.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What the server did with the head before the body came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectAnswer {
    /// `100 Continue` (or another interim response), `after` the head was sent.
    Continue {
        /// Time from sending the head to the end of the interim response's head.
        after: Duration,
    },
    /// A final response without waiting for the body (often 417 Expectation Failed).
    FinalAtOnce {
        /// Status of the final response.
        status: u16,
        /// Time from sending the head to the end of the final response's head.
        after: Duration,
    },
    /// Nothing within `waited`: the server waits for the body the client holds back.
    Silence {
        /// How long the probe waited for an answer to the head.
        waited: Duration,
    },
}

/// What a server did with one `Expect: 100-continue` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectProbe {
    /// What it answered to the head alone.
    pub answer: ExpectAnswer,
    /// After `Continue` or `Silence` the body was sent: the final response's status...
    pub final_status: Option<u16>,
    /// ...and the time from sending the body to the response's last byte.
    pub body_to_response: Option<Duration>,
}

/// The head with `Expect: 100-continue` added (unless it has one), then the body: a request
/// `head_bytes` long in its head. `None` when the bytes are no HTTP head.
pub fn with_expect_continue(request: &[u8], head_bytes: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    let head = request.get(..head_bytes)?;
    let body = request.get(head_bytes..)?.to_vec();
    let without_end = head.strip_suffix(b"\r\n\r\n")?;
    let has_expect = without_end
        .split(|&b| b == b'\n')
        .any(|line| line.len() >= 7 && line[..7].eq_ignore_ascii_case(b"expect:"));
    let mut probe_head = without_end.to_vec();
    if !has_expect {
        probe_head.extend_from_slice(b"\r\nExpect: 100-continue");
    }
    probe_head.extend_from_slice(b"\r\n\r\n");
    Some((probe_head, body))
}

/// Sends `head` on a new connection and waits up to `wait` for an answer; then, unless the
/// server already answered for good, sends `body` and reads the response (within `wait`
/// again). `None` when the exchange failed (connect, reset, a response that does not parse).
pub fn probe_expect_continue(
    address: SocketAddr,
    head: &[u8],
    body: &[u8],
    wait: Duration,
) -> Option<ExpectProbe> {
    let mut stream = TcpStream::connect_timeout(&address, wait).ok()?;
    stream.set_nodelay(true).ok()?;
    stream.write_all(head).ok()?;
    let sent = Instant::now();
    let mut received = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    // The first head the server sends, if any, before `wait` is over.
    let first_head = loop {
        match read_by(&mut stream, &mut buffer, sent + wait) {
            Ok(None) => break None,
            Ok(Some(0)) => return None,
            Ok(Some(read)) => {
                received.extend_from_slice(&buffer[..read]);
                if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some((status_of(&received[..end + 4])?, end + 4, sent.elapsed()));
                }
                if received.len() > MAX_HEAD_BYTES {
                    return None;
                }
            }
            Err(_) => return None,
        }
    };
    let (answer, leftover) = match first_head {
        None => (ExpectAnswer::Silence { waited: sent.elapsed() }, Vec::new()),
        Some((status, _, after)) if status >= 200 => {
            return Some(ExpectProbe {
                answer: ExpectAnswer::FinalAtOnce { status, after },
                final_status: Some(status),
                body_to_response: None,
            });
        }
        Some((_, head_end, after)) => (ExpectAnswer::Continue { after }, received[head_end..].to_vec()),
    };
    stream.write_all(body).ok()?;
    let body_sent = Instant::now();
    let mut parser = ResponseParser::new(false, MAX_HEAD_BYTES, u64::MAX);
    let mut pending = leftover;
    loop {
        if !pending.is_empty()
            && let Feed::Complete { .. } = parser.feed(&pending).ok()?
        {
            return Some(ExpectProbe {
                answer,
                final_status: Some(parser.status()),
                body_to_response: Some(body_sent.elapsed()),
            });
        }
        match read_by(&mut stream, &mut buffer, body_sent + wait).ok()? {
            None => return None,
            Some(0) => {
                parser.finish().ok()?;
                let status = Some(parser.status());
                return Some(ExpectProbe {
                    answer,
                    final_status: status,
                    body_to_response: Some(body_sent.elapsed()),
                });
            }
            Some(read) => pending = buffer[..read].to_vec(),
        }
    }
}

/// The status code of a response head.
fn status_of(head: &[u8]) -> Option<u16> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => response.code,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    const REQUEST: &[u8] = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    const HEAD_BYTES: usize = REQUEST.len() - 5;

    /// A server that reads the head, then (when `interim` is given) writes it, reads the
    /// five body bytes and answers 200.
    fn server(interim: Option<&'static [u8]>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buffer = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let read = socket.read(&mut buffer).unwrap();
                seen.extend_from_slice(&buffer[..read]);
            }
            if let Some(interim) = interim {
                socket.write_all(interim).unwrap();
                if interim.starts_with(b"HTTP/1.1 417") {
                    return;
                }
            }
            let head_end = seen.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let mut body = seen.len() - head_end;
            while body < 5 {
                body += socket.read(&mut buffer).unwrap();
            }
            socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
        });
        address
    }

    fn probe(address: SocketAddr, wait_ms: u64) -> ExpectProbe {
        let (head, body) = with_expect_continue(REQUEST, HEAD_BYTES).unwrap();
        probe_expect_continue(address, &head, &body, Duration::from_millis(wait_ms)).unwrap()
    }

    #[test]
    fn the_header_is_added_once_before_the_end_of_the_head() {
        let (head, body) = with_expect_continue(REQUEST, HEAD_BYTES).unwrap();
        assert_eq!(
            head,
            b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        );
        assert_eq!(body, b"hello");
        let already = b"POST / HTTP/1.1\r\nEXPECT: 100-continue\r\n\r\nhi";
        let (head, _) = with_expect_continue(already, already.len() - 2).unwrap();
        assert_eq!(head, &already[..already.len() - 2]);
        assert_eq!(with_expect_continue(b"\x00\x01", 1), None);
    }

    #[test]
    fn a_server_that_answers_100_is_seen_answering() {
        let found = probe(server(Some(b"HTTP/1.1 100 Continue\r\n\r\n")), 2000);
        assert!(matches!(found.answer, ExpectAnswer::Continue { after } if after < Duration::from_secs(1)));
        assert_eq!(found.final_status, Some(200));
    }

    #[test]
    fn a_silent_server_is_waited_for_then_gets_the_body() {
        let found = probe(server(None), 300);
        assert!(
            matches!(found.answer, ExpectAnswer::Silence { waited } if waited >= Duration::from_millis(290))
        );
        assert_eq!(found.final_status, Some(200));
        assert!(found.body_to_response.is_some());
    }

    #[test]
    fn a_refusal_is_a_final_answer_at_once() {
        let found =
            probe(server(Some(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")), 2000);
        assert!(matches!(found.answer, ExpectAnswer::FinalAtOnce { status: 417, .. }), "{found:?}");
        assert_eq!(found.body_to_response, None);
    }
}
