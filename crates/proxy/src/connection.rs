//! One relayed connection: the client's socket and the upstream's, and a fixed buffer for
//! each direction. Each direction is a half that reads from one side while its buffer has
//! room and writes to the other as soon as it can; a side is not read while its buffer is
//! full (backpressure), and an end of stream is passed on (shutdown of that direction only)
//! once its buffer is drained, so a half-close passes through.
//!
//! Readiness is tracked as flags (epoll through mio is edge-triggered): a short read or a
//! write that would block clears its flag, an event sets it again. Every read and write is
//! timed where it returns and handed to the exchange tracker.

use crate::buffer::Buffer;
use crate::exchange::{Exchanges, PathRtt};
use crate::record::{ConnectionRecord, Ending, Unfinished};
use crate::sink::RelaySink;
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use nodelay_tcp::read_tcp_info;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

/// One side of the connection.
struct Side {
    stream: TcpStream,
    /// May have bytes to read (cleared by a short read or one that would block).
    readable: bool,
    /// An event said the peer ended its stream (or failed): its end may wait behind the
    /// data, so a short read does not mean there is nothing left to read.
    peer_closed: bool,
    /// May take bytes (cleared by a write that would block).
    writable: bool,
    /// Not read for a while because the other side's buffer was full.
    held_back: bool,
    /// This side ended its stream (a read returned 0).
    read_closed: bool,
    /// The relay shut down its writing to this side (the other side's end passed on).
    write_shut: bool,
    interest: Interest,
}

