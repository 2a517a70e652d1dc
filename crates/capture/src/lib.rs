//! Packet captures: read pcap/pcapng as a stream, decode TCP, track flows in both
//! directions (numbered like Wireshark's `tcp.stream`) and find Nagle × delayed-ACK stalls
//! by the capture rule of docs/field-notes.md §5.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
mod analyzer;
pub mod decode;
mod flow;
mod legacy;
mod reader;
mod stream;

pub use analyzer::{Analyzer, CaptureSummary, FlowFilter};
pub use decode::{TcpSegment, decode_tcp, link_type_supported};
pub use flow::{
    CLIENT_WAIT_NS, Endpoint, Flow, FlowSummary, Hold, HoldKind, LATE_FIRST_BYTE_NS, MIN_ROUND_TRIP_HOLD_NS,
    Role, SLOW_PATH_RTT_NS, SenderStalls, StallExample,
};
pub use legacy::{CaptureInput, read_capture};
pub use reader::{Packet, ReadError, ReadStats, read_packets, read_packets_buffered};
