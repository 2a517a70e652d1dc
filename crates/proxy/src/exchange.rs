//! Where exchanges begin and end on one relayed connection, and when each of their bytes
//! was read and written. Fed every read and write with its time, it emits an
//! [`ExchangeRecord`] once an exchange's response has been delivered to the client.
//!
//! The client's first bytes decide the framing: HTTP/1.x, where the wire crate's request and
//! response framers say where each message ends (pipelined requests wait in a short queue),
//! or turns for any other protocol: the client's bytes, then the upstream's until the client
//! speaks again. HTTP the framers refuse (or a CONNECT tunnel, a protocol switch, more than
//! [`MAX_IN_FLIGHT`] pipelined requests) continues in turns: the exchanges in flight then are
//! counted as untimed. Pure: time is an input, no I/O; nothing here allocates per exchange.

use crate::record::{ExchangeRecord, Framing, IncompleteRecord, Reads, Unfinished};
use crate::sink::RelaySink;
use nodelay_wire::{Feed, HTTP_GUESS_BYTES, RequestFramer, ResponseParser, guess_http_request};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Longest HTTP head (request or response) the framers buffer.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Exchanges in flight on one connection (pipelined HTTP requests) whose timing is kept.
pub const MAX_IN_FLIGHT: usize = 16;

/// An exchange in flight. Offsets count bytes from the start of each direction's stream.
#[derive(Debug, Clone, Copy)]
struct Pending {
    sequence: u32,
    request: Reads,
    /// Just past the request's last byte in the client's stream, once known.
    request_end: Option<u64>,
    forwarded: Option<Instant>,
    response: Option<Reads>,
    /// Just past the response's last byte in the upstream's stream, once known.
    response_end: Option<u64>,
    delivered: Option<Instant>,
    /// A HEAD request: its response has no body.
    head: bool,
    status: u16,
}

impl Pending {
    fn record(&self, connection: u64, framing: Framing, rtt: PathRtt) -> Option<ExchangeRecord> {
        Some(ExchangeRecord {
            connection,
            sequence: self.sequence,
            framing,
            request: self.request,
            forwarded: self.forwarded?,
            response: self.response?,
            delivered: self.delivered?,
            status: self.status,
            client_rtt: rtt.client,
            upstream_rtt: rtt.upstream,
        })
    }
}

/// Each leg's round trip as the kernel last gave it (TCP_INFO `min_rtt`), stamped on the
/// exchanges the connection completes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PathRtt {
    pub client: Option<Duration>,
    pub upstream: Option<Duration>,
}

/// The two framers of an HTTP connection (boxed: allocated once per connection).
struct HttpFramers {
    request: RequestFramer,
    response: ResponseParser,
}

enum Mode {
    /// The client's first bytes do not tell yet.
    Undecided,
    Http(Box<HttpFramers>),
    Turns,
}

pub(crate) struct Exchanges {
    connection: u64,
    mode: Mode,
    /// The client's first bytes while they do not tell whether it speaks HTTP.
    guess: [u8; HTTP_GUESS_BYTES],
    guess_len: usize,
    pending: VecDeque<Pending>,
    next_sequence: u32,
    client_read: u64,
    upstream_read: u64,
    to_upstream: u64,
    /// When the last write to the upstream returned.
    to_upstream_at: Instant,
    to_client: u64,
    to_client_at: Instant,
    completed: u32,
    rtt: PathRtt,
    framing_lost: Option<String>,
}

impl Exchanges {
    pub fn new(connection: u64, now: Instant) -> Self {
        Exchanges {
            connection,
            mode: Mode::Undecided,
            guess: [0; HTTP_GUESS_BYTES],
            guess_len: 0,
            pending: VecDeque::with_capacity(2),
            next_sequence: 0,
            client_read: 0,
            upstream_read: 0,
            to_upstream: 0,
            to_upstream_at: now,
            to_client: 0,
            to_client_at: now,
            completed: 0,
            rtt: PathRtt::default(),
            framing_lost: None,
        }
    }

    /// Each leg's round trip, stamped on the exchanges completed from now on.
    pub fn set_path_rtt(&mut self, rtt: PathRtt) {
        self.rtt = rtt;
    }

    /// Exchanges relayed in full so far.
    pub fn completed(&self) -> u32 {
        self.completed
    }

