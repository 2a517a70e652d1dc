//! One response framer for every protocol the engine speaks, so its loop stays the same.

use crate::raw::{RawFraming, RawResponseParser};
use crate::response::{Feed, ResponseError, ResponseParser};

/// How responses are delimited on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// HTTP/1.1 responses, framed by their head, then Content-Length, chunked encoding or close.
    Http {
        /// Longest response head accepted, in bytes.
        max_head_bytes: usize,
        /// Bound on head and body of one response, in bytes; `u64::MAX` for none.
        max_response_bytes: u64,
    },
    /// A raw TCP protocol's responses, delimited by a [`RawFraming`].
    Raw {
        /// How each response ends.
        framing: RawFraming,
        /// Bound on one response, in bytes; `u64::MAX` for none.
        max_response_bytes: u64,
    },
}

/// The framer for one connection's responses, HTTP or raw, chosen by its [`Framing`].
#[derive(Debug, Clone)]
pub enum ResponseFramer {
    /// Frames HTTP/1.1 responses.
    Http(ResponseParser),
    /// Frames raw TCP responses.
    Raw(RawResponseParser),
}

impl ResponseFramer {
    /// A framer ready for the first response.
    pub fn new(framing: &Framing) -> Self {
        match framing {
            Framing::Http { max_head_bytes, max_response_bytes } => {
                ResponseFramer::Http(ResponseParser::new(false, *max_head_bytes, *max_response_bytes))
            }
            Framing::Raw { framing, max_response_bytes } => {
                ResponseFramer::Raw(RawResponseParser::new(framing.clone(), *max_response_bytes))
            }
        }
    }

    /// Ready for the next response; `no_body`: the HTTP request was HEAD.
    pub fn reset(&mut self, no_body: bool) {
        match self {
            ResponseFramer::Http(parser) => parser.reset_for(no_body),
            ResponseFramer::Raw(parser) => parser.reset(),
        }
    }

    /// Consumes the bytes of one read; says whether the response completed in them and after
    /// how many.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        match self {
            ResponseFramer::Http(parser) => parser.feed(data),
            ResponseFramer::Raw(parser) => parser.feed(data),
        }
    }

    /// The peer closed the connection.
    pub fn finish(&mut self) -> Result<(), ResponseError> {
        match self {
            ResponseFramer::Http(parser) => parser.finish(),
            ResponseFramer::Raw(_) => Err(ResponseError::ClosedEarly),
        }
    }

    /// HTTP status of the response; 0 for raw protocols.
    pub fn status(&self) -> u16 {
        match self {
            ResponseFramer::Http(parser) => parser.status(),
            ResponseFramer::Raw(_) => 0,
        }
    }

    /// The first HTTP `Server` header seen (none for raw protocols).
    pub fn server_header(&self) -> Option<&str> {
        match self {
            ResponseFramer::Http(parser) => parser.server_header(),
            ResponseFramer::Raw(_) => None,
        }
    }

    /// The server said it will close the connection (HTTP only), so it must not be reused.
    pub fn wants_close(&self) -> bool {
        match self {
            ResponseFramer::Http(parser) => parser.wants_close(),
            ResponseFramer::Raw(_) => false,
        }
    }
}

/// Every response in `bytes` fed to `framer` in pieces of `piece` bytes, resetting after
/// each (for a request that was HEAD when `no_body`): the total offset at which each
/// completed, then the error; with `finish_at_end`, what `finish` says when the input ran out
/// mid-response. How the framers' tests check that any split decides alike.
#[cfg(test)]
pub(crate) fn outcomes_in_pieces(
    mut framer: ResponseFramer,
    no_body: bool,
    bytes: &[u8],
    piece: usize,
    finish_at_end: bool,
) -> Vec<Result<usize, ResponseError>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut started = false;
    for part in bytes.chunks(piece) {
        let mut part = part;
        while !part.is_empty() {
            started = true;
            match framer.feed(part) {
                Ok(Feed::Partial) => {
                    offset += part.len();
                    part = &[];
                }
                Ok(Feed::Complete { used }) => {
                    assert!(used <= part.len(), "used {used} of {}", part.len());
                    offset += used;
                    part = &part[used..];
                    out.push(Ok(offset));
                    framer.reset(no_body);
                    started = false;
                }
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }
    if finish_at_end && started {
        out.push(framer.finish().map(|()| offset));
    }
    out
}
