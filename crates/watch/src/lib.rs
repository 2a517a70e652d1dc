//! `nodelay watch`: finds Nagle × delayed-ACK stalls in a live host's traffic without sending a
//! request. Packets come from a live capture (AF_PACKET with a kernel filter, headers only)
//! and go through the capture analyzer `pcap` uses; stalled flows are attributed to their
//! local process and socket; findings are printed, streamed as JSON lines, and exported as
//! Prometheus metrics. Where eBPF is allowed, the [`kernel`] source times the holds in the
//! kernel instead, with no packet copied. Without capture rights, a sock_diag-only mode says
//! what it can see.
//! Nothing here prints: the CLI renders the typed events.
//!
//! The route: [`run`] opens the [`live`] capture (or the [`survey`] without rights), feeds
//! each decoded segment to the [`flows`] table (one capture-crate `Flow` per connection,
//! bounded), whose holds the [`findings`] group by process ([`owners`]) and port; once a
//! second it tells an [`Event`] to the caller's sink, which [`render`] turns into text.

#![warn(missing_docs)]

mod args;
mod error;
pub mod event;
pub mod findings;
pub mod flows;
pub mod kernel;
pub mod live;
pub mod owners;
mod pid;
pub mod prometheus;
pub mod render;
mod run;
pub mod survey;

pub use args::{Source, WatchOptions, parse_duration, parse_port};
pub use error::{WatchEnd, WatchError};
pub use event::Event;
pub use event::TICK;
pub use run::run;
