//! Watches the HTTP/2 frames that cross one connection, both ways, for their timing and for
//! flow control. libnghttp2 speaks the protocol (frames, HPACK, streams) and hides its
//! frames; this reads only their 9-byte headers and the payloads of SETTINGS and
//! WINDOW_UPDATE, which is what per-stream timing and the window figures need. Every frame
//! is timed by the `read()` that completed its header, as HTTP/1.1 responses are.
//!
//! Time blocked on the window: a server that has sent all the credit it had stops exactly
//! at a credit boundary (the initial window plus a prefix of our WINDOW_UPDATEs), on the
//! stream or on the connection. A pause in a stream's DATA that begins with the bytes
//! received standing on such a boundary is a wait for our WINDOW_UPDATE and its round trip;
//! a pause elsewhere is the server's own. The same accounting, the other way, times our
//! request bodies waiting on the server's window.
//!
//! Time held behind a lost segment: one TCP byte stream carries every stream, so bytes after
//! a hole wait in the receiver's kernel until the retransmission fills it, whichever stream
//! they belong to. A pause in reading that ends while the socket's count of out-of-order
//! packets grew (TCP_INFO `rcv_ooopack`: a response segment was lost) or its own
//! retransmissions did (`total_retrans`: a request segment was, and the server's kernel held
//! the requests after it) ended with a hole filled; every stream open through it with another
//! was held, from the pause's start (or one round trip after its request, before any answer
//! could come) to its end. A pause our retransmissions alone explain may have been a stall
//! with nothing lost: its hold waits as unsettled until loss_watch.rs gives the verdict.

use super::loss_watch::{LossWatch, PauseEnd};
use crate::record::Http2Connection;
use nodelay_tcp::LossCounters;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const FLAG_ACK: u8 = 0x1;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
/// Under a path's round trip (loopback, a near LAN), only pauses this long are read for a
/// retransmission's end.
const NEAR_PATH_LOSS_PAUSE: Duration = Duration::from_millis(10);
/// RFC 9113 6.9.2: every window starts at this until SETTINGS say otherwise.
pub(crate) const DEFAULT_WINDOW_BYTES: u32 = 65_535;
/// Payload bytes kept of a frame whose payload is read (SETTINGS: 6 per setting).
const KEPT_PAYLOAD_BYTES: usize = 256;

/// One stream's frames as they arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamFrames {
    pub id: u32,
    /// When our HEADERS left (the request went out; before it, the stream queued).
    pub headers_sent: Option<Instant>,
    /// The response's first HEADERS frame.
    pub headers_received: Option<Instant>,
    pub first_data: Option<Instant>,
    pub last_frame: Option<Instant>,
    /// When the frame that ended the stream reached this machine (the kernel's stamp; the
    /// last frame's time when there was none).
    pub ended_arrived: Option<Instant>,
    pub data_frames: u32,
    /// DATA payload bytes (flow-controlled: padding included).
    pub data_bytes: u64,
    /// Longest pause between two frames of the response (HEADERS or DATA).
    pub max_gap: Duration,
    /// Bytes of DATA before that pause.
    pub bytes_before_max_gap: u64,
    /// Pauses of `PAUSE_MIN` or more, summed, and their count.
    pub paused: Duration,
    pub pauses: u32,
    /// Pauses that began at a window boundary (see the module's words), summed.
    pub window_blocked: Duration,
    /// The server reset the stream (RST_STREAM), with this error code.
    pub reset_code: Option<u32>,
    /// Time held, with at least one other stream, behind a lost segment (see the module's
    /// words)...
    pub loss_held: LossHold,
    /// ...and behind pauses whose loss is not settled yet (the tap's `settle_losses`).
    pub unsettled_loss_held: LossHold,
    /// Pauses in our request body's DATA that began with the server's window used up (we
    /// waited for its WINDOW_UPDATE), summed.
    pub send_window_blocked: Duration,
    /// When our last DATA of the request body left.
    last_sent_data: Option<Instant>,
    /// Where the stream's received DATA stands against our windows...
    receiving: WindowWatch,
    /// ...and its request body against the server's.
    sending: WindowWatch,
}

/// A stream's time held behind losses, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LossHold {
    pub all: Duration,
    /// The part of it before the response's HEADERS came.
    pub before_headers: Duration,
}

impl LossHold {
    pub fn add(&mut self, other: LossHold) {
        self.all += other.all;
        self.before_headers += other.before_headers;
    }
}

impl StreamFrames {
    fn new(id: u32) -> Self {
        StreamFrames {
            id,
            headers_sent: None,
            headers_received: None,
            first_data: None,
            last_frame: None,
            ended_arrived: None,
            data_frames: 0,
            data_bytes: 0,
            max_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
            paused: Duration::ZERO,
            pauses: 0,
            window_blocked: Duration::ZERO,
            reset_code: None,
            loss_held: LossHold::default(),
            unsettled_loss_held: LossHold::default(),
            send_window_blocked: Duration::ZERO,
            last_sent_data: None,
            receiving: WindowWatch::default(),
            sending: WindowWatch::default(),
        }
    }
}

/// The credit a receiver has granted one window: the initial window plus each WINDOW_UPDATE
/// it sent, as running totals, and the bytes that arrived against them.
#[derive(Debug, Clone, Default)]
struct Credit {
    /// Running totals not yet passed by `received`, in order.
    boundaries: VecDeque<u64>,
    granted: u64,
    received: u64,
}

