//! One thread's event loop: owns its connections, drives each through
//! connect → write → read → record, and hands records to its sink.
//!
//! Timestamps are taken at the syscall boundaries: when a request is due (or its connect
//! starts), and right after every `read()` that returned data; under `--io-uring`, whose waits
//! may hold a response in its socket, a read is timed by the kernel's arrival stamp instead
//! (arrival.rs). Nothing here allocates per request; the only per-request syscalls are the
//! write(s) and the read(s).
//!
//! Over TLS the same loop does the socket calls and rustls only turns bytes into bytes: a
//! read is timed when it returns, and counts for the response when its ciphertext completed
//! some plaintext (a record), so a pause between two TLS records is a read gap as it would
//! be between two plain writes.

use crate::arrival::{self, ClockPair};
use crate::config::EngineConfig;
use crate::control::Control;
use crate::pacer::{Claim, Pacer};
use crate::poller::{Batch, BatchSize, Poller, Readiness};
use crate::record::{ConnectionRecord, ErrorKind, ErrorRecord, PAUSE_MIN, ResponseRecord};
use crate::select::{RequestMix, RequestPicker};
use crate::sink::RecordSink;
use crate::tls::{Handshake, TlsSession, looks_like_tls_record};
use mio::net::TcpStream;
use nodelay_tcp::time::later;
use nodelay_tcp::{read_tcp_info, set_quickack};
use nodelay_wire::{Feed, ResponseFramer};
use socket2::SockRef;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Responses are discarded after framing, so one buffer serves every connection. Its size
/// decides how many `read()`s a large response takes (`read_chunks`, read gaps), so it is
/// the same at any thread count. Fresh zeroed memory, its pages become resident only as
/// reads fill them: with glibc, ~13 KiB of it per thread while responses are small.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Longest the loop sleeps before looking at the stop flag again.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);
/// Batched waits: a wait holds out for responses on at most this share of the open connections
/// (half; `BatchSize` learns how many come)...
pub(crate) const BATCH_SHARE: usize = 2;
/// The fewest connections on a thread for which a batched wait holds out for two or more
/// responses: with fewer, batching would only change the clock responses are timed by.
pub const CONNECTIONS_TO_BATCH: usize = 2 * BATCH_SHARE;
pub(crate) const BATCH_MAX: usize = 64;
/// At the start, connections opened between two looks at what completed.
const OPENS_PER_LOOK: usize = 64;
/// ...but once this has passed since the wait began, one will do. The times are the kernel's
/// arrival stamps, so a hold delays only the next request; with many connections the server
/// has the others queued meanwhile. Against nginx on one core at -c 50 (bench/vs_wrk.py's
/// setting) 200 µs saved less CPU than this.
pub(crate) const BATCH_MIN_WAIT: Duration = Duration::from_micros(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Open or not, waiting for the pacer's next slot (`deadline` is when it is due).
    Waiting,
    Connecting,
    /// TCP is up; the TLS handshake is under way.
    Handshaking,
    Writing,
    Reading,
    /// No more requests for this connection.
    Finished,
}

impl Phase {
    /// Opening the connection or writing the request: what a batched wait would delay.
    fn is_sending(self) -> bool {
        matches!(self, Phase::Connecting | Phase::Handshaking | Phase::Writing)
    }
}

struct Connection {
    slot: u32,
    stream: Option<TcpStream>,
    /// The TLS session of `stream`, for https.
    tls: Option<Box<TlsSession>>,
    phase: Phase,
    parser: ResponseFramer,
    picker: RequestPicker,
    /// Index of the request in flight (or last sent).
    request_index: usize,
    responses_on_stream: u32,
    /// The slot's `Server` header went out in a ConnectionRecord already: it is sent once,
    /// not copied at every close (a new connection per request would allocate each time).
    server_reported: bool,
    /// Timeout or due time of the current phase.
    deadline: Instant,
    request: RequestTiming,
}

