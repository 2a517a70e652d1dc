//! Wire formats nodelay speaks: HTTP/1.1 request encoding, incremental HTTP request and
//! response framing, and raw TCP framings (delimiter, fixed size, length prefix).
//!
//! Everything here is pure (no sockets, no clocks) so it can be unit-tested and fuzzed; the
//! engine feeds it whatever each `read()` returned.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod chunked;
mod escapes;
mod framer;
mod raw;
mod request;
mod request_framer;
mod response;

pub use chunked::{ChunkedDecoder, ChunkedError};
pub use escapes::unescape;
pub use framer::{Framing, ResponseFramer};
pub use raw::{RawFraming, RawResponseParser};
pub use request::{HttpRequest, RequestError};
pub use request_framer::{
    HTTP_GUESS_BYTES, RequestFramer, RequestFramingError, RequestKind, guess_http_request,
};
pub use response::{Feed, ResponseError, ResponseParser};
