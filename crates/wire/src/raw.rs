//! Response framings for raw TCP request/response protocols: delimiter-terminated (Redis-
//! or memcached-style text), fixed size, or length-prefixed binary. Like the HTTP parser,
//! it only finds where a response ends and never buffers more than a few bytes.

use crate::response::{Feed, ResponseError};
use std::fmt;

/// How a raw TCP protocol's responses end, as parsed from `--framing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawFraming {
    /// Ends with this byte sequence (`line` = `\n`, `crlf` = `\r\n`, `delim:...`).
    Delimiter(Vec<u8>),
    /// Exactly N bytes.
    Fixed(u64),
    /// A big- or little-endian length prefix of 2 or 4 bytes; `inclusive` when the length
    /// counts the prefix itself.
    LengthPrefix {
        /// Size of the prefix, in bytes (2 or 4).
        bytes: u8,
        /// The prefix is big-endian (network order).
        big_endian: bool,
        /// The length counts the prefix's own bytes as well as the payload.
        inclusive: bool,
    },
}

impl RawFraming {
    /// Parses `line`, `crlf`, `delim:<escaped bytes>`, `fixed:N`, `len16be`, `len32be`,
    /// `len32le`, the last three optionally followed by `:inclusive`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, argument) = text.split_once(':').map_or((text, None), |(k, a)| (k, Some(a)));
        let prefix = |bytes, big_endian| match argument {
            None => Ok(RawFraming::LengthPrefix { bytes, big_endian, inclusive: false }),
            Some("inclusive") => Ok(RawFraming::LengthPrefix { bytes, big_endian, inclusive: true }),
            Some(other) => Err(format!("'{other}' after '{kind}': only ':inclusive' is allowed")),
        };
        match (kind, argument) {
            ("line", None) => Ok(RawFraming::Delimiter(b"\n".to_vec())),
            ("crlf", None) => Ok(RawFraming::Delimiter(b"\r\n".to_vec())),
            ("delim", Some(bytes)) => {
                let delimiter = crate::escapes::unescape(bytes)?;
                if delimiter.is_empty() {
                    return Err("delim: needs at least one byte".into());
                }
                Ok(RawFraming::Delimiter(delimiter))
            }
            ("fixed", Some(n)) => match n.parse::<u64>() {
                Ok(n) if n > 0 => Ok(RawFraming::Fixed(n)),
                Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
                    Err(format!("fixed:{n}: more bytes than a response can have (at most {})", u64::MAX))
                }
                _ => Err(format!("fixed:{n}: need a positive byte count")),
            },
            ("len16be", _) => prefix(2, true),
            ("len32be", _) => prefix(4, true),
            ("len32le", _) => prefix(4, false),
            _ => Err(format!(
                "unknown framing '{text}': use line, crlf, delim:<bytes>, fixed:N, len16be, len32be or len32le"
            )),
        }
    }
}

impl fmt::Display for RawFraming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawFraming::Delimiter(d) if d == b"\n" => write!(f, "line"),
            RawFraming::Delimiter(d) if d == b"\r\n" => write!(f, "crlf"),
            RawFraming::Delimiter(d) => write!(f, "delim:{}", d.escape_ascii()),
            RawFraming::Fixed(n) => write!(f, "fixed:{n}"),
            RawFraming::LengthPrefix { bytes, big_endian, inclusive } => {
                let endian = if *big_endian { "be" } else { "le" };
                write!(f, "len{}{endian}{}", bytes * 8, if *inclusive { ":inclusive" } else { "" })
            }
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    /// Delimiter: how many bytes of it the stream currently ends with.
    Scanning {
        matched: usize,
    },
    /// Reading a length prefix: the bytes so far.
    Prefix {
        have: [u8; 4],
        len: u8,
    },
    /// Skipping this many payload bytes.
    Payload {
        remaining: u64,
    },
    Done,
}

/// Where each raw TCP response ends under a [`RawFraming`], fed piece by piece; payload bytes
/// are skipped.
#[derive(Debug, Clone)]
pub struct RawResponseParser {
    framing: RawFraming,
    max_response_bytes: u64,
    seen_bytes: u64,
    state: State,
}

impl RawResponseParser {
    /// A parser ready for the first response; `max_response_bytes`: `u64::MAX` for no bound.
    pub fn new(framing: RawFraming, max_response_bytes: u64) -> Self {
        let mut parser = RawResponseParser { framing, max_response_bytes, seen_bytes: 0, state: State::Done };
        parser.reset();
        parser
    }

    /// Ready for the next response on the same connection.
    pub fn reset(&mut self) {
        self.seen_bytes = 0;
        self.state = match self.framing {
            RawFraming::Delimiter(_) => State::Scanning { matched: 0 },
            RawFraming::Fixed(n) => State::Payload { remaining: n },
            RawFraming::LengthPrefix { .. } => State::Prefix { have: [0; 4], len: 0 },
        };
    }