impl Credit {
    fn new(initial: u32) -> Self {
        Credit { boundaries: VecDeque::from([u64::from(initial)]), granted: u64::from(initial), received: 0 }
    }

    fn grant(&mut self, increment: u32) {
        self.granted += u64::from(increment);
        self.boundaries.push_back(self.granted);
    }

    /// Counts `bytes` received; whether they stop exactly on a boundary (all credit used up
    /// to one of the grants).
    fn receive(&mut self, bytes: u64) -> bool {
        self.received += bytes;
        while self.boundaries.front().is_some_and(|&b| b < self.received) {
            self.boundaries.pop_front();
        }
        self.boundaries.front() == Some(&self.received)
    }

    /// Raises the initial window (a SETTINGS of ours): every boundary moves by the change.
    fn resize(&mut self, old: u32, new: u32) {
        let shift = |value: u64| (value + u64::from(new)).saturating_sub(u64::from(old));
        self.granted = shift(self.granted);
        for boundary in &mut self.boundaries {
            *boundary = shift(*boundary);
        }
    }
}

/// One direction's flow control: the credit of each open stream and of the connection, and
/// how many times the connection's ran out.
#[derive(Debug, Clone)]
struct FlowWindows {
    /// What each stream's window starts at: the receiver's SETTINGS_INITIAL_WINDOW_SIZE.
    stream_initial: u32,
    streams: Vec<(u32, Credit)>,
    connection: Credit,
    connection_stalls: u64,
}

/// What one DATA frame did to the windows it counted against.
#[derive(Debug, Clone, Copy)]
struct Spent {
    /// The connection's stall count before this frame.
    connection_stalls_before: u64,
    /// The frame used up its stream's credit, or the connection's.
    stream_stalled: bool,
    connection_stalled: bool,
}

impl FlowWindows {
    fn new() -> Self {
        FlowWindows {
            stream_initial: DEFAULT_WINDOW_BYTES,
            streams: Vec::new(),
            connection: Credit::new(DEFAULT_WINDOW_BYTES),
            connection_stalls: 0,
        }
    }

    fn open(&mut self, stream: u32) {
        self.streams.push((stream, Credit::new(self.stream_initial)));
    }

    fn close(&mut self, stream: u32) {
        self.streams.retain(|(s, _)| *s != stream);
    }

    /// A WINDOW_UPDATE: stream 0 is the connection's.
    fn grant(&mut self, stream: u32, increment: u32) {
        if stream == 0 {
            self.connection.grant(increment);
        } else if let Some((_, credit)) = self.streams.iter_mut().find(|(s, _)| *s == stream) {
            credit.grant(increment);
        }
    }

    /// A new SETTINGS_INITIAL_WINDOW_SIZE: every open stream's boundaries move by the change.
    fn resize(&mut self, initial: u32) {
        for (_, credit) in &mut self.streams {
            credit.resize(self.stream_initial, initial);
        }
        self.stream_initial = initial;
    }

    /// `bytes` of DATA on `stream`.
    fn spend(&mut self, stream: u32, bytes: u64) -> Spent {
        let connection_stalls_before = self.connection_stalls;
        let connection_stalled = self.connection.receive(bytes);
        if connection_stalled {
            self.connection_stalls += 1;
        }
        let stream_stalled = self
            .streams
            .iter_mut()
            .find(|(s, _)| *s == stream)
            .is_some_and(|(_, credit)| credit.receive(bytes));
        Spent { connection_stalls_before, stream_stalled, connection_stalled }
    }
}

/// Where one stream's DATA, one way, stood at its last frame: on a boundary of its own
/// credit, and how many connection stalls it had seen.
#[derive(Debug, Clone, Copy, Default)]
struct WindowWatch {
    at_stream_boundary: bool,
    connection_stalls_seen: u64,
}

impl WindowWatch {
    /// At a DATA frame: whether the pause it ends, which began at the stream's last frame, was
    /// a wait on a window. It was if that frame stopped on the stream's credit, or if the
    /// connection stalled since (a stall this very frame begins counts at the next).
    fn pause_was_blocked(&mut self, spent: Spent) -> bool {
        let blocked = self.at_stream_boundary || self.connection_stalls_seen < spent.connection_stalls_before;
        self.at_stream_boundary = spent.stream_stalled;
        self.connection_stalls_seen = spent.connection_stalls_before;
        blocked
    }
}

/// Reads frame headers out of a byte stream cut anywhere.
#[derive(Debug, Default)]
struct FrameReader {
    header: [u8; 9],
    header_bytes: usize,
    /// Payload still to pass of the current frame, and the part of it to keep.
    payload_left: usize,
    keep_left: usize,
    kept: Vec<u8>,
}

/// One complete frame: its header fields and its kept payload.
struct Frame<'a> {
    kind: u8,
    flags: u8,
    stream: u32,
    length: usize,
    payload: &'a [u8],
}

