//! Incremental HTTP/1.x request framing, for a relay that reads a client's bytes as they come:
//! where each request ends (RFC 9112 §6.3): the head, then a body delimited by chunked
//! encoding or Content-Length, none otherwise. Body bytes are counted, never stored; only an
//! incomplete head is buffered, up to a limit. The head limit decides at the first byte past
//! it, so a request fails or completes at the same byte however reads split it.
//!
//! [`guess_http_request`] tells from a connection's first bytes whether it speaks HTTP/1.x.

use crate::chunked::{ChunkedDecoder, ChunkedError};
use crate::response::Feed;
use thiserror::Error;

/// How many headers one request may carry.
const MAX_HEADERS: usize = 100;

/// Methods a client's first bytes are compared with, each followed by a space.
const METHODS: [&[u8]; 9] =
    [b"GET ", b"HEAD ", b"POST ", b"PUT ", b"DELETE ", b"CONNECT ", b"OPTIONS ", b"TRACE ", b"PATCH "];

/// Bytes [`guess_http_request`] needs at most to decide.
pub const HTTP_GUESS_BYTES: usize = 8;

/// Whether a connection whose client sent `first_bytes` first speaks HTTP/1.x: `Some(true)`
/// when they start with a standard method and a space, `Some(false)` when they cannot,
/// `None` while they are a prefix of one (more bytes decide).
pub fn guess_http_request(first_bytes: &[u8]) -> Option<bool> {
    let mut undecided = false;
    for method in METHODS {
        let common = first_bytes.len().min(method.len());
        if first_bytes[..common] == method[..common] {
            if common == method.len() {
                return Some(true);
            }
            undecided = true;
        }
    }
    if undecided { None } else { Some(false) }
}

/// A request that breaks HTTP/1.x framing, or a head over the limit.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestFramingError {
    /// httparse rejected the request head.
    #[error("invalid request head: {0}")]
    InvalidHead(httparse::Error),
    /// The head passed the limit without ending.
    #[error("request head larger than {limit} bytes")]
    HeadTooLarge {
        /// Longest head accepted, in bytes.
        limit: usize,
    },
    /// A `Content-Length` that is not a number, or two that differ.
    #[error("invalid Content-Length header")]
    InvalidContentLength,
    /// A `Transfer-Encoding` whose final coding is not chunked, so the body's end cannot be known.
    #[error("Transfer-Encoding without chunked as the final coding")]
    UnframedBody,
    /// The chunked body is malformed.
    #[error("invalid chunked body: {0}")]
    Chunked(#[from] ChunkedError),
}

#[derive(Debug, Clone)]
enum Body {
    Head,
    Length(u64),
    Chunked(ChunkedDecoder),
    Done,
}

/// What the head of the request being framed said, beyond where it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestKind {
    /// HEAD: its response has no body whatever its headers say.
    pub head: bool,
    /// CONNECT: after a 2xx response the connection is a tunnel, not HTTP.
    pub connect: bool,
}

/// Where each request a client sends on one connection ends, fed read by read.
#[derive(Debug, Clone)]
pub struct RequestFramer {
    /// An incomplete head carried across reads (empty in the common one-read case).
    head_buf: Vec<u8>,
    body: Body,
    max_head_bytes: usize,
    kind: RequestKind,
    /// Bytes of this request consumed so far.
    seen_bytes: u64,
}

impl RequestFramer {
    /// A framer ready for the first request; `max_head_bytes`: longest head accepted, in bytes.
    pub fn new(max_head_bytes: usize) -> Self {
        RequestFramer {
            head_buf: Vec::new(),
            body: Body::Head,
            max_head_bytes,
            kind: RequestKind::default(),
            seen_bytes: 0,
        }
    }

    /// Ready for the next request on the same connection (keeps buffer capacity).
    pub fn reset(&mut self) {
        self.head_buf.clear();
        self.body = Body::Head;
        self.kind = RequestKind::default();
        self.seen_bytes = 0;
    }

