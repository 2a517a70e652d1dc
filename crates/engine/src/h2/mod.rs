//! HTTP/2: the loop that runs a load over it (worker.rs), libnghttp2's session behind a safe
//! face (session.rs), the socket under it (io.rs), the frame tap that times each stream and
//! watches the windows (tap.rs) with its verdict on losses (loss_watch.rs), and the
//! conversion of a run's HTTP/1.1 requests (request.rs). Why libnghttp2 and not the `h2`
//! crate: docs/architecture.md, "HTTP/2".

mod io;
mod loss_watch;
mod request;
mod session;
pub(crate) mod tap;
#[cfg(test)]
mod test_frames;
mod worker;

#[doc(hidden)]
pub use session::drive_session;
#[doc(hidden)]
pub use tap::read_frames;
pub(crate) use worker::H2Worker;
