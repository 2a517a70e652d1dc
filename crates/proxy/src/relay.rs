//! The relay's event loop: one thread, one epoll (mio), a listener and its connections. It
//! accepts clients, opens one upstream connection for each (TCP_NODELAY on both legs, so the
//! relay adds no Nagle stall of its own), moves bytes, and stops on the duration, the
//! exchange count or the caller's signal. Records go to the sink; nothing is printed here.

use crate::buffer::Buffer;
use crate::connection::{Connection, Status};
use crate::record::{
    ConnectFailure, ConnectFailureRecord, ConnectionRecord, Ending, ExchangeRecord, IncompleteRecord,
};
use crate::sink::RelaySink;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use nodelay_tcp::time::later;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX);
/// Longest the loop sleeps before looking at the stop signal again.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);
/// How often connects in progress are checked against their timeout.
const CONNECT_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// Pending connections the kernel queues before the relay accepts them.
const LISTEN_BACKLOG: i32 = 1024;

/// What the relay does and when it stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayConfig {
    /// The one address every client's bytes go to.
    pub upstream: SocketAddr,
    /// Stop once this many exchanges were relayed in full.
    pub max_exchanges: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Connections open at once; more wait in the listen queue.
    pub max_connections: usize,
    /// Each direction's buffer: a connection holds at most twice this.
    pub buffer_bytes: usize,
    /// An upstream that has not accepted within this is given up on.
    pub connect_timeout: Duration,
}

impl RelayConfig {
    /// 64 KiB per direction, 1024 connections, 5 s to connect; until stopped.
    pub fn new(upstream: SocketAddr) -> Self {
        RelayConfig {
            upstream,
            max_exchanges: None,
            duration: None,
            max_connections: 1024,
            buffer_bytes: 64 * 1024,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// Why the relay stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The configured duration was over.
    Duration,
    /// The configured number of exchanges was relayed.
    Exchanges,
    /// The caller's stop signal (Ctrl-C).
    Signal,
}

impl StopReason {
    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::Exchanges => "exchanges",
            StopReason::Signal => "signal",
        }
    }
}

/// How the run went, besides the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayEnd {
    /// From the start of the relay's loop until it stopped and closed the connections still open.
    pub elapsed: Duration,
    /// What stopped it.
    pub stopped_by: StopReason,
    /// Client connections accepted.
    pub accepted: u64,
    /// Connections still open when the relay stopped (closed by it).
    pub open_at_end: u64,
    /// `accept()` failures (out of descriptors, most often); the client waited in the queue.
    pub accept_failures: u64,
}

/// A bound listener and the loop that serves it.
pub struct Relay {
    poll: Poll,
    listener: TcpListener,
    local: SocketAddr,
    config: RelayConfig,
}

impl Relay {
    /// Binds the listening socket; clients are accepted once [`Relay::run`] runs (the kernel
    /// queues them meanwhile).
    pub fn bind(listen: SocketAddr, config: RelayConfig) -> io::Result<Relay> {
        let socket = Socket::new(Domain::for_address(listen), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        // Accepted sockets inherit it on Linux; each is set again all the same.
        socket.set_tcp_nodelay(true)?;
        socket.bind(&listen.into())?;
        socket.listen(LISTEN_BACKLOG)?;
        let mut listener = TcpListener::from_std(socket.into());
        let local = listener.local_addr()?;
        if relays_to_itself(local, config.upstream) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the upstream is the relay's own address",
            ));
        }
        let poll = Poll::new()?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        Ok(Relay { poll, listener, local, config })
    }

    /// The address clients connect to (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Relays until the duration is over, the exchange count is reached or `stop()` says so.
    pub fn run<S: RelaySink>(self, sink: &mut S, stop: impl Fn() -> bool) -> io::Result<RelayEnd> {
        Loop::new(self).run(&mut Counting { inner: sink, exchanges: 0 }, stop)
    }
}

/// Counts the exchanges that pass, for `max_exchanges`.
struct Counting<'a, S> {
    inner: &'a mut S,
    exchanges: u64,
}

impl<S: RelaySink> RelaySink for Counting<'_, S> {
    fn exchange(&mut self, record: &ExchangeRecord) {
        self.exchanges += 1;
        self.inner.exchange(record);
    }
    fn incomplete(&mut self, record: &IncompleteRecord) {
        self.inner.incomplete(record);
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        self.inner.connection(record);
    }
    fn connect_failed(&mut self, record: &ConnectFailureRecord) {
        self.inner.connect_failed(record);
    }
}