/// What is measured of the request in flight.
#[derive(Clone, Copy)]
struct RequestTiming {
    intended_start: Instant,
    /// When the client got to it: at or after `intended_start`.
    began: Instant,
    connect_started: Option<Instant>,
    connect: Option<Duration>,
    /// When the TCP handshake completed and the TLS one began.
    tls_started: Option<Instant>,
    tls_handshake: Option<Duration>,
    tls_resumed: bool,
    bytes_written: usize,
    first_read: Option<Instant>,
    last_read: Instant,
    read_chunks: u32,
    max_read_gap: Duration,
    bytes_before_max_gap: u64,
    last_read_gap: Duration,
    last_read_bytes: u64,
    paused: Duration,
    pauses: u32,
    response_bytes: u64,
}

impl RequestTiming {
    fn new(intended_start: Instant, began: Instant) -> Self {
        RequestTiming {
            intended_start,
            began,
            connect_started: None,
            connect: None,
            tls_started: None,
            tls_handshake: None,
            tls_resumed: false,
            bytes_written: 0,
            first_read: None,
            last_read: intended_start,
            read_chunks: 0,
            max_read_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
            last_read_gap: Duration::ZERO,
            last_read_bytes: 0,
            paused: Duration::ZERO,
            pauses: 0,
            response_bytes: 0,
        }
    }

    fn on_read(&mut self, now: Instant, bytes: usize) {
        if self.first_read.is_none() {
            self.first_read = Some(now);
        } else {
            let gap = now - self.last_read;
            if gap > self.max_read_gap {
                self.max_read_gap = gap;
                self.bytes_before_max_gap = self.response_bytes;
            }
            if gap >= PAUSE_MIN {
                self.paused += gap;
                self.pauses += 1;
            }
            self.last_read_gap = gap;
        }
        self.last_read_bytes = bytes as u64;
        self.last_read = now;
        self.read_chunks += 1;
        self.response_bytes += bytes as u64;
    }
}

/// The part of the run one thread owns.
pub(crate) struct WorkerPlan {
    pub thread: usize,
    pub first_slot: usize,
    pub connections: usize,
    pub quota: Option<u64>,
    pub rate_per_second: Option<f64>,
    /// Open loop: when this thread's first slot falls after the run's start.
    pub first_slot_after: Duration,
}

/// What a thread hands back when its loop ends.
pub(crate) struct WorkerOutput<S> {
    pub sink: S,
    /// Open loop: requests that fell due and were never sent, every connection being busy.
    pub due_not_sent: u64,
    /// When the loop stopped, before its connections were closed: the run's time ends here.
    pub loop_ended: Instant,
}

enum ReadOutcome {
    /// Nothing more to do until the next event.
    Pending,
    Complete,
    Failed(ErrorKind, String),
}

pub(crate) struct Worker<'a, S> {
    config: &'a EngineConfig,
    control: &'a Control,
    thread: usize,
    run_start: Instant,
    run_deadline: Option<Instant>,
    poller: Poller,
    /// The clocks read at the last wake-up, to place arrival stamps.
    clocks: ClockPair,
    connections: Vec<Connection>,
    /// Per request kind, where each of its writes ends.
    write_ends: Vec<Vec<usize>>,
    mix: RequestMix,
    pacer: Pacer,
    active: usize,
    /// Connections whose phase `is_sending`: their connect, handshake or write times are taken
    /// when the loop wakes, so no wait holds out for more while there are any.
    sending: usize,
    batch_size: BatchSize,
    /// No phase deadline falls before this (may be early, never late).
    next_timer: Instant,
    /// Connections the opening ramp has not started yet (0 once it is over)...
    unstarted: usize,
    /// ...and those whose next request waits for its end (see `complete`).
    after_ramp: Vec<usize>,
    read_buffer: Box<[u8]>,
    /// Plaintext of one read's ciphertext (TLS only; empty otherwise).
    plain_buffer: Box<[u8]>,
    sink: S,
}

