//! Fuzzes the chunked-body decoder: a stream of chunked bodies must decode identically whole,
//! in uneven pieces and byte by byte (same ends, same error).
//!
//! Input: `[0..4]` piece sizes; then the stream.
#![no_main]

mod splits;

use libfuzzer_sys::fuzz_target;
use nodelay_wire::{ChunkedDecoder, ChunkedError, Feed};

struct Chunked(ChunkedDecoder);

impl splits::Framer for Chunked {
    type Error = ChunkedError;
    type About = ();

    fn feed(&mut self, data: &[u8]) -> Result<Feed, ChunkedError> {
        let used = self.0.feed(data)?;
        if self.0.is_done() {
            return Ok(Feed::Complete { used });
        }
        assert_eq!(used, data.len(), "an unfinished body left bytes unread");
        Ok(Feed::Partial)
    }
    fn about(&self) {}
    fn reset(&mut self) {
        self.0 = ChunkedDecoder::new();
    }
    /// The decoder has no notion of close: the event only records that input ran out.
    fn finish(&mut self) -> Result<(), ChunkedError> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((seed, stream)) = data.split_first_chunk::<4>() else { return };
    splits::check(|| Chunked(ChunkedDecoder::new()), stream, *seed);
});
