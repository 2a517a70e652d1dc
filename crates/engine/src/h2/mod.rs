//! HTTP/2: the loop that runs a load over it (worker.rs), the socket under `h2` (io.rs), the
//! frame tap that times each stream and watches the windows (tap.rs), and the conversion of a
//! run's HTTP/1.1 requests (request.rs). Why the `h2` crate, polled by hand from this mio
//! loop rather than run on tokio: docs/architecture.md, "HTTP/2".

mod io;
mod request;
pub(crate) mod tap;
mod worker;

#[doc(hidden)]
pub use tap::read_frames;
pub(crate) use worker::H2Worker;
