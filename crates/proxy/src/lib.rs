//! `nodelay proxy`'s relay: one event loop on one thread (epoll through mio) that relays TCP
//! between clients and one upstream byte for byte, and times every exchange on both legs:
//! when the request arrived from the client, when it was forwarded, when the upstream's
//! answer arrived, when it was delivered, and the pauses between reads inside each message.
//!
//! The relay emits typed records to a sink ([`RelaySink`]); it never prints. [`ProxyStats`]
//! aggregates them in bounded memory for the diagnosis and the reports.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod buffer;
mod connection;
mod exchange;
mod record;
mod relay;
mod sink;
mod stats;

pub use exchange::MAX_IN_FLIGHT;
pub use record::{
    ConnectFailure, ConnectFailureRecord, ConnectionRecord, Ending, ExchangeRecord, Framing,
    IncompleteRecord, Reads, Unfinished,
};
pub use relay::{Relay, RelayConfig, RelayEnd, StopReason};
pub use sink::{CollectingSink, RelaySink};
pub use stats::{INITIAL_WINDOW_BYTES, Leg, LegStats, ProxyStats, STALL_EXAMPLES, StallExample};