    /// How exchanges are told apart; `None` until the client's first bytes decide.
    pub fn framing(&self) -> Option<Framing> {
        match self.mode {
            Mode::Undecided => None,
            Mode::Http(_) => Some(Framing::Http),
            Mode::Turns if self.framing_lost.is_some() => Some(Framing::Http),
            Mode::Turns => Some(Framing::Turns),
        }
    }

    /// The upstream's first HTTP `Server` header (printable ASCII), naming its stack.
    pub fn server_header(&self) -> Option<&str> {
        match &self.mode {
            Mode::Http(framers) => framers.response.server_header(),
            Mode::Undecided | Mode::Turns => None,
        }
    }

    /// Why HTTP framing was given up on this connection, if it was.
    pub fn framing_lost(&self) -> Option<&str> {
        self.framing_lost.as_deref()
    }

    /// The framing of the exchanges emitted now.
    fn current_framing(&self) -> Framing {
        if matches!(self.mode, Mode::Http(_)) { Framing::Http } else { Framing::Turns }
    }

    /// `data` was read from the client at `at`.
    pub fn client_read(&mut self, at: Instant, data: &[u8], sink: &mut impl RelaySink) {
        let offset = self.client_read;
        self.client_read += data.len() as u64;
        if let Mode::Undecided = self.mode {
            let take = data.len().min(HTTP_GUESS_BYTES - self.guess_len);
            let earlier = self.guess_len;
            self.guess[earlier..earlier + take].copy_from_slice(&data[..take]);
            self.guess_len += take;
            match guess_http_request(&self.guess[..self.guess_len]) {
                Some(true) => {
                    self.mode = Mode::Http(Box::new(HttpFramers {
                        request: RequestFramer::new(MAX_HEAD_BYTES),
                        response: ResponseParser::new(false, MAX_HEAD_BYTES, u64::MAX),
                    }));
                    // Bytes of earlier reads were timed then; the framer sees them first.
                    let guess = self.guess;
                    self.request_bytes(at, &guess[..earlier], offset - earlier as u64, false, sink);
                    return self.request_bytes(at, data, offset, true, sink);
                }
                Some(false) => self.mode = Mode::Turns,
                None => {}
            }
        }
        match self.mode {
            Mode::Http(_) => self.request_bytes(at, data, offset, true, sink),
            Mode::Undecided | Mode::Turns => self.turn_request_bytes(at, data.len(), sink),
        }
    }

    /// The relay stopped reading one side for a while because the other side's buffer was
    /// full (backpressure), and reads it again at `at`: the time it was held back is the
    /// relay's, not a pause of the sender's, so the message in progress restarts its clock.
    pub fn resumed_after_backpressure(&mut self, from_upstream: bool, at: Instant) {
        for pending in self.pending.iter_mut() {
            let in_progress = if from_upstream {
                pending.response_end.is_none().then_some(pending.response.as_mut()).flatten()
            } else {
                pending.request_end.is_none().then_some(&mut pending.request)
            };
            if let Some(reads) = in_progress {
                reads.last = reads.last.max(at);
            }
        }
    }

    /// `bytes` of the client's stream were written to the upstream at `at`.
    pub fn upstream_written(&mut self, at: Instant, bytes: usize) {
        self.to_upstream += bytes as u64;
        self.to_upstream_at = at;
        for pending in self.pending.iter_mut() {
            if pending.forwarded.is_none() && pending.request_end.is_some_and(|end| end <= self.to_upstream) {
                pending.forwarded = Some(at);
            }
        }
    }

    /// `data` was read from the upstream at `at`.
    pub fn upstream_read(&mut self, at: Instant, data: &[u8], sink: &mut impl RelaySink) {
        let offset = self.upstream_read;
        self.upstream_read += data.len() as u64;
        match self.mode {
            Mode::Http(_) => self.response_bytes(at, data, offset, sink),
            // A greeting before the client said anything belongs to no exchange.
            Mode::Undecided if self.pending.is_empty() => {}
            Mode::Undecided | Mode::Turns => {
                self.mode = Mode::Turns;
                self.turn_response_bytes(at, data.len());
            }
        }
    }

    /// `bytes` of the upstream's stream were written to the client at `at`.
    pub fn client_written(&mut self, at: Instant, bytes: usize, sink: &mut impl RelaySink) {
        self.to_client += bytes as u64;
        self.to_client_at = at;
        for pending in self.pending.iter_mut() {
            if pending.delivered.is_none() && pending.response_end.is_some_and(|end| end <= self.to_client) {
                pending.delivered = Some(at);
            }
        }
        self.emit_ready(sink);
    }

