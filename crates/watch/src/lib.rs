//! `nodelay watch`: finds Nagle × delayed-ACK stalls in a live host's traffic without sending a
//! request. Packets come from a live capture (AF_PACKET with a kernel filter, headers only)
//! and go through the capture analyzer `pcap` uses; stalled flows are attributed to their
//! local process and socket; findings are printed, streamed as JSON lines, and exported as
//! Prometheus metrics. Without capture rights, a sock_diag-only mode says what it can see.
//! Nothing here prints: the CLI renders the typed events.

#![warn(missing_docs)]

pub mod prometheus;
