//! Fuzzes the HTTP response framer: a stream of responses must frame identically whole, in
//! uneven pieces and byte by byte (same ends, statuses, close flags, Server headers, errors,
//! verdict on close), with small head and response limits so that the limit paths are
//! exercised too.
//!
//! Input: `[0]` bit 0 = the request was HEAD; `[1]` head limit (x2, 255 = 64 KiB); `[2..4]`
//! response limit, big-endian (0xffff = unbounded); `[4..8]` piece sizes; then the stream.
#![no_main]

mod splits;

use libfuzzer_sys::fuzz_target;
use nodelay_wire::{Feed, Framing, ResponseError, ResponseFramer};

struct Http {
    framer: ResponseFramer,
    head_request: bool,
}

impl splits::Framer for Http {
    type Error = ResponseError;
    type About = (u16, bool, Option<String>);

    fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        self.framer.feed(data)
    }
    fn about(&self) -> (u16, bool, Option<String>) {
        (self.framer.status(), self.framer.wants_close(), self.framer.server_header().map(str::to_string))
    }
    fn reset(&mut self) {
        self.framer.reset(self.head_request);
    }
    fn finish(&mut self) -> Result<(), ResponseError> {
        self.framer.finish()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((header, stream)) = data.split_first_chunk::<8>() else { return };
    let head_request = header[0] & 1 == 1;
    let max_head_bytes = if header[1] == 255 { 64 * 1024 } else { usize::from(header[1]) * 2 };
    let max_response_bytes = match u16::from_be_bytes([header[2], header[3]]) {
        u16::MAX => u64::MAX,
        n => u64::from(n),
    };
    let framing = Framing::Http { max_head_bytes, max_response_bytes };
    let make = || {
        let mut framer = ResponseFramer::new(&framing);
        framer.reset(head_request);
        Http { framer, head_request }
    };
    splits::check(make, stream, [header[4], header[5], header[6], header[7]]);
});
