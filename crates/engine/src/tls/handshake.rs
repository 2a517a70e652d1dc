//! A connection's TLS handshake, driven the same way by the HTTP/1.1 loop and the HTTP/2 one:
//! the records TLS queued are flushed to the socket and what arrives is fed in, until the
//! handshake is over or waits for the socket. The client's last flight (TLS 1.3's Finished)
//! stays queued and leaves with the first request; what the server sends after its own
//! (HTTP/2's SETTINGS) stays in the session for the protocol's first read.

use super::describe::{describe_tls_error, plain_text_answer};
use crate::record::ErrorKind;
use rustls::client::ClientConnection;
use std::io::{self, Read, Write};

/// Where a handshake stands after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// Over: the connection may carry the protocol.
    Done,
    /// Waiting for the socket (readable, or writable again).
    Waiting,
}

/// Moves the handshake on as far as `stream` lets it, reading into `buffer`. `received_any`
/// says whether the server sent anything yet: only its first bytes can show a plain-HTTP
/// server answering a ClientHello. A failure comes as the error's kind and its one line.
pub(crate) fn drive(
    connection: &mut ClientConnection,
    stream: &mut (impl Read + Write),
    buffer: &mut [u8],
    received_any: &mut bool,
) -> Result<Handshake, (ErrorKind, String)> {
    loop {
        if !connection.is_handshaking() {
            return Ok(Handshake::Done);
        }
        while connection.wants_write() {
            match connection.write_tls(stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Handshake::Waiting),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((ErrorKind::from_io(&e, false), format!("TLS handshake: write: {e}"))),
            }
        }
        let received = match stream.read(buffer) {
            Ok(0) => {
                let why = "TLS handshake failed: the server closed the connection (does it speak TLS on this port?)";
                return Err((ErrorKind::Tls, why.to_string()));
            }
            Ok(n) => &buffer[..n],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Handshake::Waiting),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((ErrorKind::from_io(&e, false), format!("TLS handshake: read: {e}"))),
        };
        if !*received_any && let Some(why) = plain_text_answer(received) {
            return Err((ErrorKind::Tls, why.to_string()));
        }
        *received_any = true;
        let mut ciphertext = received;
        while !ciphertext.is_empty() {
            // From a slice, read_tls takes what its buffer has room for (about one record).
            connection.read_tls(&mut ciphertext).map_err(|e| (ErrorKind::Tls, format!("TLS: {e}")))?;
            connection.process_new_packets().map_err(|e| (ErrorKind::Tls, describe_tls_error(&e)))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::{TlsClient, TlsOptions};

    /// A socket in memory: reads give `answer` once and then would block; writes are kept.
    struct Scripted {
        answer: Vec<u8>,
        written: Vec<u8>,
    }

    impl Read for Scripted {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            if self.answer.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buffer.len().min(self.answer.len());
            buffer[..n].copy_from_slice(&self.answer[..n]);
            self.answer.drain(..n);
            Ok(n)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn connection() -> ClientConnection {
        let options = TlsOptions { insecure: true, ..TlsOptions::default() };
        TlsClient::new("localhost", &options).unwrap().connect().unwrap()
    }

    #[test]
    fn the_hello_leaves_and_the_step_waits_for_the_server() {
        let mut stream = Scripted { answer: Vec::new(), written: Vec::new() };
        let (mut received_any, mut buffer) = (false, vec![0; 4096]);
        let step = drive(&mut connection(), &mut stream, &mut buffer, &mut received_any);
        assert_eq!(step, Ok(Handshake::Waiting));
        assert_eq!(stream.written.first(), Some(&22), "a handshake record (the ClientHello) was sent");
        assert!(!received_any);
    }

    #[test]
    fn a_plain_http_answer_and_a_close_are_named() {
        let mut buffer = vec![0; 4096];
        let plain = b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec();
        let mut stream = Scripted { answer: plain, written: Vec::new() };
        let (kind, why) = drive(&mut connection(), &mut stream, &mut buffer, &mut false).unwrap_err();
        assert_eq!(kind, ErrorKind::Tls);
        assert!(why.contains("plain HTTP"), "{why}");
        // A server that closes at once: read() gives 0.
        struct Closed;
        impl Read for Closed {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Ok(0)
            }
        }
        impl Write for Closed {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (kind, why) = drive(&mut connection(), &mut Closed, &mut buffer, &mut false).unwrap_err();
        assert_eq!(kind, ErrorKind::Tls);
        assert!(why.contains("closed the connection"), "{why}");
    }
}
