//! Wire formats nodelay speaks: HTTP/1.1 request encoding, incremental HTTP response framing,
//! and raw TCP framings (delimiter, fixed size, length prefix).
//!
//! Everything here is pure (no sockets, no clocks) so it can be unit-tested and fuzzed; the
//! engine feeds it whatever each `read()` returned.

mod chunked;
mod escapes;
mod framer;
mod raw;
mod request;
mod response;

pub use chunked::{ChunkedDecoder, ChunkedError};
pub use escapes::unescape;
pub use framer::{Framing, ResponseFramer};
pub use raw::{RawFraming, RawResponseParser};
pub use request::{HttpRequest, RequestError};
pub use response::{Feed, ResponseError, ResponseParser};
