//! The model of TCP that every nodelay crate shares, written once: what the kernel says of a
//! socket (TCP_INFO), its constants and delayed-ACK timers, the thresholds the rules judge
//! by, how a path's round trip is judged, the finding ids, the one time-unit convention and
//! the one percentile definition.
//!
//! A leaf: it depends on no other nodelay crate, so the capture parser (which cannot import
//! the engine), the engine, host, proxy, the rules and watch all take their facts from here
//! instead of copying them.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod end;
mod finding_id;
pub mod info;
mod kernel;
pub mod path;
pub mod quantile;
pub mod socket;
pub mod thresholds;
pub mod time;
pub mod timers;

pub use end::{HoldKind, Role};
pub use finding_id::FindingId;
pub use info::{ListenQueue, LossCounters, TcpInfo};
pub use kernel::KernelTcpInfo;
pub use path::{
    INITIAL_WINDOW_SEGMENTS, MIN_PATH_RTT, RTO_MIN, is_path, judged_rtt, judged_rtt_ms, path_rtt_ms,
};
pub use quantile::{distribution_ns, percentile_ms, quantile_ms};
pub use socket::{
    KERNEL_TCP_FIGURES, is_syn_sent, read_kernel_tcp_info, read_listen_queue, read_loss_counters,
    read_tcp_info, set_quickack,
};
pub use timers::{DelayedAckTimer, hop_stall_timer, match_delayed_ack_timer};
