//! Streaming decoder for `Transfer-Encoding: chunked` bodies (RFC 9112 §7.1).
//!
//! It only finds where the body ends; payload bytes are skipped, never buffered, so memory
//! stays constant whatever the server sends.

use thiserror::Error;

/// A chunked body that breaks RFC 9112 §7.1, found at the byte that breaks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ChunkedError {
    /// A chunk-size line starts with something other than a hexadecimal digit.
    #[error("chunk size is not hexadecimal")]
    BadSize,
    /// A chunk size does not fit in 64 bits.
    #[error("chunk size overflows 64 bits")]
    SizeOverflow,
    /// A chunk's data is followed by something other than CRLF.
    #[error("chunk data is not followed by CRLF")]
    MissingCrlf,
    /// A chunk-size or trailer line is longer than the limit, in bytes.
    #[error("chunk-size or trailer line longer than {0} bytes")]
    LineTooLong(usize),
}

/// Longest chunk-size line (with extensions) or trailer line we accept.
const MAX_LINE_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size; `any`: at least one digit seen.
    Size {
        any: bool,
    },
    /// Skipping `;extension` up to CR/LF.
    Extension,
    /// Saw CR after the size line, expecting LF.
    SizeLf,
    /// Skipping chunk payload.
    Data,
    /// Expecting CR then LF after payload.
    DataCr,
    DataLf,
    /// After the last (zero) chunk: trailer lines, ended by an empty line.
    TrailerStart,
    Trailer,
    TrailerLf {
        empty_line: bool,
    },
    Done,
}

/// Where a chunked body ends, found by feeding it piece by piece; payload bytes are skipped.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Current chunk size while reading it, then bytes of payload left.
    remaining: u64,
    line_bytes: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub fn new() -> Self {
        ChunkedDecoder { state: State::Size { any: false }, remaining: 0, line_bytes: 0 }
    }

    /// Whether the last chunk and the trailer's ending empty line have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes of the chunked body. Returns how many bytes belonged to the body; that
    /// is less than `data.len()` only when the body ended inside `data`.
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, ChunkedError> {
        let mut pos = 0;
        while pos < data.len() && self.state != State::Done {
            if self.state == State::Data {
                let take = (data.len() - pos).min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                pos += take;
                self.remaining -= take as u64;
                if self.remaining == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let byte = data[pos];
            pos += 1;
            self.step(byte)?;
        }
        Ok(pos)
    }

    fn count_line_byte(&mut self) -> Result<(), ChunkedError> {
        self.line_bytes += 1;
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(ChunkedError::LineTooLong(MAX_LINE_BYTES));
        }
        Ok(())
    }

    fn end_size_line(&mut self) {
        self.line_bytes = 0;
        self.state = if self.remaining == 0 { State::TrailerStart } else { State::Data };
    }

    fn step(&mut self, byte: u8) -> Result<(), ChunkedError> {
        self.state = match self.state {
            State::Size { any } => {
                // The line bound also ends an endless run of leading zeros.
                self.count_line_byte()?;
                match byte {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        // Overflow is about the value, not the digit count: leading zeros are valid.
                        if self.remaining >> 60 != 0 {
                            return Err(ChunkedError::SizeOverflow);
                        }
                        let nibble = (byte as char).to_digit(16).unwrap_or(0) as u64;
                        self.remaining = (self.remaining << 4) | nibble;
                        State::Size { any: true }
                    }
                    b';' | b' ' | b'\t' if any => State::Extension,
                    b'\r' if any => State::SizeLf,
                    b'\n' if any => {
                        self.end_size_line();
                        return Ok(());
                    }
                    _ => return Err(ChunkedError::BadSize),
                }
            }
            State::Extension => {
                self.count_line_byte()?;
                match byte {
                    b'\r' => State::SizeLf,
                    b'\n' => {
                        self.end_size_line();
                        return Ok(());
                    }
                    _ => State::Extension,
                }
            }
            State::SizeLf => {
                if byte != b'\n' {
                    return Err(ChunkedError::BadSize);
                }
                self.end_size_line();
                return Ok(());
            }
            State::DataCr => match byte {
                b'\r' => State::DataLf,
                b'\n' => State::Size { any: false },
                _ => return Err(ChunkedError::MissingCrlf),
            },
            State::DataLf => {
                if byte != b'\n' {
                    return Err(ChunkedError::MissingCrlf);
                }
                State::Size { any: false }
            }
            State::TrailerStart => match byte {
                b'\r' => State::TrailerLf { empty_line: true },
                b'\n' => State::Done,
                _ => {
                    self.count_line_byte()?;
                    State::Trailer
                }
            },
            State::Trailer => {
                self.count_line_byte()?;
                match byte {
                    b'\r' => State::TrailerLf { empty_line: false },
                    b'\n' => {
                        self.line_bytes = 0;
                        State::TrailerStart
                    }
                    _ => State::Trailer,
                }
            }
            State::TrailerLf { empty_line } => {
                if byte != b'\n' {
                    return Err(ChunkedError::MissingCrlf);
                }
                self.line_bytes = 0;
                if empty_line { State::Done } else { State::TrailerStart }
            }
            State::Data | State::Done => unreachable!("handled by feed"),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Result<(bool, usize), ChunkedError> {
        let mut decoder = ChunkedDecoder::new();
        let mut used = 0;
        for part in body.chunks(piece) {
            let n = decoder.feed(part)?;
            used += n;
            if decoder.is_done() {
                break;
            }
        }
        Ok((decoder.is_done(), used))
    }

    #[test]
    fn decodes_at_every_split_point() {
        let body = b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
        for piece in 1..=body.len() {
            assert_eq!(decode_in_pieces(body, piece), Ok((true, body.len())), "piece {piece}");
        }
    }

    #[test]
    fn stops_at_end_of_body() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.feed(b"0\r\n\r\nEXTRA"), Ok(5));
        assert!(decoder.is_done());
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert_eq!(ChunkedDecoder::new().feed(b"zz\r\n"), Err(ChunkedError::BadSize));
        assert_eq!(ChunkedDecoder::new().feed(b"\r\n"), Err(ChunkedError::BadSize));
        assert_eq!(ChunkedDecoder::new().feed(b"11111111111111111\r\n"), Err(ChunkedError::SizeOverflow));
        assert_eq!(ChunkedDecoder::new().feed(b"1\r\nab"), Err(ChunkedError::MissingCrlf));
    }

    #[test]
    fn leading_zeros_are_not_overflow() {
        let body = b"00000000000000002\r\nab\r\n0000000000000000000\r\n\r\n";
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.feed(body), Ok(body.len()));
        assert!(decoder.is_done());
        let largest = b"0000ffffffffffffffff\r\n";
        assert_eq!(ChunkedDecoder::new().feed(largest), Ok(largest.len()));
        assert_eq!(ChunkedDecoder::new().feed(b"010000000000000000\r\n"), Err(ChunkedError::SizeOverflow));
        // Endless zeros end at the line bound rather than hang.
        let zeros = vec![b'0'; MAX_LINE_BYTES + 1];
        assert_eq!(ChunkedDecoder::new().feed(&zeros), Err(ChunkedError::LineTooLong(MAX_LINE_BYTES)));
    }

    #[test]
    fn bounds_line_length() {
        let mut long = b"1;".to_vec();
        long.resize(MAX_LINE_BYTES + 10, b'x');
        assert_eq!(ChunkedDecoder::new().feed(&long), Err(ChunkedError::LineTooLong(MAX_LINE_BYTES)));
    }
}
