//! One connection's TLS state, driven by the worker: it queues plaintext and flushes records
//! to the socket, and turns the ciphertext of each `read()` into the plaintext it completes.
//! The worker does every socket call, so each read keeps its own timestamp.

use super::client::TlsClient;
use super::describe::{describe_tls_error, plain_text_answer};
use super::handshake::Handshake;
use crate::record::ErrorKind;
use crate::record::TlsSummary;
use rustls::client::ClientConnection;
use rustls::{CipherSuite, HandshakeKind, ProtocolVersion};
use std::io::{self, Read, Write};

pub(crate) struct TlsSession {
    connection: ClientConnection,
    /// Some bytes came from the server: only the first ones can show a plain-HTTP answer.
    received_any: bool,
}

/// What one socket read's ciphertext gave.
pub(crate) struct Feed {
    /// Plaintext bytes now at the start of the caller's buffer.
    pub plain_bytes: usize,
    /// The server closed the TLS session (close_notify): no more plaintext will come.
    pub closed: bool,
}

impl TlsSession {
    /// A new session whose ClientHello waits to be flushed.
    pub fn start(client: &TlsClient) -> Result<Self, String> {
        let connection = client.connect().map_err(|e| describe_tls_error(&e))?;
        Ok(TlsSession { connection, received_any: false })
    }

    /// Moves the handshake on as far as `stream` lets it ([`super::handshake::drive`]).
    pub fn handshake(
        &mut self,
        stream: &mut (impl Read + Write),
        buffer: &mut [u8],
    ) -> Result<Handshake, (ErrorKind, String)> {
        super::handshake::drive(&mut self.connection, stream, buffer, &mut self.received_any)
    }

    /// The protocol the server chose by ALPN, once the handshake is over.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.connection.alpn_protocol()
    }

    /// The rustls connection, for a transport that drives it on its own (HTTP/2's).
    pub fn into_connection(self) -> ClientConnection {
        self.connection
    }

    /// Writes the records TLS has queued: `Ok(true)` once all are out, `Ok(false)` when the
    /// socket is full (wait until it is writable).
    pub fn flush(&mut self, stream: &mut impl Write) -> io::Result<bool> {
        while self.connection.wants_write() {
            match self.connection.write_tls(stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Queues plaintext as records (flush sends them); how many bytes were taken. One call
    /// is one or more records of its own, so a request written in pieces stays in pieces.
    pub fn queue(&mut self, plaintext: &[u8]) -> io::Result<usize> {
        self.connection.writer().write(plaintext)
    }

    /// Decrypts what one read returned into `plain` (at least as long as `ciphertext`, which
    /// bounds the plaintext it can hold). Errors are the one-line descriptions.
    pub fn receive(&mut self, mut ciphertext: &[u8], plain: &mut [u8]) -> Result<Feed, String> {
        if !self.received_any
            && self.connection.is_handshaking()
            && let Some(why) = plain_text_answer(ciphertext)
        {
            return Err(why.to_string());
        }
        self.received_any = true;
        let mut feed = Feed { plain_bytes: 0, closed: false };
        while !ciphertext.is_empty() {
            // From a slice, read_tls takes what its buffer has room for (about one record).
            self.connection.read_tls(&mut ciphertext).map_err(|e| format!("TLS: {e}"))?;
            let state = self.connection.process_new_packets().map_err(|e| describe_tls_error(&e))?;
            feed.closed |= state.peer_has_closed();
            loop {
                let room = &mut plain[feed.plain_bytes..];
                if room.is_empty() {
                    break;
                }
                match self.connection.reader().read(room) {
                    Ok(0) => break,
                    Ok(n) => feed.plain_bytes += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(format!("TLS: {e}")),
                }
            }
        }
        Ok(feed)
    }

    /// The handshake resumed an earlier session (no certificate exchanged).
    pub fn resumed(&self) -> bool {
        self.connection.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    /// Version, cipher and how the handshake went, once it is over.
    pub fn summary(&self) -> Option<TlsSummary> {
        summary_of(&self.connection)
    }
}

/// Version, cipher and how the handshake of `connection` went, once it is over.
fn summary_of(connection: &ClientConnection) -> Option<TlsSummary> {
    let version = match connection.protocol_version()? {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        _ => "other",
    };
    let cipher = connection.negotiated_cipher_suite()?.suite();
    Some(TlsSummary {
        version,
        cipher: cipher_name(cipher),
        alpn_http11: connection.alpn_protocol() == Some(b"http/1.1"),
        alpn_h2: connection.alpn_protocol() == Some(b"h2"),
        resumed: connection.handshake_kind() == Some(HandshakeKind::Resumed),
    })
}

/// The IANA name of a suite (`TLS_AES_128_GCM_SHA256`), as OpenSSL and Wireshark show it.
fn cipher_name(suite: CipherSuite) -> &'static str {
    let name = suite.as_str().unwrap_or("unknown");
    // rustls names TLS 1.3 suites TLS13_*; their IANA names are TLS_*.
    match name.strip_prefix("TLS13_") {
        Some(_) => match suite {
            CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
            CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
            CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
            _ => name,
        },
        None => name,
    }
}