impl FrameReader {
    /// Feeds bytes; calls `on_frame` for each frame whose payload ends within them (a frame
    /// whose payload is not kept counts as soon as its header is complete).
    fn feed(&mut self, mut bytes: &[u8], mut on_frame: impl FnMut(Frame<'_>)) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let take = self.payload_left.min(bytes.len());
                let keep = self.keep_left.min(take);
                self.kept.extend_from_slice(&bytes[..keep]);
                self.keep_left -= keep;
                self.payload_left -= take;
                bytes = &bytes[take..];
                if self.payload_left == 0 && self.keeps_payload() {
                    on_frame(self.frame());
                }
                continue;
            }
            let take = (9 - self.header_bytes).min(bytes.len());
            self.header[self.header_bytes..self.header_bytes + take].copy_from_slice(&bytes[..take]);
            self.header_bytes += take;
            bytes = &bytes[take..];
            if self.header_bytes < 9 {
                return;
            }
            self.header_bytes = 0;
            let length = usize::from(self.header[0]) << 16
                | usize::from(self.header[1]) << 8
                | usize::from(self.header[2]);
            self.payload_left = length;
            self.kept.clear();
            self.keep_left = if self.keeps_payload() { length.min(KEPT_PAYLOAD_BYTES) } else { 0 };
            if !self.keeps_payload() || length == 0 {
                on_frame(self.frame());
            }
        }
    }

    fn keeps_payload(&self) -> bool {
        matches!(self.header[3], SETTINGS | WINDOW_UPDATE | RST_STREAM | GOAWAY)
    }

    fn frame(&self) -> Frame<'_> {
        let length = usize::from(self.header[0]) << 16
            | usize::from(self.header[1]) << 8
            | usize::from(self.header[2]);
        let stream = u32::from_be_bytes([self.header[5], self.header[6], self.header[7], self.header[8]])
            & 0x7fff_ffff;
        Frame { kind: self.header[3], flags: self.header[4], stream, length, payload: &self.kept }
    }
}

fn be32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// Both directions of one connection.
#[derive(Debug)]
pub(crate) struct FrameTap {
    inbound: FrameReader,
    /// Some bytes came from the server...
    received_any: bool,
    /// ...and they were no SETTINGS frame, which a server's first frame must be (RFC 9113
    /// 3.4): the server does not speak HTTP/2 here (h2c asked of an HTTP/1.1-only port). Its
    /// first bytes, printable, to say what it spoke instead.
    pub not_http2: Option<String>,
    /// Outbound bytes start with the 24-byte connection preface, which is no frame.
    preface_left: usize,
    outbound: FrameReader,
    /// Streams whose response is not over, by id.
    streams: Vec<StreamFrames>,
    /// Streams over, waiting for the worker to take their figures.
    finished: Vec<StreamFrames>,
    /// What we granted the server's DATA...
    receive_windows: FlowWindows,
    /// ...and what the server granted our request bodies.
    send_windows: FlowWindows,
    /// The connection's DATA stopped on a boundary at this instant (and not moved since).
    connection_stalled_at: Option<Instant>,
    /// When the last bytes came from the server.
    last_received: Option<Instant>,
    /// The kernel's arrival stamp of the bytes being read, while `received_arrived` reads them.
    reading_arrived: Option<Instant>,
    /// Which pauses ended with a lost segment's retransmission.
    losses: LossWatch,
    /// The verdict on unsettled pauses, until the worker takes it.
    loss_verdict: Option<bool>,
    pub figures: Http2Connection,
}

impl FrameTap {
    pub fn new() -> Self {
        FrameTap {
            inbound: FrameReader::default(),
            received_any: false,
            not_http2: None,
            preface_left: 24,
            outbound: FrameReader::default(),
            streams: Vec::new(),
            finished: Vec::new(),
            receive_windows: FlowWindows::new(),
            send_windows: FlowWindows::new(),
            connection_stalled_at: None,
            last_received: None,
            reading_arrived: None,
            losses: LossWatch::new(),
            loss_verdict: None,
            figures: Http2Connection {
                stream_window_bytes: DEFAULT_WINDOW_BYTES,
                connection_window_bytes: DEFAULT_WINDOW_BYTES,
                ..Http2Connection::default()
            },
        }
    }

    /// Bytes we wrote, at `now`.
    pub fn sent(&mut self, mut bytes: &[u8], now: Instant) {
        let preface = self.preface_left.min(bytes.len());
        self.preface_left -= preface;
        bytes = &bytes[preface..];
        let mut reader = std::mem::take(&mut self.outbound);
        reader.feed(bytes, |frame| self.on_sent(&frame, now));
        self.outbound = reader;
    }

    /// Bytes we read, at `now`, that reached this machine at `arrived` (the kernel's stamp):
    /// a stream they end is dated by it (`StreamFrames::ended_arrived`).
    pub fn received_arrived(&mut self, bytes: &[u8], now: Instant, arrived: Instant) {
        self.reading_arrived = Some(arrived);
        self.received(bytes, now);
        self.reading_arrived = None;
    }

    /// Bytes we read, at `now`.
    pub fn received(&mut self, bytes: &[u8], now: Instant) {
        // A first read too short to hold a frame's type says nothing either way.
        if !self.received_any && bytes.len() >= 4 {
            self.received_any = true;
            if bytes[3] != SETTINGS {
                let shown: String = bytes
                    .iter()
                    .take(24)
                    .map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' })
                    .collect();
                self.not_http2 = Some(shown);
            }
        }
        let mut reader = std::mem::take(&mut self.inbound);
        reader.feed(bytes, |frame| self.on_received(&frame, now));
        self.inbound = reader;
        self.last_received = Some(now);
    }