impl<'a, S: RecordSink> Worker<'a, S> {
    pub fn new(
        config: &'a EngineConfig,
        control: &'a Control,
        plan: WorkerPlan,
        run_start: Instant,
        sink: S,
    ) -> io::Result<Self> {
        let mix = RequestMix::new(&config.selection, config.requests.len());
        let connections = (0..plan.connections)
            .map(|index| {
                let slot = (plan.first_slot + index) as u32;
                Connection {
                    slot,
                    stream: None,
                    tls: None,
                    phase: Phase::Waiting,
                    parser: ResponseFramer::new(&config.framing),
                    picker: mix.picker(slot),
                    request_index: 0,
                    responses_on_stream: 0,
                    server_reported: false,
                    deadline: run_start,
                    request: RequestTiming::new(run_start, run_start),
                }
            })
            .collect();
        Ok(Worker {
            config,
            control,
            thread: plan.thread,
            run_start,
            run_deadline: config.duration.map(|d| later(run_start, d)),
            poller: if config.io_uring { Poller::uring(plan.connections)? } else { Poller::epoll()? },
            clocks: ClockPair::now(),
            connections,
            write_ends: config.requests.iter().map(|r| r.write_ends()).collect(),
            mix,
            pacer: Pacer::new(later(run_start, plan.first_slot_after), plan.rate_per_second, plan.quota),
            active: plan.connections,
            sending: 0,
            batch_size: BatchSize::new(),
            next_timer: run_start,
            unstarted: 0,
            after_ramp: Vec::new(),
            read_buffer: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            plain_buffer: vec![0; if config.tls.is_some() { READ_BUFFER_BYTES } else { 0 }]
                .into_boxed_slice(),
            sink,
        })
    }

    /// Runs until the quota is spent, the duration is over or the caller stops it.
    pub fn run(mut self) -> io::Result<WorkerOutput<S>> {
        // Grows to what a wait returns: at most a readiness per connection, mostly.
        let mut ready: Vec<Readiness> = Vec::with_capacity(self.connections.len().min(1024));
        let mut last_event = Instant::now();
        self.unstarted = self.connections.len();
        for index in 0..self.connections.len() {
            self.unstarted -= 1;
            self.next_request(index, Instant::now());
            // Thousands of connects take a while to issue: look at what completed meanwhile, so
            // that a connect is timed from its own SYN to its own completion, not to the end of
            // the ramp (1000 on one thread, debug build: a p50 of 39 ms, the ramp's, against
            // 2 ms; crates/cli/tests/suite/memory.rs).
            if index % OPENS_PER_LOOK == OPENS_PER_LOOK - 1 {
                self.poller.wait(&mut ready, Duration::ZERO, Batch { want: 1, min_wait: Duration::ZERO })?;
                self.handle(&ready);
            }
        }
        for index in std::mem::take(&mut self.after_ramp) {
            self.next_request(index, Instant::now());
        }
        while self.active > 0 && !self.control.is_stopped() {
            let mut now = Instant::now();
            if self.run_deadline.is_some_and(|deadline| now >= deadline) {
                break;
            }
            if now >= self.next_timer {
                // Then poll (without blocking if more is due): connections that keep failing
                // at once must not starve the others' events.
                self.fire_timers(now);
                now = Instant::now();
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
            }
            self.handle(&ready);
        }
        let loop_ended = Instant::now();
        for index in 0..self.connections.len() {
            self.close_stream_at(index, true);
        }
        // Best effort: the run's figures are in; an unflushed cancel only leaves its socket
        // to the ring's own teardown a moment later.
        let _ = self.poller.flush();
        let end = self.run_deadline.map_or(loop_ended, |deadline| deadline.min(loop_ended));
        Ok(WorkerOutput { sink: self.sink, due_not_sent: self.pacer.overdue(end), loop_ended })
    }

