//! Wire formats nodelay speaks: HTTP/1.1 request encoding and incremental response framing.
//!
//! Everything here is pure (no sockets, no clocks) so it can be unit-tested and fuzzed; the
//! engine feeds it whatever each `read()` returned.

mod chunked;
mod request;
mod response;

pub use chunked::{ChunkedDecoder, ChunkedError};
pub use request::HttpRequest;
pub use response::{Feed, ResponseError, ResponseParser};