    /// How long nothing came from the server before `now` (zero before the first bytes).
    pub fn quiet_before(&self, now: Instant) -> Duration {
        self.last_received.map_or(Duration::ZERO, |last| now.saturating_duration_since(last))
    }

    /// Whether the pause that ends at `now` is long enough to have waited for a
    /// retransmission worth counting: then the socket's loss counters are worth a TCP_INFO.
    pub fn may_end_a_loss(&self, now: Instant) -> bool {
        // A hole is filled a round trip after the loss at the soonest (a fast retransmit), or
        // by a timeout of 200 ms or more. On loopback a round trip's hold costs
        // nothing worth naming: only pauses of 10 ms or more are read there, which keeps the
        // syscall off a busy loopback run (it cost 0.7 % of the generator's CPU against nginx).
        let rtt_us = self.losses.min_rtt_us();
        let shortest = if rtt_us > 0 && nodelay_tcp::path::judged_rtt_us(rtt_us) == 0 {
            NEAR_PATH_LOSS_PAUSE
        } else {
            (Duration::from_micros(u64::from(rtt_us)) / 2).max(crate::record::PAUSE_MIN)
        };
        self.quiet_before(now) >= shortest
    }

    /// The socket's loss counters, read at `now` as a pause in reading ends: a count that grew
    /// means the pause ended with a hole filled, and the streams open through it were held
    /// behind the lost segment (or may have been, until `settle_losses` says).
    pub fn losses(&mut self, counters: LossCounters, now: Instant) {
        let path_rtt = counters.min_rtt();
        let Some(pause_began) = self.last_received else {
            self.losses.pause_ended(counters, now, 0);
            return;
        };
        // Before its first answer, a stream could not expect bytes sooner than a round trip
        // after its request.
        let held_from = |stream: &StreamFrames| match (stream.headers_received, stream.headers_sent) {
            (None, Some(sent)) => pause_began.max(sent + path_rtt),
            _ => pause_began,
        };
        let held = self.streams.iter().filter(|s| held_from(s) < now).count();
        let settled = match self.losses.pause_ended(counters, now, held as u64) {
            PauseEnd::NoLoss => return,
            PauseEnd::Hole => true,
            PauseEnd::Unsettled => false,
        };
        if settled {
            self.figures.loss_holes += 1;
            self.figures.streams_held_by_loss += held as u64;
        }
        if held < 2 {
            return;
        }
        for stream in &mut self.streams {
            let time = now.saturating_duration_since(held_from(stream));
            let before_headers = if stream.headers_received.is_none() { time } else { Duration::ZERO };
            let hold = LossHold { all: time, before_headers };
            if settled { stream.loss_held.add(hold) } else { stream.unsettled_loss_held.add(hold) }
        }
    }

    /// Whether pauses wait for their loss verdict and it is due at `now`: then the socket's
    /// counters are worth a read for `settle_losses`.
    pub fn losses_settle_due(&self, now: Instant) -> bool {
        self.losses.settle_due(now)
    }

    /// Whether pauses wait for their loss verdict (a stream that finishes now may carry an
    /// unsettled hold).
    pub fn losses_unsettled(&self) -> bool {
        self.losses.is_unsettled()
    }

    /// The verdict on unsettled pauses from `counters`: held time becomes the streams' (a
    /// loss) or is dropped (late segments, nothing lost). The worker takes it with
    /// `take_loss_verdict` for the streams it took before.
    pub fn settle_losses(&mut self, counters: LossCounters) {
        let Some(settled) = self.losses.settle(counters) else { return };
        if settled.lost {
            self.figures.loss_holes += settled.pauses;
            self.figures.streams_held_by_loss += settled.streams_held;
        }
        for stream in self.streams.iter_mut().chain(self.finished.iter_mut()) {
            let unsettled = std::mem::take(&mut stream.unsettled_loss_held);
            if settled.lost {
                stream.loss_held.add(unsettled);
            }
        }
        self.loss_verdict = Some(settled.lost);
    }

    /// The last verdict on unsettled pauses (a loss: true), once.
    pub fn take_loss_verdict(&mut self) -> Option<bool> {
        self.loss_verdict.take()
    }

    /// The figures of stream `id` once its response is over (or it was reset); None while
    /// it runs or if no frame of it was seen.
    pub fn take_finished(&mut self, id: u32) -> Option<StreamFrames> {
        let at = self.finished.iter().position(|s| s.id == id)?;
        Some(self.finished.swap_remove(at))
    }

    /// Forgets stream `id` (its figures were taken or it was given up).
    pub fn forget(&mut self, id: u32) {
        self.streams.retain(|s| s.id != id);
        self.finished.retain(|s| s.id != id);
        self.receive_windows.close(id);
        self.send_windows.close(id);
    }