    /// Handles what a wait found ready.
    fn handle(&mut self, ready: &[Readiness]) {
        if self.stamped() {
            self.clocks = ClockPair::now();
        }
        for event in ready {
            self.on_event(event.token, event.readable, event.writable);
        }
    }

    /// How many ready sockets a wait holds out for, and whether it is the learnt size: open
    /// loop sends on the pacer's clock and waits for none, nor does a loop that is opening
    /// connections or has a write waiting for room (those times are taken at the wake-up, not
    /// stamped); otherwise what `BatchSize` learnt, up to a share of the connections. Unbatched
    /// loops (not `stamped`) hold out for none.
    fn batch(&self) -> (Batch, bool) {
        let learning = self.stamped() && self.config.rate_per_second.is_none() && self.sending == 0;
        let want =
            if learning { self.batch_size.want((self.active / BATCH_SHARE).clamp(1, BATCH_MAX)) } else { 1 };
        (Batch { want, min_wait: BATCH_MIN_WAIT }, learning)
    }

    /// Reads take the kernel's arrival stamps: batched waits (io_uring's, or epoll's) would
    /// otherwise add up to `BATCH_MIN_WAIT` to a response's time.
    fn stamped(&self) -> bool {
        self.config.io_uring || self.config.batched_waits
    }

    fn on_event(&mut self, index: usize, readable: bool, writable: bool) {
        match self.connections[index].phase {
            Phase::Connecting if writable || readable => self.finish_connect(index),
            Phase::Handshaking => self.drive_handshake(index),
            Phase::Writing => {
                if writable {
                    self.write_request(index);
                }
                // A server may answer (or close) before the whole request is in.
                if readable && self.connections[index].phase == Phase::Writing {
                    self.read_response(index);
                }
            }
            Phase::Reading if readable => self.read_response(index),
            Phase::Waiting if readable => self.check_idle_stream(index),
            _ => {}
        }
    }

    /// Takes the next slot from the pacer and starts, schedules or ends this connection.
    fn next_request(&mut self, index: usize, now: Instant) {
        match self.pacer.claim(now) {
            Claim::Exhausted => {
                self.close_stream(index);
                let deadline = self.connections[index].deadline;
                self.set_phase(index, Phase::Finished, deadline);
                self.active -= 1;
            }
            Claim::At(due) => self.set_phase(index, Phase::Waiting, due),
            Claim::Now(intended) => {
                let connection = &mut self.connections[index];
                connection.request = RequestTiming::new(intended, now);
                connection.request_index = self.mix.next(&mut connection.picker);
                let spec = &self.config.requests[connection.request_index];
                connection.parser.reset(spec.expects_no_body);
                if connection.stream.is_some() {
                    self.set_phase(index, Phase::Writing, later(now, self.config.timeout));
                    self.write_request(index);
                } else {
                    self.open(index, now);
                }
            }
        }
    }

    fn set_phase(&mut self, index: usize, phase: Phase, deadline: Instant) {
        let connection = &mut self.connections[index];
        self.sending =
            self.sending + usize::from(phase.is_sending()) - usize::from(connection.phase.is_sending());
        connection.phase = phase;
        connection.deadline = deadline;
        self.next_timer = self.next_timer.min(deadline);
    }

    fn open(&mut self, index: usize, now: Instant) {
        self.connections[index].request.connect_started = Some(now);
        self.set_phase(index, Phase::Connecting, later(now, self.config.connect_timeout));
        match self.start_connect(index) {
            Ok(true) => self.on_connected(index),
            Ok(false) => {}
            Err(e) => {
                let (kind, message) =
                    crate::connect::failure(&e, self.config.connections, self.config.threads);
                self.fail(index, kind, message);
            }
        }
    }

