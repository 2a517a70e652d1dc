//! One thread's HTTP/2 loop: its connections, each carrying up to `streams_per_connection`
//! requests at once, kept busy as the HTTP/1.1 worker keeps its connections busy. The `h2`
//! crate speaks the protocol; this loop does the sockets (mio, epoll) and polls `h2` by hand
//! after each readiness event with a waker that does nothing, since the loop polls every
//! stream of a connection whenever its socket moved. Times come from the frame tap, taken as
//! each `read()` returned.

use super::io::Transport;
use super::request::{StreamRequest, from_http11};
use super::tap::FrameTap;
use crate::config::EngineConfig;
use crate::control::Control;
use crate::limits::out_of_descriptors_message;
use crate::pacer::{Claim, Pacer};
use crate::record::{ConnectionRecord, ErrorKind, ErrorRecord, ResponseRecord, StreamRecord};
use crate::select::{RequestMix, RequestPicker};
use crate::sink::RecordSink;
use crate::tcp_info::read_tcp_info;
use crate::time::later;
use crate::worker::{WorkerOutput, WorkerPlan};
use bytes::Bytes;
use h2::RecvStream;
use h2::client::{Connection, ResponseFuture, SendRequest};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll as Mio, Token};
use rustls::ClientConnection;
use socket2::SockRef;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Longest the loop sleeps before looking at the stop flag again.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);

type Handshake =
    Pin<Box<dyn Future<Output = Result<(SendRequest<Bytes>, Connection<Transport, Bytes>), h2::Error>>>>;

// Open is where a connection spends the run; the others are brief, so their unused bytes
// cost less than a box's indirection on every event would.
#[allow(clippy::large_enum_variant)]
enum Link {
    /// No socket; a request slot that falls due opens one.
    Closed,
    Connecting(TcpStream),
    Tls(TcpStream, Box<ClientConnection>),
    Handshaking(Handshake),
    Open {
        send: SendRequest<Bytes>,
        connection: Connection<Transport, Bytes>,
    },
}

/// One request slot of a connection.
enum Slot {
    /// Waiting for the pacer (`due`: when to ask again; the run's start: at once).
    Idle {
        due: Instant,
    },
    /// Claimed and due: waits for the connection and for the server's stream limit.
    Due(RequestTiming),
    Awaiting(RequestTiming, ResponseFuture),
    Body(RequestTiming, Response),
    /// The quota is spent: this slot sends no more.
    Done,
}

struct Response {
    status: u16,
    body: RecvStream,
    grpc_status: Option<u16>,
    body_bytes: u64,
}

#[derive(Clone, Copy)]
struct RequestTiming {
    intended: Instant,
    began: Instant,
    request_index: usize,
    stream_id: u32,
    /// The request waited for this connection to open: its connect and TLS times are its own.
    opened_connection: bool,
}

/// Set when `h2` wakes a slot's task: the slot has something to poll. Only woken slots are
/// polled after the connection moved, not every slot of it each time.
struct SlotWake(AtomicBool);

impl Wake for SlotWake {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct H2Connection {
    slot: u32,
    /// Per slot, its wake flag and the waker that sets it.
    wakers: Vec<(Arc<SlotWake>, Waker)>,
    link: Link,
    fd: RawFd,
    tap: Rc<RefCell<FrameTap>>,
    /// Shared with the socket's `Transport`: set when a read found it empty, cleared by a
    /// readable event.
    drained: Rc<Cell<bool>>,
    slots: Vec<Slot>,
    picker: RequestPicker,
    connect_started: Instant,
    connect: Option<Duration>,
    tls_handshake: Option<Duration>,
    tls_started: Instant,
    tls_resumed: bool,
    responses: u32,
    server_reported: bool,
    server_header: Option<String>,
    tls_summary: Option<crate::record::TlsSummary>,
    /// Connect or handshake deadline.
    deadline: Instant,
}

pub(crate) struct H2Worker<'a, S> {
    config: &'a EngineConfig,
    control: &'a Control,
    thread: usize,
    run_start: Instant,
    run_deadline: Option<Instant>,
    poll: Mio,
    connections: Vec<H2Connection>,
    requests: Vec<StreamRequest>,
    mix: RequestMix,
    pacer: Pacer,
    exhausted: bool,
    /// No slot's or connection's deadline falls before this (may be early, never late).
    next_timer: Instant,
    sink: S,
}

