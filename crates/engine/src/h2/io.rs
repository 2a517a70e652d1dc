//! The socket under one HTTP/2 connection, as the `h2` crate reads and writes it: plain TCP
//! or TLS (rustls, the handshake already over), non-blocking, every byte shown to the
//! connection's frame tap at the moment its syscall returned. No async runtime: the worker
//! polls `h2` by hand after each readiness event, so "would block" is `Pending` and nobody
//! needs waking.

use super::tap::FrameTap;
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
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
    /// A read found the socket empty, and no readable event came since (the worker clears
    /// it): the socket is edge-triggered, so reading again before one would only return
    /// EAGAIN. h2 polls its connection twice per event (once for what came, once to send
    /// what that made due), and the second read was a wasted syscall each time.
    drained: Rc<Cell<bool>>,
}

impl Transport {
    pub fn new(
        stream: TcpStream,
        tls: Option<Box<ClientConnection>>,
        tap: Rc<RefCell<FrameTap>>,
        quickack: bool,
        drained: Rc<Cell<bool>>,
    ) -> Self {
        Transport { stream, tls, tap, quickack, drained }
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
        let now = Instant::now();
        let mut tap = self.tap.borrow_mut();
        // Only a read after a pause can end a wait for a retransmission: TCP_INFO is read then,
        // and not on the back-to-back reads of a busy connection.
        if tap.may_end_a_loss(now)
            && let Some(counters) = crate::tcp_info::read_loss_counters(&self.stream)
        {
            tap.losses(counters, now);
        }
        tap.received(bytes, now);
    }
}

/// `read()` into the buffer's uninitialised room, which is marked initialised as far as the
/// kernel wrote: h2 hands a fresh buffer each time, and zeroing it first cost 1.8 % of the
/// generator's CPU against nginx (perf, bench/h2_vs_h2load.py).
fn read_uninit(fd: std::os::fd::RawFd, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
    // SAFETY: the kernel writes at most `room.len()` bytes into it and nothing reads the
    // room before `assume_init` covers exactly the bytes written.
    let room = unsafe { buf.unfilled_mut() };
    let n = unsafe { libc::read(fd, room.as_mut_ptr().cast(), room.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    unsafe { buf.assume_init(n) };
    Ok(n)
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
            // Over TLS, plaintext may wait in rustls without any socket event: it reads on.
            if this.tls.is_none() && this.drained.get() {
                return Poll::Pending;
            }
            let result = match &mut this.tls {
                None => would_block(read_uninit(this.stream.as_raw_fd(), buf)),
                Some(tls) => match would_block(tls.reader().read(buf.initialize_unfilled())) {
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
                None => {
                    this.drained.set(true);
                    Poll::Pending
                }
                Some(Ok(n)) => {
                    if n > 0 {
                        // The tap sees the bytes before h2 does.
                        let start = buf.filled().len();
                        this.received(&buf.initialized()[start..start + n]);
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