    /// Starts a non-blocking connect; `Ok(true)` if it completed at once.
    fn start_connect(&mut self, index: usize) -> io::Result<bool> {
        let (socket, connected) = crate::connect::start(self.config.address, self.config.socket.nodelay)?;
        if self.stamped() {
            arrival::enable(socket.as_raw_fd())?;
        }
        let mut stream = TcpStream::from_std(socket.into());
        self.poller.register(&mut stream, index)?;
        self.connections[index].stream = Some(stream);
        Ok(connected)
    }

    fn finish_connect(&mut self, index: usize) {
        let Some(stream) = &self.connections[index].stream else { return };
        let result = crate::connect::outcome(stream);
        match result {
            Ok(true) => self.on_connected(index),
            Ok(false) => {}
            Err(e) => {
                let (kind, message) =
                    crate::connect::failure(&e, self.config.connections, self.config.threads);
                self.fail(index, kind, message);
            }
        }
    }

    fn on_connected(&mut self, index: usize) {
        let now = Instant::now();
        let timing = &mut self.connections[index].request;
        timing.connect = timing.connect_started.map(|started| now - started);
        let Some(client) = &self.config.tls else {
            self.control.mark_connected();
            self.set_phase(index, Phase::Writing, later(now, self.config.timeout));
            return self.write_request(index);
        };
        match TlsSession::start(client) {
            Ok(session) => {
                let connection = &mut self.connections[index];
                connection.tls = Some(Box::new(session));
                connection.request.tls_started = Some(now);
                // The TLS handshake is part of opening the connection, as in curl.
                self.set_phase(index, Phase::Handshaking, later(now, self.config.connect_timeout));
                self.drive_handshake(index);
            }
            Err(message) => self.fail(index, ErrorKind::Tls, message),
        }
    }

    /// Moves the handshake on as far as the socket lets it (the one TLS step both loops
    /// take: `tls::handshake`).
    fn drive_handshake(&mut self, index: usize) {
        let connection = &mut self.connections[index];
        let (Some(stream), Some(tls)) = (&mut connection.stream, &mut connection.tls) else { return };
        match tls.handshake(stream, &mut self.read_buffer) {
            Ok(Handshake::Done) => self.on_handshaken(index),
            Ok(Handshake::Waiting) => {}
            Err((kind, message)) => self.fail(index, kind, message),
        }
    }

    fn on_handshaken(&mut self, index: usize) {
        self.control.mark_connected();
        let now = Instant::now();
        let connection = &mut self.connections[index];
        let timing = &mut connection.request;
        timing.tls_handshake = timing.tls_started.map(|started| now - started);
        timing.tls_resumed = connection.tls.as_ref().is_some_and(|tls| tls.resumed());
        self.set_phase(index, Phase::Writing, later(now, self.config.timeout));
        self.write_request(index);
    }