    /// The upstream closed its direction: a response framed by the close is complete (and
    /// emitted if all of it was delivered already).
    pub fn upstream_closed(&mut self, sink: &mut impl RelaySink) {
        let (end, to_client, to_client_at) = (self.upstream_read, self.to_client, self.to_client_at);
        let Some(pending) =
            self.pending.iter_mut().find(|p| p.response.is_some() && p.response_end.is_none())
        else {
            return;
        };
        let complete = match &mut self.mode {
            Mode::Http(framers) => framers.response.finish().is_ok(),
            Mode::Undecided | Mode::Turns => true,
        };
        if complete {
            pending.response_end = Some(end);
            if to_client >= end {
                pending.delivered = Some(to_client_at);
            }
        }
        self.emit_ready(sink);
    }

    /// The connection ends: what was delivered in full is emitted, the rest is incomplete.
    pub fn finish(&mut self, why: Unfinished, sink: &mut impl RelaySink) {
        if !matches!(self.mode, Mode::Http(_))
            && let Some(last) = self.pending.back_mut()
            && last.response.is_some()
            && last.response_end.is_none()
            && self.to_client == self.upstream_read
        {
            // Turns: a response whose every byte was delivered ends with its connection.
            last.response_end = Some(self.upstream_read);
            last.delivered = Some(self.to_client_at);
        }
        self.emit_ready(sink);
        for pending in self.pending.drain(..) {
            sink.incomplete(&IncompleteRecord {
                connection: self.connection,
                sequence: pending.sequence,
                why,
            });
        }
    }

    /// HTTP request bytes: each completes the open request or starts the next one.
    fn request_bytes(
        &mut self,
        at: Instant,
        data: &[u8],
        offset: u64,
        timed: bool,
        sink: &mut impl RelaySink,
    ) {
        let mut pos = 0;
        while pos < data.len() {
            let Mode::Http(framers) = &mut self.mode else {
                return self.turn_request_bytes(at, data.len() - pos, sink);
            };
            let open = self.pending.back().is_some_and(|p| p.request_end.is_none());
            if !open && self.pending.len() >= MAX_IN_FLIGHT {
                self.lose(format!("more than {MAX_IN_FLIGHT} pipelined requests in flight"), sink);
                continue;
            }
            let (used, complete) = match framers.request.feed(&data[pos..]) {
                Ok(Feed::Partial) => (data.len() - pos, false),
                Ok(Feed::Complete { used }) => (used, true),
                Err(e) => {
                    self.lose(format!("the client's request: {e}"), sink);
                    continue;
                }
            };
            let kind = framers.request.kind();
            if complete {
                framers.request.reset();
            }
            if !open {
                self.open(at, used);
            } else if timed {
                self.pending.back_mut().expect("open").request.add(at, used);
            }
            pos += used;
            if complete {
                let pending = self.pending.back_mut().expect("open");
                pending.request_end = Some(offset + pos as u64);
                pending.head = kind.head;
                if kind.connect {
                    // A tunnel after its response: the rest is timed in turns.
                    self.mode = Mode::Turns;
                }
            }
        }
    }

    /// HTTP response bytes: each belongs to the oldest request without a complete response.
    fn response_bytes(&mut self, at: Instant, data: &[u8], offset: u64, sink: &mut impl RelaySink) {
        let mut pos = 0;
        while pos < data.len() {
            let Mode::Http(framers) = &mut self.mode else {
                return self.turn_response_bytes(at, data.len() - pos);
            };
            let Some(pending) = self.pending.iter_mut().find(|p| p.response_end.is_none()) else {
                self.lose(
                    format!("{} bytes from the upstream that answer no request", data.len() - pos),
                    sink,
                );
                return;
            };
            if pending.response.is_none() {
                framers.response.reset_for(pending.head);
            }
            let (used, complete) = match framers.response.feed(&data[pos..]) {
                Ok(Feed::Partial) => (data.len() - pos, false),
                Ok(Feed::Complete { used }) => (used, true),
                Err(e) => {
                    self.lose(format!("the upstream's response: {e}"), sink);
                    return;
                }
            };
            match &mut pending.response {
                Some(reads) => reads.add(at, used),
                None => pending.response = Some(Reads::start(at, used)),
            }
            pos += used;
            if complete {
                pending.response_end = Some(offset + pos as u64);
                pending.status = framers.response.status();
            }
        }
    }

