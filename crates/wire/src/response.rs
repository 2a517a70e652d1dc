//! Incremental HTTP/1.1 response framing: head, then a body delimited by Content-Length,
//! chunked encoding, or connection close (RFC 9112 §6.3).
//!
//! The parser is fed each `read()` as it arrives and says when the final response is
//! complete. Body bytes are counted, never stored; only an incomplete head is buffered, up to
//! a limit, so a server sending a 10 MB header costs at most that limit.
//!
//! Limits are checked byte by byte, so a response fails or completes at the same byte however
//! reads split it: the head limit on the first byte past it (httparse never sees further), the
//! response limit on the first byte past it, or as soon as a head's Content-Length says the
//! response will be larger. Interim (1xx) heads count towards the response limit.
//!
//! A status outside 100-599 is a malformed response (RFC 9110 §15 defines no class for it),
//! not a completed one: it would otherwise be counted yet appear in no status class.

use crate::chunked::{ChunkedDecoder, ChunkedError};
use thiserror::Error;

/// How many headers one response may carry.
const MAX_HEADERS: usize = 100;

/// Why a response could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResponseError {
    /// httparse rejected the response head.
    #[error("invalid response head: {0}")]
    InvalidHead(httparse::Error),
    /// The head passed the limit without ending.
    #[error("response head larger than {limit} bytes")]
    HeadTooLarge {
        /// Longest head accepted, in bytes.
        limit: usize,
    },
    /// A `Content-Length` that is not a number, or two that differ.
    #[error("invalid Content-Length header")]
    InvalidContentLength,
    /// The chunked body is malformed.
    #[error("invalid chunked body: {0}")]
    Chunked(#[from] ChunkedError),
    /// The connection closed before the response was complete.
    #[error("connection closed before the response was complete")]
    ClosedEarly,
    /// A response the framer cannot follow (101 Switching Protocols); the text names it.
    #[error("{0} is not supported")]
    Unsupported(&'static str),
    /// The response passed the limit, or its `Content-Length` or length prefix says it will.
    #[error("response larger than {limit} bytes")]
    TooLarge {
        /// Bound on one response, in bytes.
        limit: u64,
    },
    /// A length prefix that cannot frame a response.
    #[error("length prefix {length} is {reason}")]
    BadLengthPrefix {
        /// The length the prefix says, in bytes.
        length: u64,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// A status outside 100-599.
    #[error("status {0} is outside 100-599")]
    StatusOutOfRange(u16),
}

impl ResponseError {
    /// The peer hung up rather than sending bytes that break the protocol.
    pub fn is_closed_early(&self) -> bool {
        matches!(self, ResponseError::ClosedEarly)
    }
}

/// Result of feeding bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// The final response is not complete yet; all bytes were consumed.
    Partial,
    /// The final response ended after `used` bytes of this input.
    Complete {
        /// Bytes of this input that belonged to the response.
        used: usize,
    },
}

#[derive(Debug, Clone)]
enum Body {
    Head,
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
    Done,
}

/// Framing facts read from one response head.
#[derive(Debug, Clone)]
struct HeadInfo {
    status: u16,
    close: bool,
    chunked: bool,
    content_length: Option<u64>,
    /// A Transfer-Encoding header was present (chunked last or not).
    transfer_encoded: bool,
    /// The `Server` header, when asked for (printable ASCII only, bounded).
    server: Option<String>,
}

/// Longest `Server` value kept: enough for any product token and version.
const MAX_SERVER_HEADER_CHARS: usize = 128;

/// Longest head remembered for reuse: room for the usual server's head, bounded so that a
/// connection keeps at most 1 KiB more (the buffer's capacity may double past it once).
const MAX_REMEMBERED_HEAD_BYTES: usize = 512;

/// The last head this parser parsed whole, and what it said. A keep-alive server sends the
/// same head byte for byte until its Date header ticks, so a head that begins the next read
/// again is known without parsing: where a head ends and what it says depend on its bytes
/// alone (httparse reads nothing past the head's last byte). Against nginx, httparse and
/// reading the head's facts were 3.8 % of `bench --io-uring`'s CPU, two fifths of its user
/// space; the comparison that replaces them, 0.5 % (perf record). A server whose head changes
/// every time pays the comparison up to the first difference and a copy of the head.
#[derive(Debug, Clone, Default)]
struct RememberedHead {
    bytes: Vec<u8>,
    /// Without its `Server` value: see `recall`.
    info: Option<HeadInfo>,
}

impl RememberedHead {
    /// What the head at the start of `data` says, when it is the remembered one. Its `Server`
    /// value is never needed: a head that had one gave it to the parser, which keeps the first
    /// it sees and asks no more.
    fn recall(&self, data: &[u8]) -> Option<(usize, HeadInfo)> {
        let info = self.info.as_ref()?;
        let head = data.get(..self.bytes.len())?;
        (head == self.bytes.as_slice()).then_some((head.len(), HeadInfo { server: None, ..*info }))
    }

    fn remember(&mut self, head: &[u8], info: &HeadInfo) {
        self.info = None;
        if head.len() <= MAX_REMEMBERED_HEAD_BYTES {
            self.bytes.clear();
            self.bytes.extend_from_slice(head);
            self.info = Some(HeadInfo { server: None, ..*info });
        }
    }
}

/// Where each HTTP/1.1 response on one connection ends, fed read by read; it also keeps the
/// status, whether the server will close, and the first `Server` header.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    /// An incomplete head carried across reads (empty in the common one-read case).
    head_buf: Vec<u8>,
    body: Body,
    max_head_bytes: usize,
    /// Bound on head and body bytes of one response, interim heads included.
    max_response_bytes: u64,
    request_was_head: bool,
    status: u16,
    close: bool,
    /// Bytes of this response consumed so far.
    seen_bytes: u64,
    /// The first `Server` header this parser saw: kept across responses, so it is copied
    /// once per connection slot, not per response. It names the stack for the doctor.
    server: Option<String>,
    remembered: RememberedHead,
}

