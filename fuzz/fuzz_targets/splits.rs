//! Shared by the framing targets: feeds one stream of back-to-back responses to a framer
//! whole, in uneven pieces and byte by byte, and asserts that the split never changes what
//! the framer decides (where each response ends, which error, what it says on close).

use nodelay_wire::Feed;
use std::fmt::Debug;

/// An incremental framer as the engine drives it.
pub trait Framer {
    type Error: Debug + PartialEq;
    /// What the framer reports about a completed response (status, close, ...).
    type About: Debug + PartialEq;
    fn feed(&mut self, data: &[u8]) -> Result<Feed, Self::Error>;
    fn about(&self) -> Self::About;
    fn reset(&mut self);
    /// The peer closed the connection inside a response.
    fn finish(&mut self) -> Result<(), Self::Error>;
}

#[derive(Debug, PartialEq)]
pub enum Event<E, A> {
    /// A response ended at this offset of the stream.
    Complete {
        end: usize,
        about: A,
    },
    Failed(E),
    /// The stream ran out inside a response; what `finish` said.
    Closed(Result<(), E>),
}

/// Piece sizes 1..=32 taken in turn from `seed`, so the fuzzer steers where reads split.
pub fn uneven(seed: [u8; 4]) -> impl Iterator<Item = usize> {
    seed.into_iter().map(|b| usize::from(b % 32) + 1).cycle()
}

fn run<F: Framer>(
    mut framer: F,
    stream: &[u8],
    sizes: impl Iterator<Item = usize>,
) -> Vec<Event<F::Error, F::About>> {
    let mut events = Vec::new();
    let mut sizes = sizes;
    let (mut offset, mut response_start) = (0, 0);
    let mut rest = stream;
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        let (mut part, tail) = rest.split_at(size);
        rest = tail;
        while !part.is_empty() {
            match framer.feed(part) {
                Ok(Feed::Partial) => {
                    offset += part.len();
                    part = &[];
                }
                Ok(Feed::Complete { used }) => {
                    assert!(used <= part.len(), "used {used} of {} bytes given", part.len());
                    offset += used;
                    // Zero would mean the previous read ended the response but said Partial.
                    assert!(offset > response_start, "a response completed on no bytes at {offset}");
                    part = &part[used..];
                    events.push(Event::Complete { end: offset, about: framer.about() });
                    framer.reset();
                    response_start = offset;
                }
                Err(e) => {
                    events.push(Event::Failed(e));
                    return events;
                }
            }
        }
    }
    if offset > response_start {
        events.push(Event::Closed(framer.finish()));
    }
    events
}

/// Asserts that whole, uneven-piece and byte-by-byte feeding of `stream` agree.
pub fn check<F: Framer>(make: impl Fn() -> F, stream: &[u8], seed: [u8; 4]) {
    let whole = run(make(), stream, std::iter::once(stream.len()));
    let pieces = run(make(), stream, uneven(seed));
    assert_eq!(pieces, whole, "pieces {seed:?} vs whole");
    let bytes = run(make(), stream, std::iter::repeat(1));
    assert_eq!(bytes, whole, "byte by byte vs whole");
}
