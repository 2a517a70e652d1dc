//! The socket under one HTTP/2 connection, as the `h2` crate reads and writes it: plain TCP
//! or TLS (rustls, the handshake already over), non-blocking, every byte shown to the
//! connection's frame tap at the moment its syscall returned. No async runtime: the worker
//! polls `h2` by hand after each readiness event, so "would block" is `Pending` and nobody
//! needs waking.

use super::tap::FrameTap;
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(crate) struct Transport {
    stream: TcpStream,
    tls: Option<Box<ClientConnection>>,
    tap: Rc<RefCell<FrameTap>>,
    quickack: bool,
}

impl Transport {
    pub fn new(
        stream: TcpStream,
        tls: Option<Box<ClientConnection>>,
        tap: Rc<RefCell<FrameTap>>,
        quickack: bool,
    ) -> Self {
        Transport { stream, tls, tap, quickack }
    }

    /// Writes what TLS holds: `Ready` once all is out, `Pending` when the socket is full.
    fn flush_tls(&mut self) -> Poll<io::Result<()>> {
        let Some(tls) = &mut self.tls else { return Poll::Ready(Ok(())) };
        while tls.wants_write() {
            match tls.write_tls(&mut self.stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    fn received(&mut self, bytes: &[u8]) {
        if self.quickack {
            // Best effort: a failure only weakens the experiment, never the data.
            let _ = crate::tcp_info::set_quickack(&self.stream);
        }
        self.tap.borrow_mut().received(bytes, Instant::now());
    }
}

fn would_block<T>(result: io::Result<T>) -> Option<io::Result<T>> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        other => Some(other),
    }
}

impl AsyncRead for Transport {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let room = buf.initialize_unfilled();
            let result = match &mut this.tls {
                None => would_block(this.stream.read(room)),
                Some(tls) => match would_block(tls.reader().read(room)) {
                    // Plaintext TLS already holds, or the server's close_notify (Ok(0)).
                    Some(result) => Some(result),
                    None => match tls.read_tls(&mut this.stream) {
                        Ok(0) => Some(Ok(0)),
                        Ok(_) => match tls.process_new_packets() {
                            Ok(_) => continue,
                            Err(e) => Some(Err(io::Error::other(e))),
                        },
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                        Err(e) => Some(Err(e)),
                    },
                },
            };
            return match result {
                None => Poll::Pending,
                Some(Ok(n)) => {
                    if n > 0 {
                        // The tap sees the bytes before h2 does.
                        this.received(&buf.initialize_unfilled()[..n]);
                        buf.advance(n);
                    }
                    Poll::Ready(Ok(()))
                }
                Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Some(Err(e)) => Poll::Ready(Err(e)),
            };
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = match &mut this.tls {
            None => loop {
                match this.stream.write(buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                    other => break other,
                }
            },
            Some(tls) => {
                let taken = tls.writer().write(buf);
                if matches!(taken, Ok(0)) && !buf.is_empty() {
                    // TLS's buffer is full: send some of it first.
                    return match this.flush_tls() {
                        Poll::Ready(Ok(())) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                        other => other.map(|r| r.map(|()| 0)),
                    };
                }
                if let Poll::Ready(Err(e)) = this.flush_tls() {
                    return Poll::Ready(Err(e));
                }
                taken
            }
        };
        if let Ok(n) = written {
            this.tap.borrow_mut().sent(&buf[..n], Instant::now());
        }
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().flush_tls()
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().flush_tls()
    }
}