impl<'a, S: RecordSink> H2Worker<'a, S> {
    pub fn new(
        config: &'a EngineConfig,
        control: &'a Control,
        plan: WorkerPlan,
        run_start: Instant,
        sink: S,
    ) -> io::Result<Self> {
        let settings = config.http2.expect("an HTTP/2 run");
        let requests = config
            .requests
            .iter()
            .map(|spec| from_http11(&spec.bytes, config.tls.is_some()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io::Error::other)?;
        let mix = RequestMix::new(&config.selection, config.requests.len());
        let connections = (0..plan.connections)
            .map(|index| {
                let slot = (plan.first_slot + index) as u32;
                let streams = settings.streams_per_connection.max(1);
                H2Connection {
                    slot,
                    wakers: (0..streams)
                        .map(|_| {
                            let flag = Arc::new(SlotWake(AtomicBool::new(true)));
                            (Arc::clone(&flag), Waker::from(flag))
                        })
                        .collect(),
                    link: Link::Closed,
                    fd: -1,
                    tap: Rc::new(RefCell::new(FrameTap::new())),
                    drained: Rc::new(Cell::new(false)),
                    slots: (0..streams).map(|_| Slot::Idle { due: run_start }).collect(),
                    picker: mix.picker(slot),
                    connect_started: run_start,
                    connect: None,
                    tls_handshake: None,
                    tls_started: run_start,
                    tls_resumed: false,
                    responses: 0,
                    server_reported: false,
                    server_header: None,
                    tls_summary: None,
                    deadline: run_start,
                }
            })
            .collect();
        Ok(H2Worker {
            config,
            control,
            thread: plan.thread,
            run_start,
            run_deadline: config.duration.map(|d| later(run_start, d)),
            poll: Mio::new()?,
            connections,
            requests,
            mix,
            pacer: Pacer::new(later(run_start, plan.first_slot_after), plan.rate_per_second, plan.quota),
            exhausted: false,
            next_timer: run_start,
            sink,
        })
    }

    pub fn run(mut self) -> io::Result<WorkerOutput<S>> {
        let mut events = Events::with_capacity(1024);
        while !self.control.is_stopped() {
            let now = Instant::now();
            if self.run_deadline.is_some_and(|deadline| now >= deadline) {
                break;
            }
            if now >= self.next_timer {
                // Only when something is due: a pass looks at every slot of every connection.
                self.next_timer = now + Duration::from_secs(3600);
                let next = self.fire_timers(now);
                self.wake_at(next);
            }
            if self.exhausted
                && self.connections.iter().all(|c| c.slots.iter().all(|s| matches!(s, Slot::Done)))
            {
                break;
            }
            let mut wake = self.next_timer.min(now + STOP_CHECK_INTERVAL);
            if let Some(deadline) = self.run_deadline {
                wake = wake.min(deadline);
            }
            let timeout =
                Duration::from_millis(wake.saturating_duration_since(Instant::now()).as_millis() as u64);
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                let index = event.token().0;
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.connections[index].drained.set(false);
                }
                self.drive(index);
            }
        }
        let loop_ended = Instant::now();
        for index in 0..self.connections.len() {
            self.close(index, true);
        }
        let end = self.run_deadline.map_or(loop_ended, |deadline| deadline.min(loop_ended));
        Ok(WorkerOutput { sink: self.sink, due_not_sent: self.pacer.overdue(end), loop_ended })
    }

    /// Claims slots that are free, opens connections that requests wait for, fails what is
    /// past its deadline; returns when to look again.
    fn fire_timers(&mut self, now: Instant) -> Instant {
        let mut next = now + Duration::from_secs(3600);
        for index in 0..self.connections.len() {
            let deadline = self.connections[index].deadline;
            let opening = matches!(
                self.connections[index].link,
                Link::Connecting(_) | Link::Tls(..) | Link::Handshaking(_)
            );
            if opening && now >= deadline {
                let (kind, what) = match self.connections[index].link {
                    Link::Connecting(_) => (ErrorKind::ConnectTimeout, "connect"),
                    Link::Tls(..) => (ErrorKind::Tls, "TLS handshake"),
                    _ => (ErrorKind::Timeout, "HTTP/2 handshake"),
                };
                let message = format!("{what} timed out after {:?}", self.config.connect_timeout);
                self.fail_connection(index, kind, message);
            } else if opening {
                next = next.min(deadline);
            }
            let mut claimed = false;
            for slot in 0..self.connections[index].slots.len() {
                match &self.connections[index].slots[slot] {
                    Slot::Idle { due } if *due <= now => {
                        self.claim(index, slot, now);
                        claimed = true;
                    }
                    Slot::Idle { due } => next = next.min(*due),
                    Slot::Due(timing) | Slot::Awaiting(timing, _) | Slot::Body(timing, _) => {
                        let deadline = later(timing.intended, self.config.timeout);
                        if deadline <= now {
                            let message = format!("no complete response within {:?}", self.config.timeout);
                            self.fail_stream(index, slot, ErrorKind::Timeout, message);
                        } else {
                            next = next.min(deadline);
                        }
                    }
                    Slot::Done => {}
                }
            }
            if matches!(self.connections[index].link, Link::Closed)
                && self.connections[index].slots.iter().any(|s| matches!(s, Slot::Due(_)))
            {
                self.open(index, now);
            }
            // A request claimed here waits to be sent; the others move on their socket's events.
            if claimed && matches!(self.connections[index].link, Link::Open { .. }) {
                self.drive(index);
            }
        }
        next
    }

    /// The timer pass runs no later than `at`.
    fn wake_at(&mut self, at: Instant) {
        self.next_timer = self.next_timer.min(at);
    }

    /// Asks the pacer for this slot's next request.
    fn claim(&mut self, index: usize, slot: usize, now: Instant) {
        if self.exhausted {
            self.connections[index].slots[slot] = Slot::Done;
            return;
        }
        let connection = &mut self.connections[index];
        connection.slots[slot] = match self.pacer.claim(now) {
            Claim::Exhausted => {
                self.exhausted = true;
                Slot::Done
            }
            Claim::At(due) => {
                self.next_timer = self.next_timer.min(due);
                Slot::Idle { due }
            }
            Claim::Now(intended) => Slot::Due(RequestTiming {
                intended,
                began: now,
                request_index: self.mix.next(&mut connection.picker),
                stream_id: 0,
                opened_connection: !matches!(connection.link, Link::Open { .. }),
            }),
        };
        if let Slot::Due(timing) = &self.connections[index].slots[slot] {
            let deadline = later(timing.intended, self.config.timeout);
            self.wake_at(deadline);
        }
    }

    fn open(&mut self, index: usize, now: Instant) {
        let deadline = later(now, self.config.connect_timeout);
        self.wake_at(deadline);
        let connection = &mut self.connections[index];
        connection.connect_started = now;
        connection.deadline = deadline;
        connection.tap = Rc::new(RefCell::new(FrameTap::new()));
        connection.connect = None;
        connection.tls_handshake = None;
        match self.start_connect(index) {
            Ok(()) => self.drive(index),
            Err(e) => {
                let kind = ErrorKind::from_io(&e, true);
                let message = match kind {
                    ErrorKind::OutOfFiles => {
                        let (connections, threads) = (self.config.connections, self.config.threads);
                        out_of_descriptors_message(connections as u64, threads as u64, &e)
                    }
                    _ => format!("connect: {e}"),
                };
                self.fail_connection(index, kind, message);
            }
        }
    }

    fn start_connect(&mut self, index: usize) -> io::Result<()> {
        // Finished at once or not, the first event on the socket says how it went.
        let (socket, _) = crate::connect::start(self.config.address, self.config.socket.nodelay)?;
        let mut stream = TcpStream::from_std(socket.into());
        self.poll.registry().register(&mut stream, Token(index), Interest::READABLE | Interest::WRITABLE)?;
        let connection = &mut self.connections[index];
        connection.fd = stream.as_raw_fd();
        connection.link = Link::Connecting(stream);
        Ok(())
    }

    /// Moves the connection on as far as its socket lets it: through as many of connect, TLS
    /// handshake and HTTP/2 preface as are ready, then the streams.
    fn drive(&mut self, index: usize) {
        let mut link = std::mem::replace(&mut self.connections[index].link, Link::Closed);
        loop {
            let before = std::mem::discriminant(&link);
            let next = match link {
                Link::Connecting(stream) => self.finish_connect(index, stream),
                Link::Tls(stream, tls) => self.tls_handshake(index, stream, tls),
                Link::Handshaking(handshake) => self.h2_handshake(index, handshake),
                Link::Open { send, connection } => return self.exchange(index, send, connection),
                Link::Closed => return,
            };
            match next {
                Err((kind, message)) => return self.fail_connection(index, kind, message),
                // Still waiting for the socket in the same step.
                Ok(next) if std::mem::discriminant(&next) == before => {
                    self.connections[index].link = next;
                    return;
                }
                Ok(next) => link = next,
            }
        }
    }

    fn finish_connect(&mut self, index: usize, stream: TcpStream) -> Result<Link, (ErrorKind, String)> {
        match crate::connect::outcome(&stream) {
            Ok(false) => return Ok(Link::Connecting(stream)),
            Err(e) => return Err((ErrorKind::from_io(&e, true), format!("connect: {e}"))),
            Ok(true) => {}
        }
        let now = Instant::now();
        let connection = &mut self.connections[index];
        connection.connect = Some(now - connection.connect_started);
        connection.deadline = later(now, self.config.connect_timeout);
        match &self.config.tls {
            None => {
                self.control.mark_connected();
                Ok(self.start_h2(index, stream, None))
            }
            Some(client) => match client.connect() {
                Ok(tls) => {
                    connection.tls_started = now;
                    self.tls_handshake(index, stream, Box::new(tls))
                }
                Err(e) => Err((ErrorKind::Tls, crate::tls::describe_tls_error(&e))),
            },
        }
    }

    fn tls_handshake(
        &mut self,
        index: usize,
        mut stream: TcpStream,
        mut tls: Box<ClientConnection>,
    ) -> Result<Link, (ErrorKind, String)> {
        let failed =
            |e: io::Error, what: &str| (ErrorKind::from_io(&e, false), format!("TLS handshake: {what}: {e}"));
        while tls.is_handshaking() {
            while tls.wants_write() {
                match tls.write_tls(&mut stream) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Link::Tls(stream, tls)),
                    Err(e) => return Err(failed(e, "write")),
                }
            }
            match tls.read_tls(&mut stream) {
                Ok(0) => {
                    let message = "TLS handshake failed: the server closed the connection (does it speak TLS on this port?)";
                    return Err((ErrorKind::Tls, message.to_string()));
                }
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        return Err((ErrorKind::Tls, crate::tls::describe_tls_error(&e)));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Link::Tls(stream, tls)),
                Err(e) => return Err(failed(e, "read")),
            }
        }
        if tls.alpn_protocol() != Some(b"h2") {
            let chose =
                tls.alpn_protocol().map_or("none".to_string(), |p| String::from_utf8_lossy(p).into_owned());
            return Err((
                ErrorKind::Tls,
                format!("the server did not choose HTTP/2 by ALPN (it chose {chose})"),
            ));
        }
        let now = Instant::now();
        self.control.mark_connected();
        let connection = &mut self.connections[index];
        connection.tls_handshake = Some(now - connection.tls_started);
        connection.tls_summary = crate::tls::summary_of(&tls);
        connection.tls_resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        Ok(self.start_h2(index, stream, Some(tls)))
    }

    fn start_h2(&mut self, index: usize, stream: TcpStream, tls: Option<Box<ClientConnection>>) -> Link {
        let settings = self.config.http2.expect("an HTTP/2 run");
        let connection = &self.connections[index];
        connection.drained.set(false);
        let transport = Transport::new(
            stream,
            tls,
            Rc::clone(&connection.tap),
            self.config.socket.quickack_after_read,
            Rc::clone(&connection.drained),
        );
        let mut builder = h2::client::Builder::new();
        builder
            .initial_window_size(settings.stream_window_bytes)
            .initial_connection_window_size(settings.connection_window_bytes)
            .enable_push(false);
        // One stream until the server's SETTINGS arrive, then its limit (none of our own: the
        // server's is the one measured). Go, grpc-go, Node and nghttpd refuse streams past
        // their limit opened before the client read it (REFUSED_STREAM), hypercorn closes
        // the connection; h2load, which does not wait, fails or passes by the race.
        builder.initial_max_send_streams(1);
        let handshake: Handshake = Box::pin(builder.handshake::<_, Bytes>(transport));
        Link::Handshaking(handshake)
    }

    fn h2_handshake(&mut self, index: usize, mut handshake: Handshake) -> Result<Link, (ErrorKind, String)> {
        match handshake.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Pending => Ok(Link::Handshaking(handshake)),
            Poll::Ready(Ok((send, connection))) => Ok(Link::Open { send, connection }),
            Poll::Ready(Err(e)) => Err(self.connection_failure(index, &e)),
        }
    }

    /// Polls the connection and every stream of it until nothing moves.
    fn exchange(
        &mut self,
        index: usize,
        mut send: SendRequest<Bytes>,
        mut connection: Connection<Transport, Bytes>,
    ) {
        // The connection is polled after every event on its socket: it needs no waker.
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            match Pin::new(&mut connection).poll(&mut cx) {
                Poll::Pending => {}
                Poll::Ready(result) => {
                    self.connections[index].link = Link::Closed;
                    let (kind, message) = match result {
                        Ok(()) => {
                            (ErrorKind::ClosedEarly, "the server closed the HTTP/2 connection".to_string())
                        }
                        Err(e) => self.connection_failure(index, &e),
                    };
                    return self.fail_connection(index, kind, message);
                }
            }
            let mut moved = false;
            for slot in 0..self.connections[index].slots.len() {
                let (flag, waker) = &self.connections[index].wakers[slot];
                // h2 keeps one waker for the request waiting to open a stream, the last
                // one's: every slot waiting to send asks again each time.
                let due = matches!(self.connections[index].slots[slot], Slot::Due(_));
                if !flag.0.swap(false, Ordering::Relaxed) && !due {
                    continue;
                }
                let waker = waker.clone();
                if self.step(index, slot, &mut send, &mut Context::from_waker(&waker)) {
                    // Its next state may be ready at once (a response's DATA already in).
                    self.connections[index].wakers[slot].0.0.store(true, Ordering::Relaxed);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        self.connections[index].link = Link::Open { send, connection };
    }

    /// Moves one slot on; whether it moved.
    fn step(
        &mut self,
        index: usize,
        slot: usize,
        send: &mut SendRequest<Bytes>,
        cx: &mut Context<'_>,
    ) -> bool {
        let state = std::mem::replace(&mut self.connections[index].slots[slot], Slot::Done);
        let (state, moved) = match state {
            Slot::Due(mut timing) => match send.poll_ready(cx) {
                Poll::Pending => (Slot::Due(timing), false),
                Poll::Ready(Err(e)) => {
                    self.connections[index].slots[slot] = Slot::Due(timing);
                    let (kind, message) = self.connection_failure(index, &e);
                    self.fail_stream(index, slot, kind, message);
                    return true;
                }
                Poll::Ready(Ok(())) => {
                    let request = &self.requests[timing.request_index];
                    let end = request.body.is_empty();
                    match send.send_request(request.head.clone(), end) {
                        Ok((response, mut body)) => {
                            timing.stream_id = response.stream_id().into();
                            if !end {
                                // h2 sends it as the server's window allows.
                                let _ = body.send_data(request.body.clone(), true);
                            }
                            (Slot::Awaiting(timing, response), true)
                        }
                        Err(e) => {
                            self.connections[index].slots[slot] = Slot::Due(timing);
                            let (kind, message) = self.connection_failure(index, &e);
                            self.fail_stream(index, slot, kind, message);
                            return true;
                        }
                    }
                }
            },
            Slot::Awaiting(timing, mut future) => match Pin::new(&mut future).poll(cx) {
                Poll::Pending => (Slot::Awaiting(timing, future), false),
                Poll::Ready(Ok(response)) => {
                    let connection = &mut self.connections[index];
                    if connection.server_header.is_none() && !connection.server_reported {
                        connection.server_header = response
                            .headers()
                            .get(http::header::SERVER)
                            .and_then(|v| v.to_str().ok())
                            .filter(|v| v.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
                            .map(str::to_string);
                    }
                    let grpc_status = grpc_status(response.headers());
                    let status = response.status().as_u16();
                    let body = response.into_body();
                    (Slot::Body(timing, Response { status, body, grpc_status, body_bytes: 0 }), true)
                }
                Poll::Ready(Err(e)) => {
                    self.connections[index].slots[slot] = Slot::Awaiting(timing, future);
                    let (kind, message) = self.connection_failure(index, &e);
                    self.fail_stream(index, slot, kind, message);
                    return true;
                }
            },
            Slot::Body(timing, mut response) => {
                let mut moved = false;
                let done = loop {
                    match response.body.poll_data(cx) {
                        Poll::Pending => break false,
                        Poll::Ready(Some(Ok(chunk))) => {
                            moved = true;
                            response.body_bytes += chunk.len() as u64;
                            // Read and dropped at once: the window opens again as h2 sees fit.
                            let _ = response.body.flow_control().release_capacity(chunk.len());
                        }
                        Poll::Ready(None) => break true,
                        Poll::Ready(Some(Err(e))) => {
                            self.connections[index].slots[slot] = Slot::Body(timing, response);
                            let (kind, message) = self.connection_failure(index, &e);
                            self.fail_stream(index, slot, kind, message);
                            return true;
                        }
                    }
                };
                if !done {
                    (Slot::Body(timing, response), moved)
                } else {
                    match response.body.poll_trailers(cx) {
                        Poll::Pending => (Slot::Body(timing, response), moved),
                        Poll::Ready(trailers) => {
                            if let Ok(Some(trailers)) = &trailers {
                                response.grpc_status = grpc_status(trailers).or(response.grpc_status);
                            }
                            self.complete(index, timing, &response);
                            (Slot::Idle { due: self.run_start }, true)
                        }
                    }
                }
            }
            other => (other, false),
        };
        self.connections[index].slots[slot] = state;
        if matches!(self.connections[index].slots[slot], Slot::Idle { .. }) {
            self.claim(index, slot, Instant::now());
        }
        moved
    }

    fn complete(&mut self, index: usize, timing: RequestTiming, response: &Response) {
        let connection = &mut self.connections[index];
        let frames = connection.tap.borrow_mut().take_finished(timing.stream_id);
        let now = Instant::now();
        let since = |at: Option<Instant>| at.map(|at| at.saturating_duration_since(timing.intended));
        let last = frames.and_then(|f| f.last_frame).unwrap_or(now);
        let record = ResponseRecord {
            connection: connection.slot,
            request: timing.request_index as u16,
            sequence_on_connection: connection.responses,
            start_offset: timing.intended.saturating_duration_since(self.run_start),
            connect: connection.connect.filter(|_| timing.opened_connection),
            tls_handshake: connection.tls_handshake.filter(|_| timing.opened_connection),
            tls_resumed: connection.tls_resumed && timing.opened_connection,
            first_byte: since(frames.and_then(|f| f.headers_received)).unwrap_or_default(),
            total: last.saturating_duration_since(timing.intended),
            total_uncorrected: last.saturating_duration_since(timing.began),
            read_chunks: frames.map_or(1, |f| f.data_frames + 1),
            max_read_gap: frames.map_or(Duration::ZERO, |f| f.max_gap),
            bytes_before_max_gap: frames.map_or(0, |f| f.bytes_before_max_gap),
            paused: frames.map_or(Duration::ZERO, |f| f.paused),
            pauses: frames.map_or(0, |f| f.pauses),
            response_bytes: response.body_bytes,
            status: response.status,
            http2: Some(StreamRecord {
                stream_id: timing.stream_id,
                queued: since(frames.and_then(|f| f.headers_sent)).unwrap_or_default(),
                first_data: since(frames.and_then(|f| f.first_data)),
                window_blocked: frames.map_or(Duration::ZERO, |f| f.window_blocked),
                grpc_status: response.grpc_status,
                loss_held: frames.map_or(Duration::ZERO, |f| f.loss_held),
                loss_held_before_headers: frames.map_or(Duration::ZERO, |f| f.loss_held_before_headers),
                send_window_blocked: frames.map_or(Duration::ZERO, |f| f.send_window_blocked),
            }),
        };
        connection.responses += 1;
        self.sink.response(&record);
        self.control.add_completed(self.thread);
    }

    /// One request failed; its stream is dropped (h2 resets it) and its slot asks again.
    fn fail_stream(&mut self, index: usize, slot: usize, kind: ErrorKind, message: String) {
        let now = Instant::now();
        self.next_timer = self.next_timer.min(now);
        let connection = &mut self.connections[index];
        let state = std::mem::replace(&mut connection.slots[slot], Slot::Idle { due: now });
        let timing = match state {
            Slot::Due(timing) | Slot::Awaiting(timing, _) | Slot::Body(timing, _) => timing,
            other => {
                connection.slots[slot] = other;
                return;
            }
        };
        if timing.stream_id != 0 {
            connection.tap.borrow_mut().forget(timing.stream_id);
        }
        let offset = Instant::now().saturating_duration_since(self.run_start);
        let record = ErrorRecord {
            connection: connection.slot,
            request: timing.request_index as u16,
            offset,
            kind,
            message,
        };
        self.sink.error(&record);
        self.control.add_error(self.thread);
    }

    /// The connection failed: every request on it or waiting for it failed with it.
    fn fail_connection(&mut self, index: usize, kind: ErrorKind, message: String) {
        let opening =
            matches!(self.connections[index].link, Link::Connecting(_) | Link::Tls(..) | Link::Closed)
                && self.connections[index].responses == 0;
        if opening && !matches!(kind, ErrorKind::OutOfFiles | ErrorKind::PortsExhausted) {
            self.control.connect_failed(message.strip_prefix("connect: ").unwrap_or(&message));
        }
        self.close(index, false);
        for slot in 0..self.connections[index].slots.len() {
            if matches!(
                self.connections[index].slots[slot],
                Slot::Due(_) | Slot::Awaiting(..) | Slot::Body(..)
            ) {
                self.fail_stream(index, slot, kind, message.clone());
            }
        }
        // Every failed slot claims again at the next timer pass, which reopens the connection.
    }

    /// Closes the socket, recording the connection. `at_run_end`: streams in flight are
    /// abandoned, not failed.
    fn close(&mut self, index: usize, at_run_end: bool) {
        let connection = &mut self.connections[index];
        let link = std::mem::replace(&mut connection.link, Link::Closed);
        if connection.fd < 0 {
            return;
        }
        let in_flight = connection.slots.iter().any(|s| matches!(s, Slot::Awaiting(..) | Slot::Body(..)));
        if at_run_end && in_flight {
            // As the HTTP/1.1 worker: reset, so the server is left nothing to retransmit.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(connection.fd) };
            let _ = SockRef::from(&fd).set_linger(Some(Duration::ZERO));
        }
        let record = ConnectionRecord {
            connection: connection.slot,
            requests: u64::from(connection.responses),
            abandoned_request: at_run_end && in_flight,
            tcp_info: read_tcp_info(&connection.fd),
            server_header: if connection.server_reported { None } else { connection.server_header.take() },
            tls: connection.tls_summary.take(),
            http2: Some(connection.tap.borrow().figures),
        };
        connection.server_reported |= record.server_header.is_some();
        connection.responses = 0;
        connection.fd = -1;
        // Dropping the link closes the socket (after the record read its TCP_INFO).
        drop(link);
        for slot in &mut connection.slots {
            if let Slot::Awaiting(timing, _) | Slot::Body(timing, _) = slot {
                *slot = Slot::Due(RequestTiming { opened_connection: true, stream_id: 0, ..*timing });
            }
        }
        self.sink.connection(&record);
    }
}

impl<S> H2Worker<'_, S> {
    /// A failed connection's or stream's kind and words: an HTTP/1.1 answer to HTTP/2 said as such, not
    /// as the frame error h2 made of its status line.
    fn connection_failure(&self, index: usize, error: &h2::Error) -> (ErrorKind, String) {
        if let Some(first_bytes) = &self.connections[index].tap.borrow().not_http2 {
            let message = format!(
                "the server did not answer in HTTP/2 (it began \"{first_bytes}\"): it does not speak h2c \
                 (prior knowledge) on this port; drop --h2 and --grpc"
            );
            return (ErrorKind::MalformedResponse, message);
        }
        h2_failure(error)
    }
}

/// A gRPC status header's value, when there is one.
fn grpc_status(headers: &http::HeaderMap) -> Option<u16> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// An h2 error as a record's kind and words.
fn h2_failure(error: &h2::Error) -> (ErrorKind, String) {
    if let Some(io) = error.get_io() {
        return (ErrorKind::from_io(io, false), format!("HTTP/2: {io}"));
    }
    let kind =
        if error.is_reset() || error.is_go_away() { ErrorKind::Reset } else { ErrorKind::MalformedResponse };
    (kind, format!("HTTP/2: {error}"))
}
