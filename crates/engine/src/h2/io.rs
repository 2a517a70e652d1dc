//! The socket under one HTTP/2 connection: plain TCP or TLS (rustls, the handshake already
//! over), non-blocking, every byte shown to the connection's frame tap at the moment its
//! syscall returned, or, when the worker's waits are batched, at the kernel's arrival stamp
//! (arrival.rs; under TLS, the stamp of the socket read that completed the plaintext's
//! record). The stamp is read either way: a stream's end is dated by it, since the next
//! request on a closed loop's slot could leave from then (its `queued` starts there). The
//! worker reads it into libnghttp2 and writes what the library serialised.

use super::tap::FrameTap;
use crate::arrival::{self, ClockPair};
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Instant;

pub(crate) struct Transport {
    stream: TcpStream,
    tls: Option<Box<ClientConnection>>,
    tap: Rc<RefCell<FrameTap>>,
    quickack: bool,
    /// Frames are timed by the kernel's arrival stamps, not by the read.
    stamped: bool,
    /// The arrival stamp of the latest socket read (the socket has SO_TIMESTAMPNS on). Under
    /// TLS the plaintext rustls hands out was completed by that read or an earlier one.
    arrival: Option<i128>,
}

/// The socket as this loop and rustls read it: a read keeps its arrival stamp.
struct Socket<'a> {
    stream: &'a mut TcpStream,
    /// Where a read leaves its stamp.
    arrival: &'a mut Option<i128>,
}

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, stamp) = arrival::read_stamped(self.stream.as_raw_fd(), buf)?;
        if n > 0 {
            // A read without a stamp leaves none: an older one would time its bytes early.
            *self.arrival = stamp;
        }
        Ok(n)
    }
}

impl Transport {
    pub fn new(
        stream: TcpStream,
        tls: Option<Box<ClientConnection>>,
        tap: Rc<RefCell<FrameTap>>,
        quickack: bool,
        stamped: bool,
    ) -> Self {
        Transport { stream, tls, tap, quickack, stamped, arrival: None }
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    fn received(&mut self, bytes: &[u8], now: Instant, arrived: Instant) {
        if self.quickack {
            // Best effort: a failure only weakens the experiment, never the data.
            let _ = nodelay_tcp::set_quickack(&self.stream);
        }
        let mut tap = self.tap.borrow_mut();
        // Only a read after a pause can end a wait for a retransmission: TCP_INFO is read then,
        // and not on the back-to-back reads of a busy connection.
        // TCP_INFO is read once, for either or both.
        let pause_ended = tap.may_end_a_loss(now);
        if (pause_ended || tap.losses_settle_due(now))
            && let Some(counters) = nodelay_tcp::read_loss_counters(&self.stream)
        {
            if pause_ended {
                tap.losses(counters, now);
            }
            // Due still: a pause just ended may have joined the unsettled ones, and put off
            // their verdict.
            if tap.losses_settle_due(now) {
                tap.settle_losses(counters);
            }
        }
        tap.received_arrived(bytes, now, arrived);
    }

    /// Reads what the socket (or TLS) holds into `buf`, showing it to the tap first, timed
    /// by its arrival stamp (placed through `clocks`, read at the wake-up) or by the read.
    /// `WouldBlock` when there is nothing; `Ok(0)` at the server's FIN or close_notify.
    pub fn read(&mut self, buf: &mut [u8], clocks: &mut ClockPair) -> io::Result<usize> {
        loop {
            let mut socket = Socket { stream: &mut self.stream, arrival: &mut self.arrival };
            let n = match &mut self.tls {
                None => socket.read(buf)?,
                Some(tls) => match tls.reader().read(buf) {
                    // Plaintext TLS already holds, or the server's close_notify (Ok(0)).
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => match tls.read_tls(&mut socket)? {
                        0 => 0,
                        _ => {
                            tls.process_new_packets().map_err(io::Error::other)?;
                            continue;
                        }
                    },
                    Err(e) => return Err(e),
                },
            };
            if n > 0 {
                // Several streams share the socket, so no one request bounds the stamp from
                // below as HTTP/1.1's does; a clock step costs what arrival.rs says.
                let read_at = Instant::now();
                let arrived = self.arrival.map_or(read_at, |stamp| clocks.place(stamp).min(read_at));
                self.received(&buf[..n], if self.stamped { arrived } else { read_at }, arrived);
            }
            return Ok(n);
        }
    }

    /// Writes as much of `buf` as the socket takes (through TLS when there is TLS), showing
    /// it to the tap; `WouldBlock` when it takes nothing.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // What TLS already holds goes first: it is older than `buf`.
        self.flush_tls()?;
        // A frame leaves when the write begins: on loopback the call returns only after the
        // receiver's kernel has taken the segment (tens of µs later, as tcpdump showed).
        let leaving = Instant::now();
        let written = match &mut self.tls {
            None => self.stream.write(buf)?,
            Some(tls) => {
                let taken = tls.writer().write(buf)?;
                // Sealed now; what the socket does not take waits in rustls for the next flush.
                match self.flush_tls() {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                    _ => {}
                }
                taken
            }
        };
        self.tap.borrow_mut().sent(&buf[..written], leaving);
        Ok(written)
    }

    /// Writes what TLS holds; `WouldBlock` when the socket is full.
    pub fn flush_tls(&mut self) -> io::Result<()> {
        let Some(tls) = &mut self.tls else { return Ok(()) };
        while tls.wants_write() {
            tls.write_tls(&mut self.stream)?;
        }
        Ok(())
    }
}