/// The loop's state: connections in slots whose buffers outlive them.
struct Loop {
    relay: Relay,
    slots: Vec<Option<Connection>>,
    free_slots: Vec<usize>,
    /// Buffers of closed connections, for the next ones.
    spare_buffers: Vec<(Buffer, Buffer)>,
    live: usize,
    next_id: u64,
    /// The listener may hold clients not accepted yet (edge-triggered: remembered here).
    accept_ready: bool,
    /// `accept()` ran out of descriptors: wait for a connection to close before retrying.
    accept_paused: bool,
    accepted: u64,
    accept_failures: u64,
    next_connect_check: Instant,
}

fn tokens(slot: usize) -> (Token, Token) {
    (Token(2 * slot), Token(2 * slot + 1))
}

impl Loop {
    fn new(relay: Relay) -> Self {
        Loop {
            relay,
            slots: Vec::new(),
            free_slots: Vec::new(),
            spare_buffers: Vec::new(),
            live: 0,
            next_id: 1,
            accept_ready: false,
            accept_paused: false,
            accepted: 0,
            accept_failures: 0,
            next_connect_check: Instant::now(),
        }
    }

    fn run<S: RelaySink>(
        mut self,
        sink: &mut Counting<'_, S>,
        stop: impl Fn() -> bool,
    ) -> io::Result<RelayEnd> {
        let started = Instant::now();
        let deadline = self.relay.config.duration.map(|d| later(started, d));
        let max_exchanges = self.relay.config.max_exchanges.unwrap_or(u64::MAX);
        let mut events = Events::with_capacity(1024);
        let stopped_by = 'run: loop {
            if stop() {
                break StopReason::Signal;
            }
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                break StopReason::Duration;
            }
            let mut wake = now + STOP_CHECK_INTERVAL;
            if let Some(deadline) = deadline {
                wake = wake.min(deadline);
            }
            // Whole milliseconds, rounded up: a deadline is never polled for in a busy loop.
            let timeout = wake.saturating_duration_since(now).as_micros().div_ceil(1000);
            match self.relay.poll.poll(&mut events, Some(Duration::from_millis(timeout as u64))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                if event.token() == LISTENER {
                    self.accept_ready = true;
                    continue;
                }
                let (slot, upstream) = (event.token().0 / 2, event.token().0 % 2 == 1);
                let Some(Some(connection)) = self.slots.get_mut(slot) else { continue };
                let closed = event.is_read_closed() || event.is_error();
                let writable = event.is_writable() || event.is_write_closed() || event.is_error();
                connection.mark(upstream, event.is_readable(), writable, closed);
                self.drive(slot, sink)?;
                if sink.exchanges >= max_exchanges {
                    break 'run StopReason::Exchanges;
                }
            }
            self.check_connects(sink);
            self.accept(sink)?;
        };
        let open_at_end = self.live as u64;
        for slot in 0..self.slots.len() {
            if let Some(connection) = self.slots[slot].take() {
                connection.finish(Ending::Stopped, sink);
            }
        }
        Ok(RelayEnd {
            elapsed: started.elapsed(),
            stopped_by,
            accepted: self.accepted,
            open_at_end,
            accept_failures: self.accept_failures,
        })
    }

    /// Moves what can move on one connection, then closes it or updates its interests.
    fn drive(&mut self, slot: usize, sink: &mut impl RelaySink) -> io::Result<()> {
        let Some(connection) = self.slots[slot].as_mut() else { return Ok(()) };
        match connection.pump(sink) {
            Status::Open => connection.update_interests(self.relay.poll.registry(), tokens(slot)),
            Status::Done(ending) => {
                let connection = self.slots[slot].take().expect("open");
                let buffers = connection.finish(ending, sink);
                self.release(slot, buffers);
                Ok(())
            }
            Status::ConnectFailed(error) => {
                self.connect_failed(slot, &error, sink);
                Ok(())
            }
        }
    }

    fn connect_failed(&mut self, slot: usize, error: &io::Error, sink: &mut impl RelaySink) {
        let connection = self.slots[slot].take().expect("open");
        let message = format!("cannot connect to {}: {error}", self.relay.config.upstream);
        sink.connect_failed(&ConnectFailureRecord {
            connection: connection.id,
            kind: ConnectFailure::of(error),
            message,
        });
        let buffers = connection.abandon();
        self.release(slot, buffers);
    }

    fn release(&mut self, slot: usize, buffers: (Buffer, Buffer)) {
        self.spare_buffers.push(buffers);
        self.free_slots.push(slot);
        self.live -= 1;
        self.accept_paused = false;
    }

    /// Gives up on upstream connects older than the timeout.
    fn check_connects(&mut self, sink: &mut impl RelaySink) {
        let now = Instant::now();
        if now < self.next_connect_check {
            return;
        }
        self.next_connect_check = now + CONNECT_CHECK_INTERVAL;
        let timeout = self.relay.config.connect_timeout;
        for slot in 0..self.slots.len() {
            let expired = self.slots[slot]
                .as_ref()
                .and_then(Connection::connecting_since)
                .is_some_and(|since| now.saturating_duration_since(since) >= timeout);
            if expired {
                let error = io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {timeout:?}"));
                self.connect_failed(slot, &error, sink);
            }
        }
    }

    /// Accepts the clients waiting, while there is room for them.
    fn accept(&mut self, sink: &mut impl RelaySink) -> io::Result<()> {
        while self.accept_ready && !self.accept_paused && self.live < self.relay.config.max_connections {
            match self.relay.listener.accept() {
                Ok((client, _)) => self.open(client, sink)?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.accept_ready = false,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    self.accept_failures += 1;
                    // Retried when a connection closes and frees its descriptors.
                    self.accept_paused = self.live > 0;
                    if !self.accept_paused {
                        return Ok(());
                    }
                }
                // The client gave up while queued (ECONNABORTED) and the like: the next one.
                Err(_) => self.accept_failures += 1,
            }
        }
        Ok(())
    }

    /// A client accepted: its upstream connection starts, both sockets are registered.
    fn open(&mut self, client: TcpStream, sink: &mut impl RelaySink) -> io::Result<()> {
        self.accepted += 1;
        let id = self.next_id;
        self.next_id += 1;
        let _ = client.set_nodelay(true);
        let upstream = match connect(self.relay.config.upstream) {
            Ok(upstream) => upstream,
            Err(error) => {
                let message = format!("cannot connect to {}: {error}", self.relay.config.upstream);
                sink.connect_failed(&ConnectFailureRecord {
                    connection: id,
                    kind: ConnectFailure::of(&error),
                    message,
                });
                return Ok(());
            }
        };
        let buffers = self.spare_buffers.pop().unwrap_or_else(|| {
            let bytes = self.relay.config.buffer_bytes;
            (Buffer::new(bytes), Buffer::new(bytes))
        });
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let mut connection = Connection::new(id, client, upstream, buffers, Instant::now());
        connection.register(self.relay.poll.registry(), tokens(slot))?;
        self.slots[slot] = Some(connection);
        self.live += 1;
        Ok(())
    }
}

