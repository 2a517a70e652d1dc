//! Fuzzes the raw TCP framer over every framing: a stream of responses must frame identically
//! whole, in uneven pieces and byte by byte, under a small response limit.
//!
//! Input: `[0] % 7` framing (line, crlf, delim, fixed, len16be, len32be, len32le; bit 7 =
//! `:inclusive` for the prefixes); `[1] % 4 + 1` delimiter length, bytes from `[2..6]`, or
//! `[1..3]` + 1 the fixed size; `[6..8]` response limit, big-endian (0xffff = unbounded);
//! `[8..12]` piece sizes; then the stream.
#![no_main]

mod splits;

use libfuzzer_sys::fuzz_target;
use nodelay_wire::{Feed, Framing, RawFraming, ResponseError, ResponseFramer};

struct Raw(ResponseFramer);

impl splits::Framer for Raw {
    type Error = ResponseError;
    type About = ();

    fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        self.0.feed(data)
    }
    fn about(&self) {}
    fn reset(&mut self) {
        self.0.reset(false);
    }
    fn finish(&mut self) -> Result<(), ResponseError> {
        self.0.finish()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((header, stream)) = data.split_first_chunk::<12>() else { return };
    let inclusive = header[0] & 0x80 != 0;
    // The framings the command line can express: a delimiter of 1+ bytes, a fixed size of 1+.
    let framing = match header[0] % 7 {
        0 => RawFraming::Delimiter(b"\n".to_vec()),
        1 => RawFraming::Delimiter(b"\r\n".to_vec()),
        2 => RawFraming::Delimiter(header[2..2 + usize::from(header[1] % 4) + 1].to_vec()),
        3 => RawFraming::Fixed(u64::from(u16::from_be_bytes([header[1], header[2]])) + 1),
        4 => RawFraming::LengthPrefix { bytes: 2, big_endian: true, inclusive },
        5 => RawFraming::LengthPrefix { bytes: 4, big_endian: true, inclusive },
        _ => RawFraming::LengthPrefix { bytes: 4, big_endian: false, inclusive },
    };
    let max_response_bytes = match u16::from_be_bytes([header[6], header[7]]) {
        u16::MAX => u64::MAX,
        n => u64::from(n),
    };
    let framing = Framing::Raw { framing, max_response_bytes };
    splits::check(
        || Raw(ResponseFramer::new(&framing)),
        stream,
        [header[8], header[9], header[10], header[11]],
    );
});