    /// Whether any byte of the current request has arrived.
    pub fn has_started(&self) -> bool {
        self.seen_bytes > 0
    }

    /// What the current request's head said (default until the head is complete).
    pub fn kind(&self) -> RequestKind {
        self.kind
    }

    /// Consumes the bytes of one read: `Complete { used }` when the request ended after
    /// `used` of them (the rest belong to the next request).
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, RequestFramingError> {
        let mut pos = 0;
        loop {
            if matches!(self.body, Body::Done) {
                return Ok(Feed::Complete { used: pos });
            }
            let rest = &data[pos..];
            if rest.is_empty() {
                return Ok(Feed::Partial);
            }
            let used = match &mut self.body {
                Body::Head => self.parse_head(rest)?,
                Body::Length(remaining) => {
                    let take = rest.len().min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.body = Body::Done;
                    }
                    take
                }
                Body::Chunked(decoder) => {
                    let used = decoder.feed(rest)?;
                    if decoder.is_done() {
                        self.body = Body::Done;
                    }
                    used
                }
                Body::Done => 0,
            };
            self.seen_bytes += used as u64;
            pos += used;
        }
    }

    /// Parses a head from buffered plus new bytes; returns how many of `data` it used.
    fn parse_head(&mut self, data: &[u8]) -> Result<usize, RequestFramingError> {
        let carried = self.head_buf.len();
        let take = data.len().min(self.max_head_bytes.saturating_sub(carried));
        let parsed = if carried == 0 {
            parse_request_head(&data[..take])?
        } else {
            self.head_buf.extend_from_slice(&data[..take]);
            parse_request_head(&self.head_buf)?
        };
        let Some((head_len, kind, body)) = parsed else {
            if take < data.len() {
                return Err(RequestFramingError::HeadTooLarge { limit: self.max_head_bytes });
            }
            if carried == 0 {
                self.head_buf.extend_from_slice(data);
            }
            return Ok(data.len());
        };
        self.head_buf.clear();
        self.kind = kind;
        self.body = body;
        Ok(head_len.saturating_sub(carried))
    }
}