    /// Writes the request, one `write()` per piece of the configured split.
    fn write_request(&mut self, index: usize) {
        let connection = &mut self.connections[index];
        let request = &self.config.requests[connection.request_index].bytes;
        let write_ends = &self.write_ends[connection.request_index];
        let Some(stream) = &mut connection.stream else { return };
        loop {
            if let Some(tls) = &mut connection.tls {
                // Each piece goes out before the next is queued: pieces stay separate writes.
                match tls.flush(stream) {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        let kind = ErrorKind::from_io(&e, false);
                        return self.fail(index, kind, format!("write: {e}"));
                    }
                }
            }
            let written = connection.request.bytes_written;
            if written == request.len() {
                if connection.phase.is_sending() {
                    self.sending -= 1;
                }
                connection.phase = Phase::Reading;
                return;
            }
            let piece_end = write_ends.iter().copied().find(|&end| end > written).unwrap_or(request.len());
            let piece = &request[written..piece_end];
            let result = match &mut connection.tls {
                Some(tls) => tls.queue(piece),
                None => stream.write(piece),
            };
            match result {
                Ok(n) => connection.request.bytes_written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = ErrorKind::from_io(&e, false);
                    return self.fail(index, kind, format!("write: {e}"));
                }
            }
        }
    }

    fn read_response(&mut self, index: usize) {
        match self.read_until_blocked(index) {
            ReadOutcome::Pending => {}
            ReadOutcome::Complete => self.complete(index),
            ReadOutcome::Failed(kind, message) => self.fail(index, kind, message),
        }
    }

    fn read_until_blocked(&mut self, index: usize) -> ReadOutcome {
        let quickack = self.config.socket.quickack_after_read;
        let stamped = self.stamped();
        let clocks = &mut self.clocks;
        let connection = &mut self.connections[index];
        let Some(stream) = &mut connection.stream else { return ReadOutcome::Pending };
        loop {
            let read = if stamped {
                arrival::read_stamped(stream.as_raw_fd(), &mut self.read_buffer)
            } else {
                stream.read(&mut self.read_buffer).map(|n| (n, None))
            };
            match read {
                Ok((0, _)) => return finish_at_close(&mut connection.parser),
                Ok((n, stamp)) => {
                    // The arrival, never before the request went out (a clock step between).
                    let now = stamp
                        .map_or_else(Instant::now, |stamp| clocks.place(stamp).max(connection.request.began));
                    if quickack {
                        // Best effort: a failure only weakens the experiment, never the data.
                        let _ = set_quickack(stream);
                    }
                    let (data, closed) = match &mut connection.tls {
                        None => (&self.read_buffer[..n], false),
                        Some(tls) => match tls.receive(&self.read_buffer[..n], &mut self.plain_buffer) {
                            Ok(feed) => (&self.plain_buffer[..feed.plain_bytes], feed.closed),
                            Err(message) => return ReadOutcome::Failed(ErrorKind::Tls, message),
                        },
                    };
                    if data.is_empty() {
                        // Ciphertext that completed no record (or a session ticket).
                        if closed {
                            return finish_at_close(&mut connection.parser);
                        }
                        continue;
                    }
                    let first_data = connection.request.first_read.is_none();
                    connection.request.on_read(now, data.len());
                    match connection.parser.feed(data) {
                        Ok(Feed::Complete { used }) if used == data.len() => return ReadOutcome::Complete,
                        Ok(Feed::Complete { used }) => {
                            let extra = data.len() - used;
                            let message = format!("{extra} bytes after the end of the response");
                            return ReadOutcome::Failed(ErrorKind::MalformedResponse, message);
                        }
                        Ok(Feed::Partial) if closed => return finish_at_close(&mut connection.parser),
                        Ok(Feed::Partial) => {}
                        Err(e) if first_data && connection.tls.is_none() && looks_like_tls_record(data) => {
                            let message = format!(
                                "the server answered in TLS, not plain HTTP: use an https:// URL ({e})"
                            );
                            return ReadOutcome::Failed(ErrorKind::MalformedResponse, message);
                        }
                        Err(e) => return ReadOutcome::Failed(ErrorKind::MalformedResponse, e.to_string()),
                    }
                    // Incomplete: read on until WouldBlock. A short read is no proof the socket
                    // is drained, because a FIN queued behind the data raises no new event.
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadOutcome::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return ReadOutcome::Failed(ErrorKind::from_io(&e, false), format!("read: {e}")),
            }
        }
    }

    fn complete(&mut self, index: usize) {
        let connection = &mut self.connections[index];
        let timing = connection.request;
        let first_read = timing.first_read.unwrap_or(timing.last_read);
        let record = ResponseRecord {
            connection: connection.slot,
            request: connection.request_index as u16,
            sequence_on_connection: connection.responses_on_stream,
            start_offset: timing.intended_start.saturating_duration_since(self.run_start),
            connect: timing.connect,
            tls_handshake: timing.tls_handshake,
            tls_resumed: timing.tls_resumed,
            first_byte: first_read.saturating_duration_since(timing.intended_start),
            total: timing.last_read.saturating_duration_since(timing.intended_start),
            total_uncorrected: timing.last_read.saturating_duration_since(timing.began),
            read_chunks: timing.read_chunks,
            max_read_gap: timing.max_read_gap,
            bytes_before_max_gap: timing.bytes_before_max_gap,
            last_read_gap: timing.last_read_gap,
            last_read_bytes: timing.last_read_bytes,
            paused: timing.paused,
            pauses: timing.pauses,
            response_bytes: timing.response_bytes,
            status: connection.parser.status(),
            http2: None,
        };
        connection.responses_on_stream += 1;
        let reuse = self.config.keep_alive && !connection.parser.wants_close();
        self.sink.response(&record);
        self.control.add_completed(self.thread);
        if !reuse {
            self.close_stream(index);
        }
        // While the ramp opens connections, a quota is kept for those not started yet: each
        // connection sends a first request before any sends a second it would take from them.
        if self.unstarted > 0 && self.pacer.remaining().is_some_and(|left| left <= self.unstarted as u64) {
            self.set_phase(index, Phase::Waiting, later(Instant::now(), self.config.timeout));
            self.after_ramp.push(index);
            return;
        }
        // The next request starts now; its predecessor's last read is as good and costs no
        // clock read, unless that was an arrival stamp from before this wake-up.
        let now = if self.stamped() { Instant::now() } else { timing.last_read };
        self.next_request(index, now);
    }

    /// Records the failure and closes the socket. The next attempt is left to the timer pass
    /// (due at once) rather than started here: starting it here recursed, connect failing
    /// into connect, until the stack overflowed when descriptors ran out.
    fn fail(&mut self, index: usize, kind: ErrorKind, message: String) {
        let connection = &self.connections[index];
        let (slot, request) = (connection.slot, connection.request_index as u16);
        // A connect that failed before any succeeded: the target is unreachable. Running out of
        // descriptors or local ports is this machine's problem, not the target's.
        let opening = matches!(connection.phase, Phase::Connecting | Phase::Handshaking);
        if opening && !matches!(kind, ErrorKind::OutOfFiles | ErrorKind::PortsExhausted) {
            self.control.connect_failed(message.strip_prefix("connect: ").unwrap_or(&message));
        }
        let offset = Instant::now().saturating_duration_since(self.run_start);
        self.sink.error(&ErrorRecord { connection: slot, request, offset, kind, message });
        self.control.add_error(self.thread);
        self.close_stream(index);
        self.set_phase(index, Phase::Waiting, Instant::now());
    }

    /// An open connection between requests became readable: the server closed it (fine,
    /// reconnect on the next request) or sent bytes nobody asked for.
    fn check_idle_stream(&mut self, index: usize) {
        let connection = &mut self.connections[index];
        let Some(stream) = &mut connection.stream else { return };
        let mut unsolicited = 0;
        let closed = loop {
            match stream.read(&mut self.read_buffer) {
                Ok(0) => break true,
                Ok(n) => match &mut connection.tls {
                    None => unsolicited += n,
                    // Session tickets and close_notify are TLS's own; only plaintext was unasked.
                    Some(tls) => match tls.receive(&self.read_buffer[..n], &mut self.plain_buffer) {
                        Ok(feed) => {
                            unsolicited += feed.plain_bytes;
                            if feed.closed {
                                break true;
                            }
                        }
                        Err(_) => break true,
                    },
                },
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break e.kind() != io::ErrorKind::WouldBlock,
            }
        };
        if unsolicited > 0 {
            let connection = &self.connections[index];
            let (slot, request) = (connection.slot, connection.request_index as u16);
            let message = format!("{unsolicited} unsolicited bytes on an idle connection");
            self.sink.error(&ErrorRecord {
                connection: slot,
                request,
                offset: Instant::now().saturating_duration_since(self.run_start),
                kind: ErrorKind::MalformedResponse,
                message,
            });
            self.control.add_error(self.thread);
        }
        if closed || unsolicited > 0 {
            self.close_stream(index);
        }
    }

    /// Closes the socket, first recording its TCP_INFO. `at_run_end`: the run is over, so a
    /// request in flight is abandoned rather than failed.
    fn close_stream_at(&mut self, index: usize, at_run_end: bool) {
        let connection = &mut self.connections[index];
        if let Some(stream) = connection.stream.take() {
            // Best effort: a poll left behind only delays the socket's release to the run's end.
            let _ = self.poller.deregister(index);
            let connection = &mut self.connections[index];
            let abandoned_request = at_run_end
                && matches!(
                    connection.phase,
                    Phase::Connecting | Phase::Handshaking | Phase::Writing | Phase::Reading
                );
            if abandoned_request {
                // Reset, not closed: a request the server never took (its accept queue was
                // full when the handshake ended) would leave an orphan retransmitting it, and
                // its FIN, into the server's queue for minutes (doctor -c 20 on a backlog-2
                // server: 11 to 23 in FIN-WAIT-1 after each run, and the next phase's one
                // connection at a time met them).
                let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            }
            let connect_unanswered_for = (at_run_end && connection.phase == Phase::Connecting)
                .then_some(connection.request.connect_started)
                .flatten()
                .map(|started| started.elapsed());
            let record = ConnectionRecord {
                connection: connection.slot,
                requests: u64::from(connection.responses_on_stream),
                abandoned_requests: u32::from(abandoned_request),
                connect_unanswered_for,
                tcp_info: read_tcp_info(&stream),
                tls: connection.tls.take().and_then(|tls| tls.summary()),
                server_header: if connection.server_reported {
                    None
                } else {
                    connection.parser.server_header().map(str::to_string)
                },
                http2: None,
            };
            connection.responses_on_stream = 0;
            connection.server_reported |= record.server_header.is_some();
            self.sink.connection(&record);
        }
    }

    fn close_stream(&mut self, index: usize) {
        self.close_stream_at(index, false);
    }

    /// Fails connections past their timeout, starts those whose slot is due, and finds the
    /// next instant this needs doing.
    fn fire_timers(&mut self, now: Instant) {
        let far = now + Duration::from_secs(3600);
        self.next_timer = far;
        for index in 0..self.connections.len() {
            let connection = &self.connections[index];
            if connection.phase == Phase::Finished || connection.deadline > now {
                continue;
            }
            match connection.phase {
                Phase::Waiting => self.next_request(index, now),
                Phase::Connecting => {
                    let message = format!("connect timed out after {:?}", self.config.connect_timeout);
                    self.fail(index, ErrorKind::ConnectTimeout, message);
                }
                Phase::Handshaking => {
                    let message = format!("TLS handshake timed out after {:?}", self.config.connect_timeout);
                    self.fail(index, ErrorKind::Tls, message);
                }
                _ => {
                    let message = format!("no complete response within {:?}", self.config.timeout);
                    self.fail(index, ErrorKind::Timeout, message);
                }
            }
        }
        // Recompute from scratch: transitions above may have lowered it, finished ones raise it.
        self.next_timer = self
            .connections
            .iter()
            .filter(|c| c.phase != Phase::Finished)
            .map(|c| c.deadline)
            .min()
            .unwrap_or(far);
    }
}

/// The server closed the connection (or the TLS session): the response ends here if its
/// framing allows it (read until close), else it was cut short.
fn finish_at_close(parser: &mut ResponseFramer) -> ReadOutcome {
    match parser.finish() {
        Ok(()) => ReadOutcome::Complete,
        Err(e) => ReadOutcome::Failed(ErrorKind::ClosedEarly, e.to_string()),
    }
}