    /// Turns: client bytes continue the request until the upstream has answered it.
    fn turn_request_bytes(&mut self, at: Instant, bytes: usize, sink: &mut impl RelaySink) {
        match self.pending.back_mut() {
            Some(last) if last.response.is_none() => last.request.add(at, bytes),
            last => {
                // The client speaks again: the upstream's turn is over.
                if let Some(last) = last
                    && last.response_end.is_none()
                {
                    last.response_end = Some(self.upstream_read);
                    if self.to_client >= self.upstream_read {
                        last.delivered = Some(self.to_client_at);
                    }
                }
                self.emit_ready(sink);
                if self.pending.len() >= MAX_IN_FLIGHT {
                    self.lose(format!("more than {MAX_IN_FLIGHT} turns in flight"), sink);
                }
                self.open(at, bytes);
            }
        }
    }

    /// Turns: upstream bytes answer the client's last turn.
    fn turn_response_bytes(&mut self, at: Instant, bytes: usize) {
        let (client_read, to_upstream, to_upstream_at) =
            (self.client_read, self.to_upstream, self.to_upstream_at);
        match self.pending.back_mut() {
            // Bytes nobody asked for (a greeting, or the rest of an untimed exchange).
            None => {}
            Some(last) if last.response.is_none() => {
                // Everything the client sent so far was this request.
                let end = *last.request_end.get_or_insert(client_read);
                if last.forwarded.is_none() && to_upstream >= end {
                    last.forwarded = Some(to_upstream_at);
                }
                last.response = Some(Reads::start(at, bytes));
            }
            Some(last) => last.response.as_mut().expect("started").add(at, bytes),
        }
    }

    /// A new exchange whose request's first read, at `at`, brought `bytes` of it.
    fn open(&mut self, at: Instant, bytes: usize) {
        self.pending.push_back(Pending {
            sequence: self.next_sequence,
            request: Reads::start(at, bytes),
            request_end: None,
            forwarded: None,
            response: None,
            response_end: None,
            delivered: None,
            head: false,
            status: 0,
        });
        self.next_sequence += 1;
    }

    /// Emits the exchanges at the front that are complete, in order.
    fn emit_ready(&mut self, sink: &mut impl RelaySink) {
        let framing = self.current_framing();
        while let Some(record) =
            self.pending.front().and_then(|p| p.record(self.connection, framing, self.rtt))
        {
            self.pending.pop_front();
            self.completed += 1;
            sink.exchange(&record);
        }
    }