impl Side {
    fn new(stream: TcpStream) -> Self {
        Side {
            stream,
            readable: false,
            peer_closed: false,
            writable: false,
            held_back: false,
            read_closed: false,
            write_shut: false,
            interest: Interest::READABLE | Interest::WRITABLE,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    ToUpstream,
    ToClient,
}

/// What a connection needs after its sockets moved.
pub(crate) enum Status {
    Open,
    /// Both directions ended, or one side failed: close it.
    Done(Ending),
    /// The upstream connection could not be opened.
    ConnectFailed(io::Error),
}

pub(crate) struct Connection {
    pub id: u64,
    client: Side,
    upstream: Side,
    /// When the upstream connect started, while it is in progress.
    connecting_since: Option<Instant>,
    upstream_connect: Option<Duration>,
    to_upstream: Buffer,
    to_client: Buffer,
    exchanges: Exchanges,
    client_bytes: u64,
    upstream_bytes: u64,
    /// The side that closed or failed first: what an unfinished exchange is blamed on.
    first_gone: Option<Unfinished>,
    /// Exchanges completed when each leg's round trip was last read.
    rtt_read_at: Option<u32>,
}

/// Each leg's round trip is read again after this many exchanges (`min_rtt` only falls, and
/// slowly: a getsockopt per exchange would buy nothing).
const RTT_REFRESH_EXCHANGES: u32 = 16;
/// Each leg's round trip is read after each of a connection's first exchanges.
const RTT_EARLY_EXCHANGES: u32 = 8;

/// A socket's TCP_INFO `min_rtt`, once the kernel has a sample.
fn min_rtt(stream: &TcpStream) -> Option<Duration> {
    read_tcp_info(stream).map(|info| info.min_rtt()).filter(|rtt| !rtt.is_zero())
}

impl Connection {
    pub fn new(
        id: u64,
        client: TcpStream,
        upstream: TcpStream,
        buffers: (Buffer, Buffer),
        now: Instant,
    ) -> Self {
        Connection {
            id,
            client: Side::new(client),
            upstream: Side::new(upstream),
            connecting_since: Some(now),
            upstream_connect: None,
            to_upstream: buffers.0,
            to_client: buffers.1,
            exchanges: Exchanges::new(id, now),
            client_bytes: 0,
            upstream_bytes: 0,
            first_gone: None,
            rtt_read_at: None,
        }
    }

    /// Registers both sockets: the client's as `token(0)`, the upstream's as `token(1)`.
    pub fn register(&mut self, registry: &Registry, tokens: (Token, Token)) -> io::Result<()> {
        registry.register(&mut self.client.stream, tokens.0, self.client.interest)?;
        registry.register(&mut self.upstream.stream, tokens.1, self.upstream.interest)
    }

    /// An event on one side; `closed`: the peer ended its stream or the socket failed.
    pub fn mark(&mut self, upstream: bool, readable: bool, writable: bool, closed: bool) {
        let side = if upstream { &mut self.upstream } else { &mut self.client };
        side.readable |= readable || closed;
        side.writable |= writable;
        side.peer_closed |= closed;
    }

    /// When the upstream connect started, while it is still in progress.
    pub fn connecting_since(&self) -> Option<Instant> {
        self.connecting_since
    }

    /// Moves bytes both ways until nothing more can move without a new event.
    pub fn pump(&mut self, sink: &mut impl RelaySink) -> Status {
        if let Some(started) = self.connecting_since {
            if !(self.upstream.writable || self.upstream.readable) {
                return Status::Open;
            }
            match connect_result(&self.upstream.stream) {
                Ok(true) => {
                    self.connecting_since = None;
                    self.upstream_connect = Some(started.elapsed());
                    // Both handshakes gave the kernel a sample: the first exchange has its RTTs.
                    self.read_path_rtt();
                }
                Ok(false) => {
                    self.upstream.writable = false;
                    self.upstream.readable = false;
                    // Meanwhile the client's first bytes fill its buffer.
                    return match self.transfer(Direction::ToUpstream, sink) {
                        Ok(_) => Status::Open,
                        Err(ending) => Status::Done(ending),
                    };
                }
                Err(e) => return Status::ConnectFailed(e),
            }
        }
        loop {
            let moved = self.transfer(Direction::ToUpstream, sink).and_then(|to_upstream| {
                self.transfer(Direction::ToClient, sink).map(|to_client| to_upstream || to_client)
            });
            match moved {
                Ok(true) => {}
                Ok(false) => break,
                Err(ending) => return Status::Done(ending),
            }
        }
        let completed = self.exchanges.completed();
        // The handshake's sample may run long (a first packet's slow path): the first few
        // exchanges each read it again, later ones every RTT_REFRESH_EXCHANGES.
        let due = |at: u32| {
            completed > at && (completed <= RTT_EARLY_EXCHANGES || completed >= at + RTT_REFRESH_EXCHANGES)
        };
        if self.rtt_read_at.is_none_or(due) {
            self.read_path_rtt();
        }
        let drained = self.to_upstream.is_empty() && self.to_client.is_empty();
        if self.client.read_closed && self.upstream.read_closed && drained {
            return Status::Done(Ending::Closed);
        }
        Status::Open
    }

    /// One direction: a read if its side may have bytes and there is room, writes while the
    /// other side takes them, and the end of stream passed on once drained. Whether anything
    /// moved, or how the connection ended.
    fn transfer(&mut self, direction: Direction, sink: &mut impl RelaySink) -> Result<bool, Ending> {
        let connected = self.connecting_since.is_none();
        let (from, buffer, to, from_upstream) = match direction {
            Direction::ToUpstream => (&mut self.client, &mut self.to_upstream, &mut self.upstream, false),
            Direction::ToClient => (&mut self.upstream, &mut self.to_client, &mut self.client, true),
        };
        let (from_fails, to_fails, from_gone, to_gone) = if from_upstream {
            (Ending::UpstreamError, Ending::ClientError, Unfinished::UpstreamGone, Unfinished::ClientGone)
        } else {
            (Ending::ClientError, Ending::UpstreamError, Unfinished::ClientGone, Unfinished::UpstreamGone)
        };
        let mut moved = false;
        if from.readable && !from.read_closed && !buffer.has_room() {
            from.held_back = true;
        }
        if from.readable && !from.read_closed && buffer.has_room() {
            let room = buffer.room();
            let room_len = room.len();
            match from.stream.read(room) {
                Ok(0) => {
                    from.read_closed = true;
                    from.readable = false;
                    self.first_gone.get_or_insert(from_gone);
                    if from_upstream {
                        self.exchanges.upstream_closed(sink);
                    }
                    moved = true;
                }
                Ok(n) => {
                    let at = Instant::now();
                    if std::mem::take(&mut from.held_back) {
                        self.exchanges.resumed_after_backpressure(from_upstream, at);
                    }
                    // A short read emptied the socket's queue of data: no need to read until
                    // it blocks, unless the peer's end (which no new event announces) waits.
                    from.readable = n == room_len || from.peer_closed;
                    let data = buffer.filled(n);
                    if from_upstream {
                        self.upstream_bytes += n as u64;
                        self.exchanges.upstream_read(at, data, sink);
                    } else {
                        self.client_bytes += n as u64;
                        self.exchanges.client_read(at, data, sink);
                    }
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => from.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => moved = true,
                Err(_) => {
                    self.first_gone.get_or_insert(from_gone);
                    return Err(from_fails);
                }
            }
        }
        while connected && to.writable && !buffer.is_empty() {
            match to.stream.write(buffer.data()) {
                Ok(n) => {
                    let at = Instant::now();
                    buffer.consume(n);
                    if from_upstream {
                        self.exchanges.client_written(at, n, sink);
                    } else {
                        self.exchanges.upstream_written(at, n);
                    }
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => to.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.first_gone.get_or_insert(to_gone);
                    return Err(to_fails);
                }
            }
        }
        if connected && from.read_closed && buffer.is_empty() && !to.write_shut {
            // The other side may be gone already; closing both comes soon enough then.
            let _ = to.stream.shutdown(Shutdown::Write);
            to.write_shut = true;
            moved = true;
        }
        Ok(moved)
    }

    /// Reads each leg's round trip from the relay's own sockets, for the exchanges to come.
    fn read_path_rtt(&mut self) {
        self.rtt_read_at = Some(self.exchanges.completed());
        self.exchanges.set_path_rtt(PathRtt {
            client: min_rtt(&self.client.stream),
            upstream: min_rtt(&self.upstream.stream),
        });
    }

    /// Reads only from a side whose bytes have room to go (backpressure); the registration
    /// changes only when that does.
    pub fn update_interests(&mut self, registry: &Registry, tokens: (Token, Token)) -> io::Result<()> {
        let connecting = self.connecting_since.is_some();
        let wanted = |reading: bool| {
            if reading { Interest::READABLE | Interest::WRITABLE } else { Interest::WRITABLE }
        };
        let client = wanted(!self.client.read_closed && self.to_upstream.has_room());
        let upstream = wanted(connecting || (!self.upstream.read_closed && self.to_client.has_room()));
        if client != self.client.interest {
            registry.reregister(&mut self.client.stream, tokens.0, client)?;
            self.client.interest = client;
        }
        if upstream != self.upstream.interest {
            registry.reregister(&mut self.upstream.stream, tokens.1, upstream)?;
            self.upstream.interest = upstream;
        }
        Ok(())
    }

    /// Closes both sockets: the exchanges left are emitted as incomplete, then the
    /// connection's record with both legs' TCP_INFO. Returns the buffers for the next one.
    pub fn finish(mut self, ending: Ending, sink: &mut impl RelaySink) -> (Buffer, Buffer) {
        let why = match ending {
            // A side that closed first (a client that gave up waiting, or only shut its
            // sending side: a FIN reads the same) is why the exchange did not end, not the stop.
            Ending::Stopped => self.first_gone.unwrap_or(Unfinished::InFlightAtStop),
            Ending::ClientError => *self.first_gone.get_or_insert(Unfinished::ClientGone),
            Ending::UpstreamError => *self.first_gone.get_or_insert(Unfinished::UpstreamGone),
            Ending::Closed => self.first_gone.unwrap_or(Unfinished::ClientGone),
        };
        self.exchanges.finish(why, sink);
        let connected = self.connecting_since.is_none();
        sink.connection(&ConnectionRecord {
            connection: self.id,
            exchanges: self.exchanges.completed(),
            client_bytes: self.client_bytes,
            upstream_bytes: self.upstream_bytes,
            upstream_connect: self.upstream_connect,
            client_tcp_info: read_tcp_info(&self.client.stream),
            upstream_tcp_info: if connected { read_tcp_info(&self.upstream.stream) } else { None },
            framing: self.exchanges.framing(),
            framing_lost: self.exchanges.framing_lost().map(str::to_string),
            upstream_server: self.exchanges.server_header().map(str::to_string),
            ending,
        });
        self.to_upstream.clear();
        self.to_client.clear();
        (self.to_upstream, self.to_client)
    }

    /// Closes both sockets after the upstream could not be reached: nothing was relayed,
    /// so nothing is recorded but the failure. Returns the buffers.
    pub fn abandon(mut self) -> (Buffer, Buffer) {
        self.to_upstream.clear();
        self.to_client.clear();
        (self.to_upstream, self.to_client)
    }
}

/// Whether a non-blocking connect has completed (`Ok(false)`: still in progress).
fn connect_result(stream: &TcpStream) -> io::Result<bool> {
    if let Some(error) = stream.take_error()? {
        return Err(error);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}