    /// Whether any byte of the current response has arrived.
    pub fn has_started(&self) -> bool {
        self.seen_bytes > 0
    }

    /// Consumes bytes of the response. A response longer than `max_response_bytes` is an
    /// error on the byte past the limit (or on its length prefix, when that says so first),
    /// so the outcome is the same however reads split it.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        let mut pos = 0;
        while pos < data.len() && !matches!(self.state, State::Done) {
            let budget = self.max_response_bytes.saturating_sub(self.seen_bytes);
            if budget == 0 {
                return Err(ResponseError::TooLarge { limit: self.max_response_bytes });
            }
            let rest = &data[pos..];
            let window = &rest[..usize::try_from(budget).map_or(rest.len(), |b| b.min(rest.len()))];
            let used = self.step(window)?;
            pos += used;
            self.seen_bytes += used as u64;
        }
        if matches!(self.state, State::Done) {
            return Ok(Feed::Complete { used: pos });
        }
        Ok(Feed::Partial)
    }

    /// Advances through `data` until the response ends or `data` does; returns bytes used
    /// (at least one, as `data` is not empty and the response not done).
    fn step(&mut self, data: &[u8]) -> Result<usize, ResponseError> {
        let mut pos = 0;
        while pos < data.len() {
            match &mut self.state {
                State::Scanning { matched } => {
                    let RawFraming::Delimiter(delimiter) = &self.framing else { unreachable!() };
                    let byte = data[pos];
                    pos += 1;
                    *matched = next_match(delimiter, *matched, byte);
                    if *matched == delimiter.len() {
                        self.state = State::Done;
                    }
                }
                State::Prefix { have, len } => {
                    let RawFraming::LengthPrefix { bytes, big_endian, inclusive } = self.framing else {
                        unreachable!()
                    };
                    have[*len as usize] = data[pos];
                    *len += 1;
                    pos += 1;
                    if *len == bytes {
                        let prefix = &have[..bytes as usize];
                        let value = prefix.iter().enumerate().fold(0u64, |acc, (i, &b)| {
                            if big_endian {
                                (acc << 8) | u64::from(b)
                            } else {
                                acc | (u64::from(b) << (8 * i))
                            }
                        });
                        let payload = if inclusive {
                            value.checked_sub(u64::from(bytes)).ok_or(ResponseError::BadLengthPrefix {
                                length: value,
                                reason: "shorter than the prefix that it includes",
                            })?
                        } else {
                            value
                        };
                        if payload.saturating_add(u64::from(bytes)) > self.max_response_bytes {
                            return Err(ResponseError::TooLarge { limit: self.max_response_bytes });
                        }
                        self.state =
                            if payload == 0 { State::Done } else { State::Payload { remaining: payload } };
                    }
                }
                State::Payload { remaining } => {
                    let take = (data.len() - pos).min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    pos += take;
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.state = State::Done;
                    }
                }
                State::Done => break,
            }
        }
        Ok(pos)
    }
}