    fn on_sent(&mut self, frame: &Frame<'_>, now: Instant) {
        match frame.kind {
            HEADERS if frame.stream != 0 && self.stream_index(frame.stream).is_none() => {
                let mut stream = StreamFrames::new(frame.stream);
                stream.headers_sent = Some(now);
                stream.receiving.connection_stalls_seen = self.receive_windows.connection_stalls;
                stream.sending.connection_stalls_seen = self.send_windows.connection_stalls;
                self.streams.push(stream);
                self.receive_windows.open(frame.stream);
                self.send_windows.open(frame.stream);
                self.figures.max_open_streams = self.figures.max_open_streams.max(self.streams.len() as u32);
            }
            SETTINGS if frame.flags & FLAG_ACK == 0 => {
                for setting in frame.payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([setting[0], setting[1]]);
                    let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    if id == SETTINGS_INITIAL_WINDOW_SIZE {
                        self.receive_windows.resize(value);
                        self.figures.stream_window_bytes = value;
                    }
                }
            }
            WINDOW_UPDATE => {
                let Some(increment) = be32(frame.payload).map(|v| v & 0x7fff_ffff) else { return };
                self.figures.window_updates_sent += 1;
                // What the connection window starts at: 65,535 and our first update.
                if frame.stream == 0 && self.receive_windows.connection.received == 0 {
                    self.figures.connection_window_bytes =
                        self.figures.connection_window_bytes.saturating_add(increment);
                }
                self.receive_windows.grant(frame.stream, increment);
            }
            DATA => self.on_data_sent(frame, now),
            _ => {}
        }
    }

    fn on_received(&mut self, frame: &Frame<'_>, now: Instant) {
        match frame.kind {
            SETTINGS if frame.flags & FLAG_ACK == 0 => {
                for setting in frame.payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([setting[0], setting[1]]);
                    let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    match id {
                        SETTINGS_MAX_CONCURRENT_STREAMS => {
                            self.figures.peer.max_concurrent_streams = Some(value)
                        }
                        SETTINGS_INITIAL_WINDOW_SIZE => {
                            self.send_windows.resize(value);
                            self.figures.peer.initial_window_bytes = Some(value)
                        }
                        SETTINGS_MAX_FRAME_SIZE => self.figures.peer.max_frame_bytes = Some(value),
                        _ => {}
                    }
                }
            }
            GOAWAY => self.figures.goaway_code = be32(frame.payload.get(4..).unwrap_or(&[])),
            WINDOW_UPDATE => {
                let Some(increment) = be32(frame.payload).map(|v| v & 0x7fff_ffff) else { return };
                self.send_windows.grant(frame.stream, increment);
            }
            RST_STREAM => {
                self.figures.streams_reset += 1;
                if let Some(index) = self.stream_index(frame.stream) {
                    let mut stream = self.streams.swap_remove(index);
                    stream.reset_code = be32(frame.payload);
                    self.finished.push(stream);
                }
            }
            HEADERS => {
                let Some(index) = self.stream_index(frame.stream) else { return };
                let stream = &mut self.streams[index];
                if stream.headers_received.is_none() {
                    stream.headers_received = Some(now);
                } else {
                    note_gap(stream, now);
                }
                stream.last_frame = Some(now);
                if frame.flags & 0x1 != 0 {
                    self.end_stream(index);
                }
            }
            DATA => self.on_data(frame, now),
            _ => {}
        }
    }

    fn on_data(&mut self, frame: &Frame<'_>, now: Instant) {
        let bytes = frame.length as u64;
        self.figures.data_frames += 1;
        self.figures.data_bytes += bytes;
        // The connection's DATA moved again: a stall that stopped it is over.
        if let Some(stalled_at) = self.connection_stalled_at.take() {
            self.figures.connection_window_blocked += now.saturating_duration_since(stalled_at);
        }
        let spent = self.receive_windows.spend(frame.stream, bytes);
        if spent.connection_stalled {
            self.connection_stalled_at = Some(now);
            self.figures.connection_window_stalls += 1;
        }
        let Some(index) = self.stream_index(frame.stream) else { return };
        let stream = &mut self.streams[index];
        // The pause that ends with this frame began at the stream's last frame.
        let gap = note_gap(stream, now);
        if stream.receiving.pause_was_blocked(spent) {
            stream.window_blocked += gap;
        }
        if stream.first_data.is_none() {
            stream.first_data = Some(now);
        }
        stream.last_frame = Some(now);
        stream.data_frames += 1;
        stream.data_bytes += bytes;
        if frame.flags & 0x1 != 0 {
            self.end_stream(index);
        }
    }

    /// Our request body's DATA: a pause in it that began with the server's credit used up, on
    /// the stream or the connection, was a wait for the server's WINDOW_UPDATE.
    fn on_data_sent(&mut self, frame: &Frame<'_>, now: Instant) {
        let spent = self.send_windows.spend(frame.stream, frame.length as u64);
        if spent.connection_stalled || spent.stream_stalled {
            self.figures.send_window_stalls += 1;
        }
        let Some(index) = self.stream_index(frame.stream) else { return };
        let stream = &mut self.streams[index];
        // The pause this frame ends began at the stream's last DATA (none before the first).
        let blocked = stream.sending.pause_was_blocked(spent);
        if let Some(last) = stream.last_sent_data.replace(now)
            && blocked
        {
            let waited = now.saturating_duration_since(last);
            stream.send_window_blocked += waited;
            self.figures.send_window_blocked += waited;
        }
    }

    fn end_stream(&mut self, index: usize) {
        let mut stream = self.streams.swap_remove(index);
        stream.ended_arrived = self.reading_arrived.or(stream.last_frame);
        self.receive_windows.close(stream.id);
        self.send_windows.close(stream.id);
        self.finished.push(stream);
    }

    /// Our HEADERS of stream `id` left.
    pub fn headers_left(&self, id: u32) -> bool {
        self.stream_index(id).is_some() || self.finished.iter().any(|s| s.id == id)
    }

    fn stream_index(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }
}