    /// HTTP framing cannot be followed: the exchanges in flight are untimed, and the rest of
    /// the connection is timed in turns.
    fn lose(&mut self, why: String, sink: &mut impl RelaySink) {
        self.framing_lost.get_or_insert(why);
        self.mode = Mode::Turns;
        for pending in self.pending.drain(..) {
            let record = IncompleteRecord {
                connection: self.connection,
                sequence: pending.sequence,
                why: Unfinished::Untimed,
            };
            sink.incomplete(&record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::CollectingSink;
    use std::time::Duration;

    /// A connection driven by a script of reads and writes at given milliseconds.
    struct Script {
        exchanges: Exchanges,
        sink: CollectingSink,
        t0: Instant,
    }

    impl Script {
        fn new() -> Self {
            let t0 = Instant::now();
            Script { exchanges: Exchanges::new(1, t0), sink: CollectingSink::default(), t0 }
        }
        fn at(&self, ms: f64) -> Instant {
            self.t0 + Duration::from_secs_f64(ms / 1e3)
        }
        /// The client sends `data`, which the relay forwards at once.
        fn client(&mut self, ms: f64, data: &[u8]) -> &mut Self {
            let at = self.at(ms);
            self.exchanges.client_read(at, data, &mut self.sink);
            self.exchanges.upstream_written(at, data.len());
            self
        }
        /// The upstream sends `data`, which the relay delivers at once.
        fn upstream(&mut self, ms: f64, data: &[u8]) -> &mut Self {
            let at = self.at(ms);
            self.exchanges.upstream_read(at, data, &mut self.sink);
            self.exchanges.client_written(at, data.len(), &mut self.sink);
            self
        }
        fn ms(&self, at: Instant) -> f64 {
            (at - self.t0).as_secs_f64() * 1e3
        }
    }

    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";

    #[test]
    fn a_wait_the_relay_imposed_for_room_is_no_pause_of_the_sender() {
        let mut s = Script::new();
        s.client(0.0, GET).upstream(0.2, HEAD);
        // The client's buffer was full: the relay read the upstream again 43.7 ms later.
        let resumed = s.at(43.9);
        s.exchanges.resumed_after_backpressure(true, resumed);
        s.upstream(43.9, b"hello");
        let first = &s.sink.exchanges[0];
        assert_eq!(first.response.max_gap, Duration::ZERO, "{first:?}");
    }

    #[test]
    fn an_http_response_paused_mid_way_is_one_exchange_with_its_gap() {
        let mut s = Script::new();
        s.client(0.0, GET).upstream(0.2, HEAD).upstream(43.9, b"hello");
        s.client(44.0, GET).upstream(44.1, HEAD).upstream(44.2, b"hello");
        let records = &s.sink.exchanges;
        assert_eq!(records.len(), 2);
        let first = &records[0];
        assert_eq!((first.sequence, first.framing, first.status), (0, Framing::Http, 200));
        assert_eq!((first.response.reads, first.response.bytes), (2, HEAD.len() as u64 + 5));
        assert_eq!(first.response.bytes_before_max_gap, HEAD.len() as u64);
        assert!((first.response.max_gap.as_secs_f64() * 1e3 - 43.7).abs() < 1e-6);
        assert!((s.ms(first.forwarded) - 0.0).abs() < 1e-9 && (s.ms(first.delivered) - 43.9).abs() < 1e-9);
        assert_eq!(records[1].sequence, 1);
        assert_eq!(s.exchanges.completed(), 2);
        assert_eq!(s.exchanges.server_header(), None, "the upstream sent none");
    }

    #[test]
    fn a_request_in_two_pieces_shows_the_pause_on_the_client_leg() {
        let mut s = Script::new();
        let post = b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n";
        s.client(0.0, post).client(40.5, b"body").upstream(40.7, HEAD).upstream(40.7, b"hello");
        let record = &s.sink.exchanges[0];
        assert_eq!((record.request.reads, record.request.bytes), (2, post.len() as u64 + 4));
        assert!((record.request.max_gap.as_secs_f64() * 1e3 - 40.5).abs() < 1e-6);
        assert!((s.ms(record.forwarded) - 40.5).abs() < 1e-9, "forwarded with its last byte");
    }

    #[test]
    fn pipelined_requests_and_a_head_request_are_framed_in_order() {
        let mut s = Script::new();
        let head = b"HEAD / HTTP/1.1\r\n\r\n";
        s.client(0.0, &[GET, head, GET].concat());
        s.upstream(1.0, &[HEAD, b"hello", HEAD].concat()).upstream(2.0, &[HEAD, b"hel"].concat());
        assert_eq!(s.sink.exchanges.len(), 2, "the third response is not complete");
        s.upstream(3.0, b"lo");
        let sequences: Vec<u32> = s.sink.exchanges.iter().map(|r| r.sequence).collect();
        assert_eq!(sequences, [0, 1, 2]);
        assert_eq!(s.sink.exchanges[1].response.bytes, HEAD.len() as u64, "HEAD's response has no body");
    }

    #[test]
    fn a_response_is_complete_only_once_delivered() {
        let mut s = Script::new();
        s.client(0.0, GET);
        let at = s.at(1.0);
        s.exchanges.upstream_read(at, &[HEAD, b"hello"].concat(), &mut s.sink);
        s.exchanges.client_written(at, 10, &mut s.sink);
        assert!(s.sink.exchanges.is_empty());
        s.exchanges.client_written(s.at(2.5), HEAD.len() + 5 - 10, &mut s.sink);
        assert!((s.ms(s.sink.exchanges[0].delivered) - 2.5).abs() < 1e-9);
        assert_eq!(s.sink.exchanges[0].client_leg(), Duration::from_micros(1500));
    }

    #[test]
    fn other_protocols_take_turns() {
        let mut s = Script::new();
        // A greeting first, then a length-prefixed request in two pieces, then the answer in two.
        s.upstream(0.0, b"+OK ready\r\n");
        s.client(1.0, b"\x00\x00\x00\x05")
            .client(41.0, b"hello")
            .upstream(41.2, b"+O")
            .upstream(41.3, b"K\r\n");
        s.client(50.0, b"\x00\x00\x00\x01x");
        assert_eq!(s.sink.exchanges.len(), 1, "the first turn ended when the client spoke again");
        let record = &s.sink.exchanges[0];
        assert_eq!(record.framing, Framing::Turns);
        assert_eq!((record.request.bytes, record.response.bytes), (9, 5));
        assert!((record.request.max_gap.as_secs_f64() * 1e3 - 40.0).abs() < 1e-6);
        assert!((s.ms(record.forwarded) - 41.0).abs() < 1e-9 && (s.ms(record.delivered) - 41.3).abs() < 1e-9);
        // The upstream's end ends the last turn, all of it delivered already.
        s.upstream(50.5, b"+OK\r\n");
        s.exchanges.upstream_closed(&mut s.sink);
        assert_eq!(s.sink.exchanges.len(), 2);
        s.exchanges.finish(Unfinished::ClientGone, &mut s.sink);
        assert!(s.sink.incomplete.is_empty());
        // Without it, the last turn ends with the connection once all of it was delivered.
        let mut s = Script::new();
        s.client(1.0, b"ping").upstream(1.5, b"pong");
        s.exchanges.finish(Unfinished::ClientGone, &mut s.sink);
        assert_eq!(s.sink.exchanges.len(), 1);
        assert!(s.sink.incomplete.is_empty());
        assert_eq!(s.exchanges.framing(), Some(Framing::Turns));
    }

    #[test]
    fn a_short_first_read_waits_for_the_bytes_that_decide() {
        let mut s = Script::new();
        s.client(0.0, b"GE").client(0.1, &GET[2..]).upstream(0.3, &[HEAD, b"hello"].concat());
        assert_eq!(s.sink.exchanges.len(), 1);
        assert_eq!(s.sink.exchanges[0].framing, Framing::Http);
        assert_eq!(
            (s.sink.exchanges[0].request.reads, s.sink.exchanges[0].request.bytes),
            (2, GET.len() as u64)
        );
    }

    #[test]
    fn what_the_client_left_unanswered_is_incomplete() {
        let mut s = Script::new();
        s.client(0.0, GET).upstream(1.0, HEAD);
        s.exchanges.finish(Unfinished::ClientGone, &mut s.sink);
        assert!(s.sink.exchanges.is_empty());
        assert_eq!(s.sink.incomplete.len(), 1);
        assert_eq!(s.sink.incomplete[0].why, Unfinished::ClientGone);
    }

    #[test]
    fn a_response_framed_by_the_close_completes_at_the_close() {
        let mut s = Script::new();
        s.client(0.0, GET).upstream(1.0, b"HTTP/1.0 200 OK\r\n\r\nall of it");
        assert!(s.sink.exchanges.is_empty());
        s.exchanges.upstream_closed(&mut s.sink);
        assert_eq!(s.sink.exchanges.len(), 1, "delivered before the close");
        assert!((s.ms(s.sink.exchanges[0].delivered) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn unframeable_http_continues_in_turns_and_counts_the_untimed() {
        let mut s = Script::new();
        s.client(0.0, GET).upstream(1.0, b"SSH-2.0-x\r\n\r\n");
        assert_eq!(s.sink.incomplete.len(), 1);
        assert_eq!(s.sink.incomplete[0].why, Unfinished::Untimed);
        assert!(s.exchanges.framing_lost().unwrap().contains("upstream's response"));
        s.client(2.0, b"x").upstream(3.0, b"y").client(4.0, b"z");
        assert_eq!(s.sink.exchanges.len(), 1);
        assert_eq!(s.sink.exchanges[0].framing, Framing::Turns);
        // A switch of protocols (101) leaves HTTP the same way.
        let mut s = Script::new();
        s.client(0.0, GET).upstream(1.0, b"HTTP/1.1 101 Switching Protocols\r\n\r\n");
        assert!(s.exchanges.framing_lost().is_some());
    }

    #[test]
    fn too_many_pipelined_requests_stop_the_timing_not_the_relay() {
        let mut s = Script::new();
        s.client(0.0, &GET.repeat(MAX_IN_FLIGHT + 1));
        assert_eq!(s.sink.incomplete.len(), MAX_IN_FLIGHT);
        assert!(s.exchanges.framing_lost().unwrap().contains("pipelined"));
    }
}
