//! One thread's HTTP/2 loop: its connections, each carrying up to `streams_per_connection`
//! requests at once, kept busy as the HTTP/1.1 worker keeps its connections busy. libnghttp2
//! speaks the protocol (session.rs); this loop does the sockets (epoll, through poller.rs):
//! after each readiness event it reads the socket dry into the session, completes the streams
//! that ended, gives the session the requests now due, and writes what it serialised in one
//! `write()`. Times come from the frame tap, taken as each `read()` returned or, when the
//! waits are batched as the HTTP/1.1 loop's are (`EngineConfig::batched_waits`: a thread
//! sleeps on a timer of its own, so the server's core does not send it a wake-up per
//! response), at the kernel's arrival stamps.

use super::io::Transport;
use super::request::from_http11;
use super::session::{Progress, Requests, Session, StreamEvent, SubmitError, error_code_name};
use super::tap::{FrameTap, LossHold};
use crate::arrival::{self, ClockPair};
use crate::config::EngineConfig;
use crate::control::Control;
use crate::pacer::{Claim, Pacer};
use crate::poller::{Batch, BatchSize, Poller};
use crate::record::{ConnectionRecord, ErrorKind, ErrorRecord, ResponseRecord, StreamRecord};
use crate::select::{RequestMix, RequestPicker};
use crate::sink::RecordSink;
use crate::tls::{Handshake, TlsSession};
use crate::worker::{BATCH_MAX, BATCH_MIN_WAIT, BATCH_SHARE, WorkerOutput, WorkerPlan};
use mio::net::TcpStream;
use nodelay_flags::Flag::{Grpc, H2};
use nodelay_tcp::read_tcp_info;
use nodelay_tcp::time::later;
use rustls::ClientConnection;
use socket2::SockRef;
use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Longest the loop sleeps before looking at the stop flag again.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// What one `read()` may take: as much as nginx sends in a burst of small responses, and a
/// few frames of a large one.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A write gathers the session's frames up to about this many bytes.
const WRITE_GATHER_BYTES: usize = 64 * 1024;

/// Whether a read can find anything before the socket's next readiness event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Readiness {
    /// An event came: read on until the socket is empty.
    Readable,
    /// An event reported the peer's FIN (or an error): read until `read()` says so, since a
    /// short read is no proof of an empty socket when a FIN waits behind the data and no
    /// further event will come for it.
    ReadableToEnd,
    /// A read found the socket empty, or (plain TCP, no FIN reported) read less than it
    /// asked for, and no readable event came since. The socket is edge-triggered: every
    /// arrival raises a new event, so a read before one would only return EAGAIN. Writable
    /// events (an ACK freed send space) and the timer pass find this and do not read.
    Drained,
}

/// A connection past its handshakes.
struct Open {
    transport: Transport,
    session: Session,
    /// Serialised frames the socket did not take yet; they go before anything newer.
    unsent: Vec<u8>,
}

// Open is where a connection spends the run; the others are brief, so their unused bytes
// cost less than a box's indirection on every event would.
#[allow(clippy::large_enum_variant)]
enum Link {
    /// No socket; a request slot that falls due opens one.
    Closed,
    Connecting(TcpStream),
    Tls(TcpStream, Box<TlsSession>),
    Open(Open),
}

/// One request slot of a connection.
enum Slot {
    /// Waiting for the pacer (`due`: when to ask again; the run's start: at once).
    Idle { due: Instant },
    /// Claimed and due: waits for the connection to open.
    Due(RequestTiming),
    /// Given to the session (its stream id in the timing), which sends its HEADERS when the
    /// server's stream limit allows; waits for the response's end.
    Sent(RequestTiming),
    /// The quota is spent: this slot sends no more.
    Done,
}

#[derive(Clone, Copy)]
struct RequestTiming {
    intended: Instant,
    began: Instant,
    /// When the request could first have left: it was due and its slot was free. A closed
    /// loop's slot frees when the previous response's last frame arrived (its arrival stamp),
    /// not when this loop got round to it: the record's `turnaround` is the difference.
    sendable: Instant,
    request_index: usize,
    stream_id: u32,
    /// The request waited for this connection to open: its connect and TLS times are its own.
    opened_connection: bool,
}

