//! Fuzzes the HTTP/1.x request framer `nodelay proxy` uses to find where each request ends: a
//! stream of requests must frame identically whole, in uneven pieces and byte by byte (same
//! ends, same kinds, same error), and the HTTP guess on its first bytes must not panic.
//!
//! Input: `[0..4]` piece sizes; then the stream.
#![no_main]

mod splits;

use libfuzzer_sys::fuzz_target;
use nodelay_wire::{Feed, RequestFramer, RequestFramingError, RequestKind, guess_http_request};

/// A head longer than this is an error, as the proxy bounds it.
const MAX_HEAD_BYTES: usize = 4096;

struct Requests(RequestFramer);

impl splits::Framer for Requests {
    type Error = RequestFramingError;
    type About = RequestKind;

    fn feed(&mut self, data: &[u8]) -> Result<Feed, RequestFramingError> {
        self.0.feed(data)
    }
    fn about(&self) -> RequestKind {
        self.0.kind()
    }
    fn reset(&mut self) {
        self.0.reset();
    }
    /// A request cut short by the client's close is simply unfinished: nothing to decide.
    fn finish(&mut self) -> Result<(), RequestFramingError> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((seed, stream)) = data.split_first_chunk::<4>() else { return };
    let _ = guess_http_request(stream);
    splits::check(|| Requests(RequestFramer::new(MAX_HEAD_BYTES)), stream, *seed);
});