/// A complete head's length, kind and body framing; `None` while it is incomplete.
fn parse_request_head(bytes: &[u8]) -> Result<Option<(usize, RequestKind, Body)>, RequestFramingError> {
    // Uninitialised, as in the response parser: zeroing 100 slots per head costs more than
    // parsing a short one.
    let mut headers = [std::mem::MaybeUninit::<httparse::Header>::uninit(); MAX_HEADERS];
    let mut request = httparse::Request::new(&mut []);
    let head_len = match request.parse_with_uninit_headers(bytes, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(RequestFramingError::InvalidHead(e)),
    };
    let method = request.method.unwrap_or("");
    let kind = RequestKind { head: method == "HEAD", connect: method == "CONNECT" };
    let mut content_length: Option<u64> = None;
    let mut transfer_encoded = false;
    let mut chunked = false;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(header.value)
                .map_err(|_| RequestFramingError::InvalidContentLength)?
                .trim();
            // 1*DIGIT (RFC 9110 §8.6): u64's parser would also take "+5".
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(RequestFramingError::InvalidContentLength);
            }
            let length: u64 = text.parse().map_err(|_| RequestFramingError::InvalidContentLength)?;
            if content_length.is_some_and(|earlier| earlier != length) {
                return Err(RequestFramingError::InvalidContentLength);
            }
            content_length = Some(length);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = header.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
            transfer_encoded = true;
        }
    }
    // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; a request whose final
    // coding is not chunked cannot be framed (a server answers 400 and closes).
    let body = if chunked {
        Body::Chunked(ChunkedDecoder::new())
    } else if transfer_encoded {
        return Err(RequestFramingError::UnframedBody);
    } else {
        match content_length {
            Some(length) if length > 0 => Body::Length(length),
            _ => Body::Done,
        }
    };
    Ok(Some((head_len, kind, body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 64 * 1024;

    /// Every request in `bytes` fed in pieces of `piece` bytes: the offset at which each
    /// completed, then the error if one came.
    fn outcomes(bytes: &[u8], piece: usize, max_head: usize) -> Vec<Result<usize, RequestFramingError>> {
        let mut framer = RequestFramer::new(max_head);
        let mut out = Vec::new();
        let mut offset = 0;
        for part in bytes.chunks(piece) {
            let mut part = part;
            while !part.is_empty() {
                match framer.feed(part) {
                    Ok(Feed::Partial) => {
                        offset += part.len();
                        part = &[];
                    }
                    Ok(Feed::Complete { used }) => {
                        offset += used;
                        part = &part[used..];
                        out.push(Ok(offset));
                        framer.reset();
                    }
                    Err(e) => {
                        out.push(Err(e));
                        return out;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn decides_identically_at_every_split() {
        let inputs: [&[u8]; 6] = [
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /y HTTP/1.0\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\nHEAD / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\n\x01X: y\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rX",
        ];
        for input in inputs {
            for max_head in [0, 10, 17, 18, 30, LIMIT] {
                let whole = outcomes(input, input.len(), max_head);
                for piece in 1..input.len() {
                    let context =
                        format!("{:?} head {max_head} piece {piece}", input.escape_ascii().to_string());
                    assert_eq!(outcomes(input, piece, max_head), whole, "{context}");
                }
            }
        }
    }

    #[test]
    fn pipelined_requests_end_where_their_framing_says() {
        let get = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let post = b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody";
        let bytes = [&get[..], &post[..], &get[..]].concat();
        assert_eq!(
            outcomes(&bytes, bytes.len(), LIMIT),
            [Ok(get.len()), Ok(get.len() + post.len()), Ok(bytes.len())]
        );
    }

    #[test]
    fn head_and_connect_are_told_apart() {
        let mut framer = RequestFramer::new(LIMIT);
        assert_eq!(framer.feed(b"HEAD / HTTP/1.1\r\n\r\n"), Ok(Feed::Complete { used: 19 }));
        assert_eq!(framer.kind(), RequestKind { head: true, connect: false });
        framer.reset();
        assert_eq!(framer.kind(), RequestKind::default());
        assert!(!framer.has_started());
        assert!(matches!(framer.feed(b"CONNECT a:443 HTTP/1.1\r\n\r\n"), Ok(Feed::Complete { .. })));
        assert!(framer.kind().connect);
    }

    #[test]
    fn bad_lengths_garbage_and_oversized_heads_are_errors() {
        let plus = b"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello";
        assert_eq!(outcomes(plus, 100, LIMIT), [Err(RequestFramingError::InvalidContentLength)]);
        assert!(matches!(
            outcomes(b"\x16\x03\x01\x02\x00", 100, LIMIT)[0],
            Err(RequestFramingError::InvalidHead(_))
        ));
        let mut framer = RequestFramer::new(1024);
        let mut head = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        head.resize(600, b'a');
        assert_eq!(framer.feed(&head), Ok(Feed::Partial));
        assert!(framer.has_started());
        assert_eq!(framer.feed(&[b'a'; 600]), Err(RequestFramingError::HeadTooLarge { limit: 1024 }));
    }

    #[test]
    fn http_is_guessed_from_the_first_bytes() {
        assert_eq!(guess_http_request(b"GET / HTTP/1.1\r\n"), Some(true));
        assert_eq!(guess_http_request(b"OPTIONS * HTTP/1.1"), Some(true));
        assert_eq!(guess_http_request(b"GE"), None);
        assert_eq!(guess_http_request(b"P"), None);
        assert_eq!(guess_http_request(b""), None);
        assert_eq!(guess_http_request(b"GET/"), Some(false));
        assert_eq!(guess_http_request(b"PING\r\n"), Some(false));
        assert_eq!(guess_http_request(b"\x00\x00\x00\x05hello"), Some(false));
        assert_eq!(guess_http_request(b"get / HTTP/1.1"), Some(false));
        assert!(METHODS.iter().all(|m| m.len() <= HTTP_GUESS_BYTES));
    }
}