/// Starts a non-blocking connect with TCP_NODELAY set.
fn connect(address: SocketAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(true)?;
    match socket.connect(&address.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(socket.into()))
}

/// Whether connections to `upstream` would reach the relay itself: the same port and the same
/// address, an IPv4-mapped IPv6 address counting as its IPv4 one, and a wildcard listen
/// address as every address of this machine.
fn relays_to_itself(local: SocketAddr, upstream: SocketAddr) -> bool {
    let (listen_ip, upstream_ip) = (local.ip().to_canonical(), upstream.ip().to_canonical());
    local.port() == upstream.port()
        && (listen_ip == upstream_ip
            || (listen_ip.is_unspecified()
                && (upstream_ip.is_loopback()
                    || std::net::UdpSocket::bind(SocketAddr::new(upstream_ip, 0)).is_ok())))
}

#[cfg(test)]
mod self_relay_tests {
    use super::relays_to_itself;

    #[test]
    fn the_relay_refuses_itself_however_the_address_is_written() {
        let at = |text: &str| text.parse().unwrap();
        assert!(relays_to_itself(at("[::ffff:127.0.0.1]:8001"), at("127.0.0.1:8001")));
        assert!(relays_to_itself(at("0.0.0.0:8001"), at("127.0.0.1:8001")));
        assert!(!relays_to_itself(at("127.0.0.1:8001"), at("127.0.0.1:8002")));
        assert!(!relays_to_itself(at("127.0.0.1:8001"), at("127.0.0.2:8001")));
    }
}