/// For fuzz/fuzz_targets/h2_frames.rs, not an API: a tap fed `sent` whole, then `received`
/// cut into pieces of the sizes `pieces` gives (round and round; 0 counts as 1), all at the
/// instant `now`; what it read, in words, to compare one cutting with another.
pub fn read_frames(sent: &[u8], received: &[u8], pieces: &[usize], now: Instant) -> String {
    let mut tap = FrameTap::new();
    tap.sent(sent, now);
    let mut rest = received;
    for &piece in pieces.iter().cycle().take(received.len().max(1)) {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(piece.clamp(1, rest.len()));
        tap.received(head, now);
        rest = tail;
    }
    let mut finished: Vec<String> = tap.finished.iter().map(|s| format!("{s:?}")).collect();
    finished.sort();
    let mut open: Vec<String> = tap.streams.iter().map(|s| format!("{s:?}")).collect();
    open.sort();
    format!("{:?}\nfinished {finished:?}\nopen {open:?}", tap.figures)
}

/// Times the pause since the stream's last frame (none before its first); returns it.
fn note_gap(stream: &mut StreamFrames, now: Instant) -> Duration {
    let Some(last) = stream.last_frame else { return Duration::ZERO };
    let gap = now.saturating_duration_since(last);
    if gap > stream.max_gap {
        stream.max_gap = gap;
        stream.bytes_before_max_gap = stream.data_bytes;
    }
    if gap >= crate::record::PAUSE_MIN {
        stream.paused += gap;
        stream.pauses += 1;
    }
    gap
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::test_frames::frame;

    fn window_update(stream: u32, increment: u32) -> Vec<u8> {
        frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
    }

    fn tap_with_request(stream: u32, at: Instant) -> FrameTap {
        let mut tap = FrameTap::new();
        let mut sent = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        sent.extend(frame(HEADERS, 0x5, stream, b"hpack"));
        tap.sent(&sent, at);
        tap
    }

    #[test]
    fn frames_cut_anywhere_are_read_whole_and_timed_by_the_read_that_completed_them() {
        let start = Instant::now();
        let mut tap = tap_with_request(1, start);
        let mut settings = 100u16.to_be_bytes().to_vec();
        let mut received = frame(SETTINGS, 0, 0, &{
            settings.clear();
            settings.extend(SETTINGS_MAX_CONCURRENT_STREAMS.to_be_bytes());
            settings.extend(8u32.to_be_bytes());
            settings.clone()
        });
        received.extend(frame(HEADERS, 0x4, 1, b"head"));
        received.extend(frame(DATA, 0, 1, &[7; 100]));
        received.extend(frame(DATA, 0x1, 1, &[7; 50]));
        let ms = |n| start + Duration::from_millis(n);
        // One byte at a time up to the first DATA's header, then the rest 30 ms later.
        let split = received.len() - (9 + 50) - 100 - 5;
        for (k, byte) in received[..split].iter().enumerate() {
            tap.received(std::slice::from_ref(byte), ms(1 + k as u64 / 100));
        }
        tap.received(&received[split..], ms(40));
        assert_eq!(tap.figures.peer.max_concurrent_streams, Some(8));
        let stream = tap.take_finished(1).expect("stream 1 ended");
        assert_eq!(stream.headers_sent, Some(start));
        assert_eq!(stream.data_frames, 2);
        assert_eq!(stream.data_bytes, 150);
        assert!(stream.max_gap >= Duration::from_millis(38), "{stream:?}");
        assert_eq!(stream.window_blocked, Duration::ZERO);
        assert!(tap.take_finished(1).is_none());
    }

    #[test]
    fn a_pause_that_begins_on_a_used_up_stream_window_is_blocked_time_and_others_are_not() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_request(1, start);
        tap.received(&frame(HEADERS, 0x4, 1, b"head"), ms(2));
        // The whole default window, then a pause of 40 ms until our update got through.
        tap.received(&frame(DATA, 0, 1, &vec![0; 65_535]), ms(2));
        tap.sent(&window_update(1, 65_535), ms(3));
        tap.received(&frame(DATA, 0, 1, &vec![0; 1000]), ms(42));
        // A pause with credit left is the server's own.
        tap.received(&frame(DATA, 0x1, 1, &vec![0; 1000]), ms(92));
        let stream = tap.take_finished(1).unwrap();
        assert_eq!(stream.window_blocked, Duration::from_millis(40));
        assert_eq!(stream.max_gap, Duration::from_millis(50));
        assert_eq!(stream.pauses, 2);
        assert_eq!(tap.figures.window_updates_sent, 1);
    }

    #[test]
    fn the_connection_window_stalls_every_stream_that_waits_on_it() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_request(1, start);
        // A larger stream window (our SETTINGS) leaves the connection's 65,535 as the limit.
        let mut settings = SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
        settings.extend(1_000_000u32.to_be_bytes());
        tap.sent(&frame(SETTINGS, 0, 0, &settings), start);
        tap.sent(&frame(HEADERS, 0x5, 3, b"hpack"), start);
        tap.received(&frame(DATA, 0, 1, &vec![0; 35_535]), ms(1));
        tap.received(&frame(DATA, 0, 3, &vec![0; 30_000]), ms(2));
        tap.sent(&window_update(0, 65_535), ms(3));
        tap.received(&frame(DATA, 0x1, 3, &[0; 10]), ms(22));
        tap.received(&frame(DATA, 0x1, 1, &[0; 10]), ms(23));
        assert_eq!(tap.figures.stream_window_bytes, 1_000_000);
        assert_eq!(tap.figures.connection_window_stalls, 1);
        assert_eq!(tap.figures.connection_window_blocked, Duration::from_millis(20));
        assert_eq!(tap.take_finished(3).unwrap().window_blocked, Duration::from_millis(20));
        assert_eq!(tap.take_finished(1).unwrap().window_blocked, Duration::from_millis(22));
        assert_eq!(tap.figures.max_open_streams, 2);
    }

    #[test]
    fn a_first_answer_that_is_no_settings_frame_is_kept_to_say_what_the_server_spoke() {
        let start = Instant::now();
        let mut tap = tap_with_request(1, start);
        tap.received(b"HTTP/1.1 400 Bad Request\r\n\r\n", start);
        assert_eq!(tap.not_http2.as_deref(), Some("HTTP/1.1 400 Bad Request"));
        let mut http2 = tap_with_request(1, start);
        http2.received(&frame(SETTINGS, 0, 0, &[]), start);
        http2.received(b"HTTP/1.1", start);
        assert_eq!(http2.not_http2, None);
    }

    /// A tap that saw the preface and a request HEADERS, a body to follow, on each of `streams`.
    fn tap_with_uploads(streams: &[u32], at: Instant) -> FrameTap {
        let mut tap = FrameTap::new();
        let mut sent = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        for &stream in streams {
            sent.extend(frame(HEADERS, 0x4, stream, b"hpack"));
        }
        tap.sent(&sent, at);
        tap
    }

    #[test]
    fn a_request_body_that_uses_up_the_servers_window_waits_for_its_update() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_uploads(&[1], start);
        // The server's default window, 65,535 bytes, all sent at once: a stall.
        tap.sent(&frame(DATA, 0, 1, &vec![0; 40_000]), ms(1));
        tap.sent(&frame(DATA, 0, 1, &vec![0; 25_535]), ms(1));
        tap.received(&window_update(1, 65_535), ms(40));
        tap.received(&window_update(0, 65_535), ms(40));
        tap.sent(&frame(DATA, 0, 1, &vec![0; 1000]), ms(41));
        // With credit left, a pause is ours.
        tap.sent(&frame(DATA, 0x1, 1, &vec![0; 1000]), ms(61));
        assert_eq!(tap.figures.send_window_stalls, 1);
        assert_eq!(tap.figures.send_window_blocked, Duration::from_millis(40));
        tap.received(&frame(HEADERS, 0x5, 1, b"head"), ms(62));
        assert_eq!(tap.take_finished(1).unwrap().send_window_blocked, Duration::from_millis(40));
    }

    #[test]
    fn a_larger_server_stream_window_leaves_its_connection_window_as_the_limit() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_uploads(&[1, 3], start);
        let mut settings = SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
        settings.extend(1_000_000u32.to_be_bytes());
        tap.received(&frame(SETTINGS, 0, 0, &settings), ms(1));
        tap.sent(&frame(DATA, 0, 1, &vec![0; 30_000]), ms(2));
        tap.sent(&frame(DATA, 0, 3, &vec![0; 35_535]), ms(2));
        tap.received(&window_update(0, 1_000_000), ms(30));
        tap.sent(&frame(DATA, 0x1, 1, &[0; 10]), ms(31));
        tap.sent(&frame(DATA, 0x1, 3, &[0; 10]), ms(31));
        assert_eq!(tap.figures.send_window_stalls, 1);
        // Stream 3's DATA began the stall: it waited 29 ms, and so did stream 1, sent before it.
        assert_eq!(tap.figures.send_window_blocked, Duration::from_millis(29) * 2);
    }

    fn lost(out_of_order_packets: u32, retransmits: u32, min_rtt_ms: u32) -> LossCounters {
        LossCounters {
            out_of_order_packets,
            retransmits,
            min_rtt_us: min_rtt_ms * 1000,
            ..LossCounters::default()
        }
    }

    #[test]
    fn a_pause_that_ends_with_a_hole_filled_holds_every_stream_open_through_it() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_request(1, start);
        tap.sent(&frame(HEADERS, 0x5, 3, b"hpack"), start);
        tap.received(&frame(HEADERS, 0x4, 1, b"head"), ms(20));
        tap.received(&frame(DATA, 0, 1, &[0; 100]), ms(21));
        // Stream 5 asks during the pause, 2 ms before its end: no answer was due yet.
        tap.sent(&frame(HEADERS, 0x5, 5, b"hpack"), ms(39));
        assert_eq!(tap.quiet_before(ms(41)), Duration::from_millis(20));
        // No counter grew: a pause of the server's own.
        tap.losses(lost(0, 0, 20), ms(41));
        assert_eq!(tap.figures.loss_holes, 0);
        tap.received(&frame(DATA, 0, 1, &[0; 100]), ms(41));
        // Packets came out of order during the next pause: it ended with the hole filled.
        tap.losses(lost(3, 0, 20), ms(71));
        tap.received(&frame(DATA, 0x1, 1, &[0; 100]), ms(71));
        tap.received(&frame(HEADERS, 0x5, 3, b"head"), ms(71));
        assert_eq!((tap.figures.loss_holes, tap.figures.streams_held_by_loss), (1, 3));
        let answered = tap.take_finished(1).unwrap();
        assert_eq!(
            (answered.loss_held.all, answered.loss_held.before_headers),
            (Duration::from_millis(30), Duration::ZERO)
        );
        let waiting = tap.take_finished(3).unwrap();
        assert_eq!(waiting.loss_held.all, Duration::from_millis(30));
        assert_eq!(waiting.loss_held.before_headers, Duration::from_millis(30));
        // Stream 5 could expect its answer from 59 ms on (its request and a round trip).
        tap.received(&frame(HEADERS, 0x5, 5, b"head"), ms(72));
        assert_eq!(tap.take_finished(5).unwrap().loss_held.all, Duration::from_millis(12));
    }

    #[test]
    fn loss_counters_are_read_after_a_pause_as_long_as_half_the_round_trip_or_10_ms_near_by() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_request(1, start);
        tap.received(&frame(SETTINGS, 0, 0, &[]), ms(1));
        // Before any round trip is known: from MIN_PATH_RTT_MS.
        assert!(!tap.may_end_a_loss(start + Duration::from_micros(1900)));
        assert!(tap.may_end_a_loss(ms(2)));
        // A 40 ms path: from half of it.
        tap.losses(lost(0, 0, 40), ms(2));
        assert!(!tap.may_end_a_loss(ms(20)) && tap.may_end_a_loss(ms(21)));
        // Loopback (50 µs): from 10 ms.
        tap.losses(LossCounters { min_rtt_us: 50, ..LossCounters::default() }, ms(2));
        assert!(!tap.may_end_a_loss(ms(10)) && tap.may_end_a_loss(ms(11)));
    }

    #[test]
    fn a_lost_request_segment_holds_streams_and_one_stream_alone_is_held_by_nothing_else() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut tap = tap_with_request(1, start);
        tap.received(&frame(SETTINGS, 0, 0, &[]), ms(1));
        // Our own retransmission: the server's kernel held what followed the lost request.
        tap.losses(lost(0, 1, 10), ms(250));
        tap.received(&frame(HEADERS, 0x5, 1, b"head"), ms(250));
        // No D-SACK came for it: it was lost.
        tap.settle_losses(lost(0, 1, 10));
        assert_eq!((tap.figures.loss_holes, tap.figures.streams_held_by_loss), (1, 1));
        assert_eq!(tap.take_finished(1).unwrap().loss_held.all, Duration::ZERO, "nothing shared the wait");
    }

    #[test]
    fn a_pause_our_retransmissions_alone_explain_holds_streams_only_once_no_dsack_came() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let spurious = |retransmits, spurious_retransmits| LossCounters {
            retransmits,
            spurious_retransmits,
            min_rtt_us: 10_000,
            ..LossCounters::default()
        };
        for (dsacks, lost) in [(1, false), (0, true)] {
            let mut tap = tap_with_request(1, start);
            tap.sent(&frame(HEADERS, 0x5, 3, b"hpack"), start);
            tap.received(&frame(SETTINGS, 0, 0, &[]), ms(1));
            // A pause ends with one segment of ours resent, and no D-SACK yet: each stream was
            // held from a round trip after its request.
            tap.losses(spurious(1, 0), ms(301));
            assert_eq!(tap.figures.loss_holes, 0, "not before the verdict");
            tap.received(&frame(HEADERS, 0x5, 1, b"head"), ms(301));
            let taken = tap.take_finished(1).unwrap();
            assert_eq!(
                (taken.loss_held.all, taken.unsettled_loss_held.all),
                (Duration::ZERO, Duration::from_millis(291))
            );
            // Two round trips later the verdict is due: a D-SACK came, or none did.
            assert!(!tap.losses_settle_due(ms(320)) && tap.losses_settle_due(ms(321)));
            tap.settle_losses(spurious(1, dsacks));
            assert_eq!(tap.take_loss_verdict(), Some(lost));
            assert_eq!(tap.figures.loss_holes, u64::from(lost));
            tap.received(&frame(HEADERS, 0x5, 3, b"head"), ms(322));
            let other = tap.take_finished(3).unwrap();
            let held = if lost { Duration::from_millis(291) } else { Duration::ZERO };
            assert_eq!(
                (other.loss_held.all, other.unsettled_loss_held.all),
                (held, Duration::ZERO),
                "dsacks {dsacks}"
            );
        }
    }

    #[test]
    fn a_reset_stream_ends_with_its_code() {
        let start = Instant::now();
        let mut tap = tap_with_request(1, start);
        tap.received(&frame(RST_STREAM, 0, 1, &7u32.to_be_bytes()), start);
        assert_eq!(tap.take_finished(1).unwrap().reset_code, Some(7));
        assert_eq!(tap.figures.streams_reset, 1);
    }
}