impl ResponseParser {
    /// `request_was_head`: the request was HEAD, so the response has no body whatever its
    /// headers say. `max_response_bytes`: `u64::MAX` for no bound.
    pub fn new(request_was_head: bool, max_head_bytes: usize, max_response_bytes: u64) -> Self {
        ResponseParser {
            head_buf: Vec::new(),
            body: Body::Head,
            max_head_bytes,
            max_response_bytes,
            request_was_head,
            status: 0,
            close: false,
            seen_bytes: 0,
            server: None,
            remembered: RememberedHead::default(),
        }
    }

    /// Ready for the next response, to a request that was HEAD (`no_body`) or not.
    pub fn reset_for(&mut self, no_body: bool) {
        self.request_was_head = no_body;
        self.reset();
    }

    /// Ready for the next response on the same connection (keeps buffer capacity).
    pub fn reset(&mut self) {
        self.head_buf.clear();
        self.body = Body::Head;
        self.status = 0;
        self.close = false;
        self.seen_bytes = 0;
    }

    /// The first `Server` header seen on this parser, printable ASCII only.
    pub fn server_header(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// Status of the final response (0 until its head is parsed).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The server will close (or already framed the body by closing): do not reuse.
    pub fn wants_close(&self) -> bool {
        self.close
    }

    /// Whether any byte of this response has arrived.
    pub fn has_started(&self) -> bool {
        self.seen_bytes > 0
    }

    /// Consumes the bytes of one read; see the module doc for where limits decide.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        let too_large = ResponseError::TooLarge { limit: self.max_response_bytes };
        let mut pos = 0;
        loop {
            if matches!(self.body, Body::Done) {
                return Ok(Feed::Complete { used: pos });
            }
            let rest = &data[pos..];
            if rest.is_empty() {
                return Ok(Feed::Partial);
            }
            let budget = self.max_response_bytes.saturating_sub(self.seen_bytes);
            if budget == 0 {
                return Err(too_large);
            }
            // Never look past the limit, so a whole read decides like byte-by-byte reads.
            let window = &rest[..usize::try_from(budget).map_or(rest.len(), |b| b.min(rest.len()))];
            let used = match &mut self.body {
                Body::Head => {
                    let used = self.parse_head(window)?;
                    // A known length decides at the end of the head, before the body arrives.
                    let head_end = self.seen_bytes + used as u64;
                    if let Body::Length(length) = self.body
                        && head_end.saturating_add(length) > self.max_response_bytes
                    {
                        return Err(too_large);
                    }
                    used
                }
                Body::Length(remaining) => {
                    let take = window.len().min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.body = Body::Done;
                    }
                    take
                }
                Body::Chunked(decoder) => {
                    let used = decoder.feed(window)?;
                    if decoder.is_done() {
                        self.body = Body::Done;
                    }
                    used
                }
                Body::UntilClose => window.len(),
                Body::Done => 0,
            };
            self.seen_bytes += used as u64;
            pos += used;
        }
    }

    /// The peer closed the connection: completes a close-delimited body, otherwise an error.
    pub fn finish(&mut self) -> Result<(), ResponseError> {
        match self.body {
            Body::UntilClose | Body::Done => {
                self.body = Body::Done;
                Ok(())
            }
            _ => Err(ResponseError::ClosedEarly),
        }
    }

    /// Parses a head from buffered plus new bytes; returns how many of `data` it used (all of
    /// them while the head is incomplete).
    fn parse_head(&mut self, data: &[u8]) -> Result<usize, ResponseError> {
        let carried = self.head_buf.len();
        // httparse sees at most max_head_bytes, so a bad byte past the limit cannot decide
        // the error in one read when the byte past the limit does in another.
        let take = data.len().min(self.max_head_bytes.saturating_sub(carried));
        let want_server = self.server.is_none();
        let parsed = if carried == 0 {
            match self.remembered.recall(&data[..take]) {
                Some(recalled) => Some(recalled),
                None => {
                    let parsed = parse_head_info(&data[..take], want_server)?;
                    if let Some((head_len, info)) = &parsed {
                        self.remembered.remember(&data[..*head_len], info);
                    }
                    parsed
                }
            }
        } else {
            self.head_buf.extend_from_slice(&data[..take]);
            parse_head_info(&self.head_buf, want_server)?
        };
        let Some((head_len, info)) = parsed else {
            if take < data.len() {
                return Err(ResponseError::HeadTooLarge { limit: self.max_head_bytes });
            }
            if carried == 0 {
                self.head_buf.extend_from_slice(data);
            }
            return Ok(data.len());
        };
        self.head_buf.clear();
        // The carried bytes parsed as incomplete, so the head ends in `data`.
        let used = head_len.saturating_sub(carried);
        self.apply_head(info)?;
        Ok(used)
    }

    fn apply_head(&mut self, info: HeadInfo) -> Result<(), ResponseError> {
        if self.server.is_none() {
            self.server = info.server;
        }
        match info.status {
            // httparse takes any three digits.
            0..=99 | 600.. => return Err(ResponseError::StatusOutOfRange(info.status)),
            101 => return Err(ResponseError::Unsupported("101 Switching Protocols")),
            // Interim responses: the final one follows on the same connection.
            100..=199 => return Ok(()),
            _ => {}
        }
        self.status = info.status;
        self.close = info.close;
        self.body = if self.request_was_head || info.status == 204 || info.status == 304 {
            Body::Done
        } else if info.chunked {
            Body::Chunked(ChunkedDecoder::new())
        } else if info.transfer_encoded {
            // RFC 9112 §6.3: chunked is not the final coding, so the body ends at close,
            // whatever a Content-Length says.
            self.close = true;
            Body::UntilClose
        } else if let Some(length) = info.content_length {
            if length == 0 { Body::Done } else { Body::Length(length) }
        } else {
            self.close = true;
            Body::UntilClose
        };
        Ok(())
    }
}