/// Length of the longest delimiter prefix that the stream ends with after `byte`, given it
/// ended with `matched` bytes of the delimiter before. Delimiters are a few bytes long, so a
/// direct search beats a KMP table.
fn next_match(delimiter: &[u8], matched: usize, byte: u8) -> usize {
    if delimiter[matched] == byte {
        return matched + 1;
    }
    // Fall back to shorter prefixes of what was matched (e.g. "aab" in "aaab").
    let mut candidate = matched;
    while candidate > 0 {
        candidate -= 1;
        let tail_start = matched - candidate;
        if delimiter[..candidate] == delimiter[tail_start..matched] && delimiter[candidate] == byte {
            return candidate + 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framer::{ResponseFramer, outcomes_in_pieces};

    fn complete_at_every_split(framing: &str, bytes: &[u8]) {
        for piece in 1..=bytes.len() {
            let mut parser = RawResponseParser::new(RawFraming::parse(framing).unwrap(), 1 << 20);
            let mut used = 0;
            let mut done = false;
            for part in bytes.chunks(piece) {
                match parser.feed(part).unwrap() {
                    Feed::Partial => used += part.len(),
                    Feed::Complete { used: n } => {
                        used += n;
                        done = true;
                        break;
                    }
                }
            }
            assert!(done, "{framing} piece {piece}");
            assert_eq!(used, bytes.len(), "{framing} piece {piece}");
        }
    }

    #[test]
    fn frames_complete_at_every_split() {
        complete_at_every_split("line", b"+PONG\n");
        complete_at_every_split("crlf", b"+OK\r\n");
        complete_at_every_split(r"delim:END\r\n", b"VALUE x 0 1\r\nEENEND\r\n");
        complete_at_every_split("fixed:5", b"abcde");
        complete_at_every_split("len16be", b"\x00\x03abc");
        complete_at_every_split("len32be", b"\x00\x00\x00\x04abcd");
        complete_at_every_split("len32le", b"\x04\x00\x00\x00abcd");
        complete_at_every_split("len32be:inclusive", b"\x00\x00\x00\x06ab");
        complete_at_every_split("len16be", b"\x00\x00");
    }

    /// Every response fed in pieces of `piece` bytes, resetting after each: the total offset
    /// at which each completed, then the error or `None` when the input ran out mid-response.
    fn outcomes(
        framing: &RawFraming,
        limit: u64,
        bytes: &[u8],
        piece: usize,
    ) -> Vec<Result<usize, ResponseError>> {
        let framer = ResponseFramer::Raw(RawResponseParser::new(framing.clone(), limit));
        outcomes_in_pieces(framer, false, bytes, piece, false)
    }

    fn same_at_every_split(framing: &RawFraming, limit: u64, bytes: &[u8]) {
        let whole = outcomes(framing, limit, bytes, bytes.len().max(1));
        for piece in 1..bytes.len() {
            assert_eq!(
                outcomes(framing, limit, bytes, piece),
                whole,
                "{framing} limit {limit} piece {piece}"
            );
        }
    }

    #[test]
    fn max_response_holds_however_the_response_is_split() {
        let mut line = vec![b'x'; 2001];
        line.push(b'\n');
        let line_framing = RawFraming::parse("line").unwrap();
        assert_eq!(
            outcomes(&line_framing, 100, &line, line.len()),
            [Err(ResponseError::TooLarge { limit: 100 })]
        );
        let fixed = RawFraming::Fixed(2002);
        assert_eq!(outcomes(&fixed, 100, &line, line.len()), [Err(ResponseError::TooLarge { limit: 100 })]);
        // A response exactly at the limit is fine; one byte more is not.
        assert_eq!(outcomes(&line_framing, 2002, &line, 7), [Ok(2002)]);
        assert_eq!(
            outcomes(&line_framing, 2001, &line, 2002),
            [Err(ResponseError::TooLarge { limit: 2001 })]
        );
    }

    #[test]
    fn every_framing_decides_identically_at_every_split() {
        // Found by fuzzing whole vs byte by byte.
        let inputs: [&[u8]; 3] = [
            b"\x00\x00\x00\x03\x47\x4b\x0d\x4b\x0d\x0a",
            b"+OK\r\n+PONG\r\n\x00\x02ab\x00\x00",
            b"\x02\x00\x00\x00hi\x05\x00\x00\x00x",
        ];
        let framings = [
            "line",
            "crlf",
            r"delim:K\r",
            "fixed:1",
            "fixed:3",
            "len16be",
            "len32be",
            "len32le",
            "len32be:inclusive",
        ];
        for input in inputs {
            for framing in framings {
                for limit in 0..=12 {
                    same_at_every_split(&RawFraming::parse(framing).unwrap(), limit, input);
                }
            }
        }
    }

    #[test]
    fn delimiter_search_backs_off_correctly() {
        let mut parser = RawResponseParser::new(RawFraming::parse(r"delim:aab").unwrap(), 100);
        assert_eq!(parser.feed(b"xaaab"), Ok(Feed::Complete { used: 5 }));
        let mut parser = RawResponseParser::new(RawFraming::Delimiter(b"\r\n".to_vec()), 100);
        assert_eq!(parser.feed(b"a\r\rb\r\nrest"), Ok(Feed::Complete { used: 6 }));
    }

    #[test]
    fn bounds_and_bad_lengths_are_malformed() {
        let mut parser = RawResponseParser::new(RawFraming::parse("len32be").unwrap(), 1024);
        assert_eq!(parser.feed(b"\xff\xff\xff\xff"), Err(ResponseError::TooLarge { limit: 1024 }));
        let mut parser = RawResponseParser::new(RawFraming::parse("line").unwrap(), 8);
        assert_eq!(parser.feed(b"no newline here"), Err(ResponseError::TooLarge { limit: 8 }));
        let mut parser = RawResponseParser::new(RawFraming::parse("len16be:inclusive").unwrap(), 100);
        assert!(matches!(parser.feed(b"\x00\x01"), Err(ResponseError::BadLengthPrefix { .. })));
    }

    #[test]
    fn parses_and_prints_framings() {
        for text in
            ["line", "crlf", "fixed:10", "len16be", "len32be", "len32le", "len32be:inclusive", "delim:\\x00"]
        {
            assert_eq!(RawFraming::parse(text).unwrap().to_string(), text);
        }
        assert!(RawFraming::parse("len64").unwrap_err().contains("unknown framing"));
        assert!(RawFraming::parse("fixed:0").unwrap_err().ends_with("need a positive byte count"));
        assert!(
            RawFraming::parse("fixed:99999999999999999999")
                .unwrap_err()
                .contains("more bytes than a response can have")
        );
        assert!(RawFraming::parse("delim:").is_err());
        assert!(RawFraming::parse("len32be:exclusive").is_err());
    }
}
