//! Packet captures: read pcap/pcapng as a stream, decode TCP, track flows in both
//! directions (numbered like Wireshark's `tcp.stream`) and find Nagle × delayed-ACK stalls
//! by the capture rule of docs/field-notes.md §5.
// Only `mapped` maps a file and handles SIGBUS; everything else stays safe.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
mod analyzer;
pub mod decode;
mod flow;
mod mapped;
mod reader;
mod stream;

pub use analyzer::{Analyzer, CaptureSummary, FlowFilter};
pub use decode::{TcpSegment, decode_tcp, link_type_supported};
pub use flow::{
    CLIENT_WAIT_NS, Endpoint, Flow, FlowSummary, Hold, HoldKind, LATE_FIRST_BYTE_NS, MIN_ROUND_TRIP_HOLD_NS,
    Role, SLOW_PATH_RTT_NS, SenderStalls, StallExample,
};
pub use mapped::{CaptureInput, OnShrink, read_capture};
pub use reader::{Packet, ReadError, ReadStats, read_packets, read_packets_buffered};