/// A header value safe to print: printable ASCII (a terminal escape or a newline becomes '?'),
/// at most `MAX_SERVER_HEADER_CHARS`.
fn printable(value: &[u8]) -> String {
    value
        .trim_ascii()
        .iter()
        .take(MAX_SERVER_HEADER_CHARS)
        .map(|&b| if b == b' ' || b.is_ascii_graphic() { b as char } else { '?' })
        .collect()
}

fn parse_head_info(bytes: &[u8], want_server: bool) -> Result<Option<(usize, HeadInfo)>, ResponseError> {
    // Uninitialised: httparse writes only the headers it finds, and zeroing all 100 slots
    // (3.2 KiB) cost a fifth of the parse of nginx's nine-header head.
    let mut headers = [std::mem::MaybeUninit::<httparse::Header>::uninit(); MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        bytes,
        &mut headers,
    );
    let head_len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ResponseError::InvalidHead(e)),
    };
    let http10 = response.version == Some(0);
    let mut info = HeadInfo {
        status: response.code.unwrap_or(0),
        close: http10,
        chunked: false,
        content_length: None,
        transfer_encoded: false,
        server: None,
    };
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(header.value).map_err(|_| ResponseError::InvalidContentLength)?;
            // 1*DIGIT (RFC 9110 §8.6): u64's parser would also take "+5".
            let text = text.trim();
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ResponseError::InvalidContentLength);
            }
            let length: u64 = text.parse().map_err(|_| ResponseError::InvalidContentLength)?;
            if info.content_length.is_some_and(|earlier| earlier != length) {
                return Err(ResponseError::InvalidContentLength);
            }
            info.content_length = Some(length);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked frames the body only when it is the last coding applied.
            let last = header.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            info.chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
            info.transfer_encoded = true;
        } else if want_server && info.server.is_none() && header.name.eq_ignore_ascii_case("server") {
            info.server = Some(printable(header.value));
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    info.close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                    info.close = false;
                }
            }
        }
    }
    Ok(Some((head_len, info)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framer::{ResponseFramer, outcomes_in_pieces};

    const LIMIT: usize = 64 * 1024;

    /// Feeds `bytes` in pieces of `piece` bytes; returns the outcome and total bytes used.
    fn run(bytes: &[u8], piece: usize, head_request: bool) -> (Result<Feed, ResponseError>, usize) {
        let mut parser = ResponseParser::new(head_request, LIMIT, u64::MAX);
        let mut used = 0;
        for part in bytes.chunks(piece) {
            match parser.feed(part) {
                Ok(Feed::Partial) => used += part.len(),
                Ok(Feed::Complete { used: n }) => return (Ok(Feed::Complete { used: n }), used + n),
                Err(e) => return (Err(e), used),
            }
        }
        (Ok(Feed::Partial), used)
    }

    /// Every response in `bytes` fed in pieces of `piece` bytes, resetting after each: the
    /// total offset at which each completed, then the error, or what `finish` says when the
    /// input ran out mid-response.
    fn outcomes(
        bytes: &[u8],
        piece: usize,
        head_request: bool,
        max_head: usize,
        max_response: u64,
    ) -> Vec<Result<usize, ResponseError>> {
        let framer = ResponseFramer::Http(ResponseParser::new(head_request, max_head, max_response));
        outcomes_in_pieces(framer, head_request, bytes, piece, true)
    }

    #[test]
    fn max_response_holds_however_the_response_is_split() {
        let mut body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        body.resize(2002, b'x');
        let too_large = [Err(ResponseError::TooLarge { limit: 100 })];
        for piece in [1, 7, 100, 2002] {
            assert_eq!(outcomes(&body, piece, false, LIMIT, 100), too_large, "piece {piece}");
        }
        assert_eq!(outcomes(&body, 2002, false, LIMIT, 2002), [Ok(2002)]);
        // A known Content-Length fails as soon as the head is parsed, body or not.
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 90\r\n\r\n";
        assert_eq!(outcomes(head, head.len(), false, LIMIT, 100), too_large);
        assert_eq!(outcomes(head, head.len(), true, LIMIT, 100), [Ok(head.len())]);
        // Chunked bodies and interim heads count too.
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n";
        let mut chunked = chunked.to_vec();
        chunked.resize(120, b'y');
        assert_eq!(outcomes(&chunked, 1, false, LIMIT, 100), too_large);
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(10);
        assert_eq!(outcomes(&interim, 3, false, LIMIT, 100), too_large);
    }

    #[test]
    fn decides_identically_at_every_split() {
        let inputs: [&[u8]; 6] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 204 No\r\n\r\nHTTP/1.0 200 OK\r\n\r\nrest",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
            // Malformed past the head limit: a whole read must not see the bad byte first.
            b"HTTP/1.1 200 OK\r\n\x01X: y\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            b"HTTP/1.1 999 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rX",
        ];
        for input in inputs {
            for head_request in [false, true] {
                for max_head in [0, 10, 17, 18, 30, LIMIT] {
                    for max_response in [0, 5, 17, 18, 40, 60, 90, u64::MAX] {
                        let whole = outcomes(input, input.len(), head_request, max_head, max_response);
                        for piece in 1..input.len() {
                            let split = outcomes(input, piece, head_request, max_head, max_response);
                            let context = format!(
                                "{:?} head {max_head} response {max_response} piece {piece}",
                                input.escape_ascii().to_string()
                            );
                            assert_eq!(split, whole, "{context}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn content_length_completes_at_every_split() {
        let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!";
        for piece in 1..=bytes.len() {
            let (outcome, used) = run(bytes, piece, false);
            assert!(matches!(outcome, Ok(Feed::Complete { .. })), "piece {piece}");
            assert_eq!(used, bytes.len());
        }
    }

    #[test]
    fn chunked_body_and_trailing_bytes_reported() {
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nNEXT";
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(bytes), Ok(Feed::Complete { used: bytes.len() - 4 }));
        assert_eq!(parser.status(), 200);
        assert!(!parser.wants_close());
    }

    #[test]
    fn the_first_server_header_is_kept_printable_across_responses() {
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.server_header(), None);
        parser
            .feed(
                b"HTTP/1.1 200 OK\r\nServer: BaseHTTP/0.6 Python/3.12 \xe9t\xe9\r\nContent-Length: 0\r\n\r\n",
            )
            .unwrap();
        assert_eq!(parser.server_header(), Some("BaseHTTP/0.6 Python/3.12 ?t?"));
        parser.reset();
        parser.feed(b"HTTP/1.1 200 OK\r\nServer: other\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert_eq!(parser.server_header(), Some("BaseHTTP/0.6 Python/3.12 ?t?"), "kept, not copied again");
    }

    #[test]
    fn content_length_is_digits_and_a_final_coding_other_than_chunked_reads_to_close() {
        let plus = b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello";
        assert_eq!(run(plus, 100, false).0, Err(ResponseError::InvalidContentLength));
        let gzip = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nabcdef";
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(gzip), Ok(Feed::Partial), "not done after 2 bytes");
        assert!(parser.wants_close());
        assert_eq!(parser.finish(), Ok(()));
    }

    #[test]
    fn interim_responses_are_skipped() {
        let bytes = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(bytes), Ok(Feed::Complete { used: bytes.len() }));
        assert_eq!(parser.status(), 201);
    }

    #[test]
    fn no_body_for_head_204_304() {
        let with_length = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        assert_eq!(run(with_length, 1000, true).0, Ok(Feed::Complete { used: with_length.len() }));
        for status in ["204 No Content", "304 Not Modified"] {
            let bytes = format!("HTTP/1.1 {status}\r\nContent-Length: 99\r\n\r\n");
            assert_eq!(run(bytes.as_bytes(), 1000, false).0, Ok(Feed::Complete { used: bytes.len() }));
        }
    }

    #[test]
    fn close_delimited_body_ends_at_finish() {
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(b"HTTP/1.0 200 OK\r\n\r\nsome body"), Ok(Feed::Partial));
        assert!(parser.wants_close());
        assert_eq!(parser.finish(), Ok(()));
    }

    #[test]
    fn early_close_is_an_error() {
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), Ok(Feed::Partial));
        assert_eq!(parser.finish(), Err(ResponseError::ClosedEarly));
    }

    #[test]
    fn connection_close_and_http10_keep_alive() {
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        parser.feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(parser.wants_close());
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        parser.feed(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(!parser.wants_close());
    }

    #[test]
    fn garbage_and_bad_lengths_are_errors() {
        assert!(matches!(run(b"SSH-2.0-OpenSSH\r\n\r\n", 100, false).0, Err(ResponseError::InvalidHead(_))));
        let conflicting = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(run(conflicting, 100, false).0, Err(ResponseError::InvalidContentLength));
        let negative = b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n";
        assert_eq!(run(negative, 100, false).0, Err(ResponseError::InvalidContentLength));
    }

    #[test]
    fn status_outside_100_599_is_malformed() {
        for status in [0u16, 99, 600, 999] {
            let bytes = format!("HTTP/1.1 {status:03} X\r\nContent-Length: 0\r\n\r\n");
            assert_eq!(run(bytes.as_bytes(), 1000, false).0, Err(ResponseError::StatusOutOfRange(status)));
        }
        assert_eq!(ResponseError::StatusOutOfRange(999).to_string(), "status 999 is outside 100-599");
        for status in [100, 599] {
            let bytes = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            assert!(run(bytes.as_bytes(), 1000, false).0.is_ok(), "{status}");
        }
    }

    #[test]
    fn oversized_head_is_bounded() {
        let mut parser = ResponseParser::new(false, 1024, u64::MAX);
        let mut head = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        head.resize(600, b'a');
        assert_eq!(parser.feed(&head), Ok(Feed::Partial));
        assert_eq!(parser.feed(&[b'a'; 600]), Err(ResponseError::HeadTooLarge { limit: 1024 }));
    }

    #[test]
    fn a_remembered_head_is_recalled_only_byte_for_byte() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        let info = parse_head_info(head, true).unwrap().unwrap().1;
        let mut remembered = RememberedHead::default();
        remembered.remember(head, &info);
        let mut next = head.to_vec();
        next.extend_from_slice(b"hello");
        let (head_len, recalled) = remembered.recall(&next).expect("the same head again");
        assert_eq!((head_len, recalled.content_length, recalled.status), (head.len(), Some(5), 200));
        let other = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello!";
        assert!(remembered.recall(other).is_none(), "one byte differs");
        assert!(remembered.recall(&head[..head.len() - 1]).is_none(), "not all of it yet");
        let long = [head.as_slice(), &[b'x'; MAX_REMEMBERED_HEAD_BYTES]].concat();
        remembered.remember(&long, &info);
        assert!(remembered.recall(&long).is_none(), "too long to keep");
    }

    #[test]
    fn the_parser_recalls_a_repeated_head_instead_of_parsing_it() {
        let response = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        assert_eq!(parser.feed(response), Ok(Feed::Complete { used: response.len() }));
        // Told a different length than the head says, the parser frames by what it was told
        // only if it recalls rather than parses.
        parser.remembered.info.as_mut().unwrap().content_length = Some(2);
        parser.reset();
        assert_eq!(parser.feed(response), Ok(Feed::Complete { used: response.len() - 3 }));
    }

    #[test]
    fn repeated_heads_frame_as_when_each_is_parsed() {
        // The same head again, then heads that differ from it in one byte (the length, the
        // Connection header), a HEAD-less 204 and a Server header arriving later: whole, each
        // head after the first is recalled; byte by byte, every one is parsed.
        let ok = "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 5\r\n\r\nhello";
        let stream = [
            ok,
            ok,
            "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 6\r\n\r\nhello!",
            "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 6\r\n\r\nhello!",
            "HTTP/1.1 200 OK\r\nServer: late\r\nContent-Length: 2\r\n\r\nhi",
            "HTTP/1.1 200 OK\r\nServer: late\r\nContent-Length: 2\r\n\r\nhi",
            "HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n",
            "HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
        ]
        .concat();
        let whole = outcomes(stream.as_bytes(), stream.len(), false, LIMIT, u64::MAX);
        assert_eq!(whole.len(), 9, "{whole:?}");
        assert!(whole.iter().all(Result::is_ok), "{whole:?}");
        assert_eq!(whole, outcomes(stream.as_bytes(), 1, false, LIMIT, u64::MAX));
        let mut parser = ResponseParser::new(false, LIMIT, u64::MAX);
        for response in [ok, ok] {
            assert_eq!(parser.feed(response.as_bytes()), Ok(Feed::Complete { used: response.len() }));
            assert!(!parser.wants_close());
            parser.reset();
        }
        let closing = "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
        parser.feed(closing.as_bytes()).unwrap();
        assert!(parser.wants_close(), "a longer head that begins like the remembered one");
        assert_eq!(parser.server_header(), None);
        for _ in 0..2 {
            parser.reset();
            parser.feed(b"HTTP/1.1 200 OK\r\nServer: late\r\nContent-Length: 0\r\n\r\n").unwrap();
            assert_eq!(parser.server_header(), Some("late"));
        }
        // A HEAD request's response to a remembered head still has no body.
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        parser.reset_for(false);
        assert_eq!(
            parser.feed(format!("{head}hello").as_bytes()),
            Ok(Feed::Complete { used: head.len() + 5 })
        );
        parser.reset_for(true);
        assert_eq!(parser.feed(head.as_bytes()), Ok(Feed::Complete { used: head.len() }));
    }
}