struct H2Connection {
    slot: u32,
    link: Link,
    /// The link is open (it is taken out of `link` while the loop works on it): a request
    /// claimed now did not wait for a connection.
    established: bool,
    readiness: Readiness,
    fd: RawFd,
    tap: Rc<RefCell<FrameTap>>,
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
    /// Responses held through a pause whose loss is not settled yet, with that unsettled
    /// hold: recorded once the tap's verdict comes.
    awaiting_loss_verdict: Vec<(ResponseRecord, LossHold)>,
}

pub(crate) struct H2Worker<'a, S> {
    config: &'a EngineConfig,
    control: &'a Control,
    thread: usize,
    run_start: Instant,
    run_deadline: Option<Instant>,
    poller: Poller,
    /// How many ready sockets a batched wait holds out for (learnt).
    batch_size: BatchSize,
    /// The clocks read at the last wake-up, to place arrival stamps.
    clocks: ClockPair,
    connections: Vec<H2Connection>,
    requests: Rc<Requests>,
    mix: RequestMix,
    pacer: Pacer,
    exhausted: bool,
    /// No slot's or connection's deadline falls before this (may be early, never late).
    next_timer: Instant,
    /// Where every connection's `read()` lands, one at a time.
    read_buffer: Vec<u8>,
    /// The session's stream events, taken after each read.
    events: Vec<StreamEvent>,
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
                    link: Link::Closed,
                    established: false,
                    readiness: Readiness::Readable,
                    fd: -1,
                    tap: Rc::new(RefCell::new(FrameTap::new())),
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
                    awaiting_loss_verdict: Vec::new(),
                }
            })
            .collect();
        Ok(H2Worker {
            config,
            control,
            thread: plan.thread,
            run_start,
            run_deadline: config.duration.map(|d| later(run_start, d)),
            poller: Poller::epoll()?,
            batch_size: BatchSize::new(),
            clocks: ClockPair::now(),
            connections,
            requests: Requests::new(requests),
            mix,
            pacer: Pacer::new(later(run_start, plan.first_slot_after), plan.rate_per_second, plan.quota),
            exhausted: false,
            next_timer: run_start,
            read_buffer: vec![0; READ_BUFFER_BYTES],
            events: Vec::new(),
            sink,
        })
    }

    pub fn run(mut self) -> io::Result<WorkerOutput<S>> {
        let mut ready = Vec::with_capacity(self.connections.len().min(1024));
        let mut last_event = Instant::now();
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
            let batch = self.batch();
            let busy_poll = self.config.busy_poll;
            self.poller.wait_until(&mut ready, wake, batch, &mut self.batch_size, busy_poll, last_event)?;
            if !ready.is_empty() {
                last_event = Instant::now();
                if self.config.batched_waits {
                    self.clocks = ClockPair::now();
                }
            }
            for event in &ready {
                let readiness = &mut self.connections[event.token].readiness;
                if event.hangup {
                    *readiness = Readiness::ReadableToEnd;
                } else if event.readable && *readiness == Readiness::Drained {
                    *readiness = Readiness::Readable;
                }
                self.drive(event.token);
            }
        }
        let loop_ended = Instant::now();
        for index in 0..self.connections.len() {
            self.close(index, true);
        }
        let end = self.run_deadline.map_or(loop_ended, |deadline| deadline.min(loop_ended));
        Ok(WorkerOutput { sink: self.sink, due_not_sent: self.pacer.overdue(end), loop_ended })
    }

    /// How many ready sockets a wait holds out for, and whether it is the learnt size: as the
    /// HTTP/1.1 loop's (`batch` there), none while a connection opens, shakes hands or has
    /// bytes waiting for room (their times are taken at the wake-up), nor in open loop.
    fn batch(&self) -> (Batch, bool) {
        let settled = || {
            self.connections.iter().all(|c| match &c.link {
                Link::Connecting(_) | Link::Tls(..) => false,
                Link::Open(open) => open.unsent.is_empty(),
                Link::Closed => true,
            })
        };
        let learning = self.config.batched_waits && self.config.rate_per_second.is_none() && settled();
        let open = self.connections.iter().filter(|c| c.established).count();
        let want = if learning { self.batch_size.want((open / BATCH_SHARE).clamp(1, BATCH_MAX)) } else { 1 };
        (Batch { want, min_wait: BATCH_MIN_WAIT }, learning)
    }

    /// Claims slots that are free, opens connections that requests wait for, fails what is
    /// past its deadline; returns when to look again.
    fn fire_timers(&mut self, now: Instant) -> Instant {
        let mut next = now + Duration::from_secs(3600);
        for index in 0..self.connections.len() {
            let deadline = self.connections[index].deadline;
            let opening = matches!(self.connections[index].link, Link::Connecting(_) | Link::Tls(..));
            if opening && now >= deadline {
                let (kind, what) = match self.connections[index].link {
                    Link::Connecting(_) => (ErrorKind::ConnectTimeout, "connect"),
                    _ => (ErrorKind::Tls, "TLS handshake"),
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
                        let freed = *due;
                        self.claim(index, slot, now, freed);
                        claimed = true;
                    }
                    Slot::Idle { due } => next = next.min(*due),
                    Slot::Due(timing) | Slot::Sent(timing) => {
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
            if claimed && matches!(self.connections[index].link, Link::Open(_)) {
                self.drive(index);
            }
        }
        next
    }

    /// The timer pass runs no later than `at`.
    fn wake_at(&mut self, at: Instant) {
        self.next_timer = self.next_timer.min(at);
    }

    /// Asks the pacer for this slot's next request; the slot has been free since `freed`.
    fn claim(&mut self, index: usize, slot: usize, now: Instant, freed: Instant) {
        let open_loop = self.config.rate_per_second.is_some();
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
                // A closed loop wants the next request the moment the slot frees.
                sendable: if open_loop { intended.max(freed) } else { freed.min(now) },
                request_index: self.mix.next(&mut connection.picker),
                stream_id: 0,
                opened_connection: !connection.established,
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
                let (kind, message) =
                    crate::connect::failure(&e, self.config.connections, self.config.threads);
                self.fail_connection(index, kind, message);
            }
        }
    }

    fn start_connect(&mut self, index: usize) -> io::Result<()> {
        // Finished at once or not, the first event on the socket says how it went.
        let (socket, _) = crate::connect::start(self.config.address, self.config.socket.nodelay)?;
        let mut stream = TcpStream::from_std(socket.into());
        // Before the first byte can come: every read of this socket is stamped (io.rs says
        // what for when waits are not batched).
        arrival::enable(stream.as_raw_fd())?;
        self.poller.register(&mut stream, index)?;
        let connection = &mut self.connections[index];
        connection.fd = stream.as_raw_fd();
        connection.link = Link::Connecting(stream);
        Ok(())
    }

    /// Moves the connection on as far as its socket lets it: through as many of connect and
    /// TLS handshake as are ready, then the streams.
    fn drive(&mut self, index: usize) {
        let mut link = std::mem::replace(&mut self.connections[index].link, Link::Closed);
        loop {
            let before = std::mem::discriminant(&link);
            let next = match link {
                Link::Connecting(stream) => self.finish_connect(index, stream),
                Link::Tls(stream, tls) => self.tls_handshake(index, stream, tls),
                Link::Open(open) => return self.exchange(index, open),
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
            Err(e) => return Err(crate::connect::failure(&e, self.config.connections, self.config.threads)),
            Ok(true) => {}
        }
        let now = Instant::now();
        let connection = &mut self.connections[index];
        connection.connect = Some(now - connection.connect_started);
        connection.deadline = later(now, self.config.connect_timeout);
        match &self.config.tls {
            None => {
                self.control.mark_connected();
                self.start_h2(index, stream, None)
            }
            Some(client) => match TlsSession::start(client) {
                Ok(tls) => {
                    connection.tls_started = now;
                    self.tls_handshake(index, stream, Box::new(tls))
                }
                Err(message) => Err((ErrorKind::Tls, message)),
            },
        }
    }

    /// The TLS step both loops take (`tls::handshake`), then HTTP/2's own check: the server
    /// must have chosen h2 by ALPN.
    fn tls_handshake(
        &mut self,
        index: usize,
        mut stream: TcpStream,
        mut tls: Box<TlsSession>,
    ) -> Result<Link, (ErrorKind, String)> {
        if tls.handshake(&mut stream, &mut self.read_buffer)? == Handshake::Waiting {
            return Ok(Link::Tls(stream, tls));
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
        connection.tls_summary = tls.summary();
        connection.tls_resumed = tls.resumed();
        self.start_h2(index, stream, Some(Box::new(tls.into_connection())))
    }

    fn start_h2(
        &mut self,
        index: usize,
        stream: TcpStream,
        tls: Option<Box<ClientConnection>>,
    ) -> Result<Link, (ErrorKind, String)> {
        let settings = self.config.http2.expect("an HTTP/2 run");
        let connection = &self.connections[index];
        let want_server = connection.server_header.is_none() && !connection.server_reported;
        let session =
            Session::client(&settings, Rc::clone(&self.requests), connection.slots.len(), want_server)
                .map_err(|message| (ErrorKind::Other, message))?;
        let quickack = self.config.socket.quickack_after_read;
        let transport =
            Transport::new(stream, tls, Rc::clone(&connection.tap), quickack, self.config.batched_waits);
        self.connections[index].established = true;
        self.connections[index].readiness = Readiness::Readable;
        // The session's first write carries the preface and our SETTINGS.
        Ok(Link::Open(Open { transport, session, unsent: Vec::new() }))
    }

    /// After an event on an open connection: reads the socket dry into the session, settles
    /// the streams that ended, gives the session the requests now due and writes what it has.
    fn exchange(&mut self, index: usize, mut open: Open) {
        let outcome = self.exchange_io(index, &mut open);
        let session = &open.session;
        let (over, goaway, sent_goaway) = (session.is_over(), session.goaway(), session.sent_goaway());
        // Back in place before any closing, so that the record reads TCP_INFO while the
        // socket is still open.
        self.connections[index].link = Link::Open(open);
        let failure = match outcome {
            // A close is said as what came before it: a GOAWAY, or bytes that broke the protocol.
            Err((ErrorKind::ClosedEarly, _)) => ended(goaway, sent_goaway),
            Err(failure) => failure,
            Ok(()) if !over => return,
            // A GOAWAY without error, its streams done: what was due goes on a new connection.
            Ok(()) if goaway == Some(0) => return self.reopen_later(index),
            Ok(()) => ended(goaway, sent_goaway),
        };
        // A server that answered in something else than HTTP/2 is said to, however its
        // connection ended.
        let (kind, message) = self.not_http2(index).unwrap_or(failure);
        self.fail_connection(index, kind, message);
    }

    fn exchange_io(&mut self, index: usize, open: &mut Open) -> Result<(), (ErrorKind, String)> {
        self.write_out(open)?;
        let read_end = loop {
            let readiness = self.connections[index].readiness;
            if readiness == Readiness::Drained {
                break None;
            }
            match open.transport.read(&mut self.read_buffer, &mut self.clocks) {
                Ok(0) => {
                    break Some((
                        ErrorKind::ClosedEarly,
                        "the server closed the HTTP/2 connection".to_string(),
                    ));
                }
                Ok(n) => {
                    // Over TLS a short read says nothing of the socket: rustls reads by record.
                    if n < self.read_buffer.len()
                        && readiness == Readiness::Readable
                        && !open.transport.is_tls()
                    {
                        self.connections[index].readiness = Readiness::Drained;
                    }
                    if let Err(e) = open.session.receive(&self.read_buffer[..n]) {
                        break Some((ErrorKind::MalformedResponse, format!("HTTP/2: {e}")));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.connections[index].readiness = Readiness::Drained;
                    break None;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some((ErrorKind::from_io(&e, false), format!("HTTP/2: {e}"))),
            }
        };
        // Streams that ended before the socket did are complete all the same.
        self.settle(index, &mut open.session);
        if let Some(failure) = read_end {
            return Err(failure);
        }
        self.submit_due(index, &mut open.session);
        self.write_out(open)
    }

    /// Completes or fails every slot whose stream the session reported on.
    fn settle(&mut self, index: usize, session: &mut Session) {
        let verdict = self.connections[index].tap.borrow_mut().take_loss_verdict();
        if let Some(lost) = verdict {
            self.record_awaiting_loss_verdict(index, lost);
        }
        let mut events = std::mem::take(&mut self.events);
        session.take_events(&mut events);
        if let Some(server) = session.take_server_header() {
            self.connections[index].server_header.get_or_insert(server);
        }
        for event in &events {
            match *event {
                StreamEvent::Ended { slot } => {
                    if let Slot::Sent(timing) = self.connections[index].slots[slot] {
                        let ended = self.complete(index, timing, session.progress(slot));
                        self.connections[index].slots[slot] = Slot::Idle { due: self.run_start };
                        self.claim(index, slot, Instant::now(), ended);
                    }
                }
                StreamEvent::Failed { slot, error_code } => {
                    let message =
                        format!("HTTP/2: the server reset the stream ({})", error_code_name(error_code));
                    self.fail_stream(index, slot, ErrorKind::Reset, message);
                }
                // It waits for the next connection, which the GOAWAY's end will open.
                StreamEvent::Unprocessed { slot } => {
                    if let Slot::Sent(timing) = self.connections[index].slots[slot] {
                        // Its HEADERS may have left: the tap forgets the stream.
                        self.connections[index].tap.borrow_mut().forget(timing.stream_id);
                        let timing = RequestTiming { stream_id: 0, opened_connection: true, ..timing };
                        self.connections[index].slots[slot] = Slot::Due(timing);
                    }
                }
            }
        }
        self.events = events;
    }

    /// Gives the session every request that is due, until it takes no new streams.
    fn submit_due(&mut self, index: usize, session: &mut Session) {
        for slot in 0..self.connections[index].slots.len() {
            let Slot::Due(timing) = self.connections[index].slots[slot] else { continue };
            match session.submit(slot, timing.request_index) {
                Ok(stream_id) => {
                    self.connections[index].slots[slot] = Slot::Sent(RequestTiming { stream_id, ..timing });
                }
                // After a GOAWAY: the request waits for the next connection.
                Err(SubmitError::NoNewStreams) => break,
                Err(SubmitError::Other(message)) => self.fail_stream(index, slot, ErrorKind::Other, message),
            }
        }
    }

    /// Writes what was left over and then what the session has, gathered, until the socket
    /// is full or all is out.
    fn write_out(&mut self, open: &mut Open) -> Result<(), (ErrorKind, String)> {
        let failed = |e: io::Error| (ErrorKind::from_io(&e, false), format!("HTTP/2: write: {e}"));
        match open.transport.flush_tls() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(failed(e)),
            Ok(()) => {}
        }
        loop {
            if open.unsent.is_empty() {
                open.session
                    .take_output(&mut open.unsent, WRITE_GATHER_BYTES)
                    .map_err(|e| (ErrorKind::Other, format!("HTTP/2: {e}")))?;
                if open.unsent.is_empty() {
                    return Ok(());
                }
            }
            match open.transport.write(&open.unsent) {
                Ok(n) => {
                    open.unsent.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
            }
        }
    }

    /// The server ended the connection cleanly: it closes, and the requests due open another.
    fn reopen_later(&mut self, index: usize) {
        self.close(index, false);
        self.next_timer = Instant::now();
    }

    /// Records the stream's response; returns when the frame that ended it reached this
    /// machine.
    fn complete(&mut self, index: usize, timing: RequestTiming, response: Progress) -> Instant {
        let connection = &mut self.connections[index];
        let frames = connection.tap.borrow_mut().take_finished(timing.stream_id);
        let now = Instant::now();
        let since = |at: Option<Instant>| at.map(|at| at.saturating_duration_since(timing.intended));
        let last = frames.and_then(|f| f.last_frame).unwrap_or(now);
        let ended = frames.and_then(|f| f.ended_arrived).unwrap_or(last);
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
            // Frames, not reads: the tail of one stream says nothing of the segments.
            last_read_gap: Duration::ZERO,
            last_read_bytes: 0,
            paused: frames.map_or(Duration::ZERO, |f| f.paused),
            pauses: frames.map_or(0, |f| f.pauses),
            response_bytes: response.body_bytes,
            status: response.status,
            http2: Some(StreamRecord {
                stream_id: timing.stream_id,
                queued: since(frames.and_then(|f| f.headers_sent)).unwrap_or_default(),
                turnaround: timing.intended.saturating_duration_since(timing.sendable),
                first_data: since(frames.and_then(|f| f.first_data)),
                window_blocked: frames.map_or(Duration::ZERO, |f| f.window_blocked),
                grpc_status: response.grpc_status,
                loss_held: frames.map_or(Duration::ZERO, |f| f.loss_held.all),
                loss_held_before_headers: frames.map_or(Duration::ZERO, |f| f.loss_held.before_headers),
                send_window_blocked: frames.map_or(Duration::ZERO, |f| f.send_window_blocked),
            }),
        };
        connection.responses += 1;
        self.control.add_completed(self.thread);
        match frames {
            Some(f) if f.unsettled_loss_held.all > Duration::ZERO => {
                connection.awaiting_loss_verdict.push((record, f.unsettled_loss_held))
            }
            _ => self.sink.response(&record),
        }
        ended
    }

    /// Records the responses that waited for the tap's verdict on a pause: with its hold
    /// if a segment was `lost`, without it if the segments were only late.
    fn record_awaiting_loss_verdict(&mut self, index: usize, lost: bool) {
        for (mut record, held) in self.connections[index].awaiting_loss_verdict.drain(..) {
            if let Some(stream) = record.http2.as_mut().filter(|_| lost) {
                stream.loss_held += held.all;
                stream.loss_held_before_headers += held.before_headers;
            }
            self.sink.response(&record);
        }
    }

    /// One request failed; its stream is reset (when the session still holds it) and its slot asks again.
    fn fail_stream(&mut self, index: usize, slot: usize, kind: ErrorKind, message: String) {
        let now = Instant::now();
        self.next_timer = self.next_timer.min(now);
        let connection = &mut self.connections[index];
        let state = std::mem::replace(&mut connection.slots[slot], Slot::Idle { due: now });
        let timing = match state {
            Slot::Due(timing) | Slot::Sent(timing) => timing,
            other => {
                connection.slots[slot] = other;
                return;
            }
        };
        if timing.stream_id != 0 {
            connection.tap.borrow_mut().forget(timing.stream_id);
            // A stream given up on (a timeout) is reset; one the server ended is gone already.
            if let Link::Open(open) = &mut connection.link {
                open.session.cancel(timing.stream_id);
            }
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
    /// The requests it carried fail with it. So do those waiting for it to open, unless it
    /// had opened: a request it never sent waits for the next connection.
    fn fail_connection(&mut self, index: usize, kind: ErrorKind, message: String) {
        // A connection that never answered counts as a failed connect (the run stops when
        // every connect fails).
        let opening = self.connections[index].responses == 0;
        if opening && !matches!(kind, ErrorKind::OutOfFiles | ErrorKind::PortsExhausted) {
            self.control.connect_failed(message.strip_prefix("connect: ").unwrap_or(&message));
        }
        let established = self.connections[index].established;
        for slot in 0..self.connections[index].slots.len() {
            let failing = match self.connections[index].slots[slot] {
                Slot::Sent(_) => true,
                Slot::Due(_) => !established,
                _ => false,
            };
            if failing {
                self.fail_stream(index, slot, kind, message.clone());
            }
        }
        self.close(index, false);
        // Every failed slot claims again at the next timer pass, and the next pass reopens
        // the connection for them and for the requests that waited.
        self.next_timer = Instant::now();
    }

    /// Closes the socket, recording the connection. `at_run_end`: streams in flight are
    /// abandoned, not failed.
    fn close(&mut self, index: usize, at_run_end: bool) {
        let connection = &mut self.connections[index];
        let link = std::mem::replace(&mut connection.link, Link::Closed);
        if connection.fd < 0 {
            return;
        }
        let in_flight = connection.slots.iter().filter(|s| matches!(s, Slot::Sent(_))).count() as u32;
        let unsent = connection
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Sent(t) if !connection.tap.borrow().headers_left(t.stream_id)))
            .count() as u64;
        if at_run_end && in_flight > 0 {
            // As the HTTP/1.1 worker: reset, so the server is left nothing to retransmit.
            // SAFETY: `fd` is the connection's open socket (checked above), closed only below.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(connection.fd) };
            let _ = SockRef::from(&fd).set_linger(Some(Duration::ZERO));
        }
        // The verdict on a pause still unsettled, from the counters as they stand now.
        let unsettled = connection.tap.borrow().losses_unsettled();
        if unsettled && let Some(counters) = nodelay_tcp::read_loss_counters(&connection.fd) {
            connection.tap.borrow_mut().settle_losses(counters);
        }
        let verdict = connection.tap.borrow_mut().take_loss_verdict();
        // Without counters (no verdict) the hold stands, as a loss, as it was read.
        self.record_awaiting_loss_verdict(index, verdict.unwrap_or(true));
        let connection = &mut self.connections[index];
        let record = ConnectionRecord {
            connection: connection.slot,
            requests: u64::from(connection.responses),
            abandoned_requests: if at_run_end { in_flight } else { 0 },
            // The TCP handshake's own end sets `connect` (TLS and SETTINGS come after it).
            connect_unanswered_for: (at_run_end && connection.connect.is_none())
                .then(|| connection.connect_started.elapsed()),
            tcp_info: read_tcp_info(&connection.fd),
            server_header: if connection.server_reported { None } else { connection.server_header.take() },
            tls: connection.tls_summary.take(),
            http2: Some(crate::record::Http2Connection {
                streams_unsent_at_end: if at_run_end { unsent } else { 0 },
                ..connection.tap.borrow().figures
            }),
        };
        connection.server_reported |= record.server_header.is_some();
        connection.responses = 0;
        connection.fd = -1;
        connection.established = false;
        // Dropping the link closes the socket (after the record read its TCP_INFO).
        drop(link);
        for slot in &mut connection.slots {
            if let Slot::Due(timing) | Slot::Sent(timing) = slot {
                *slot = Slot::Due(RequestTiming { opened_connection: true, stream_id: 0, ..*timing });
            }
        }
        self.sink.connection(&record);
    }
}

impl<S> H2Worker<'_, S> {
    /// When the server's first bytes were not HTTP/2 (an HTTP/1.1 status line, say), the
    /// kind and words that say so, instead of the frame error the library made of them.
    fn not_http2(&self, index: usize) -> Option<(ErrorKind, String)> {
        let tap = self.connections[index].tap.borrow();
        let first_bytes = tap.not_http2.as_ref()?;
        let message = format!(
            "the server did not answer in HTTP/2 (it began \"{first_bytes}\"): it does not speak h2c \
             (prior knowledge) on this port; drop {H2} and {Grpc}"
        );
        Some((ErrorKind::MalformedResponse, message))
    }
}

/// Why a connection ended: the server's GOAWAY, ours after the server broke the protocol, or
/// neither (it closed).
fn ended(goaway: Option<u32>, sent_goaway: Option<u32>) -> (ErrorKind, String) {
    match (goaway, sent_goaway) {
        (Some(code), _) => {
            (ErrorKind::Reset, format!("HTTP/2: the server sent GOAWAY ({})", error_code_name(code)))
        }
        (None, Some(code)) => (
            ErrorKind::MalformedResponse,
            format!(
                "HTTP/2: the server broke the protocol, and nodelay ended the connection (GOAWAY {})",
                error_code_name(code)
            ),
        ),
        (None, None) => (ErrorKind::ClosedEarly, "the server closed the HTTP/2 connection".to_string()),
    }
}
