//! Fuzzes the reader of the kernel's `struct tcp_info` (nodelay_tcp::KernelTcpInfo), which
//! takes the bytes a getsockopt or a sock_diag dump handed over, as many as the kernel knew.
//! Whatever the bytes: no panic; a figure is read only where the bytes reach its end; the
//! minimum RTT is never the kernel's "none yet"; the reports built from it never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_tcp::{KernelTcpInfo, ListenQueue, LossCounters, TcpInfo};

fuzz_target!(|bytes: &[u8]| {
    let raw = KernelTcpInfo::from_bytes(bytes);
    assert!(raw.filled_bytes() <= bytes.len());
    // rcv_ooopack ends at byte 228, rtt at 72, state at 1: each is there exactly when the
    // bytes reach that far.
    assert_eq!(raw.rcv_ooopack().is_some(), raw.filled_bytes() >= 228);
    assert_eq!(raw.rtt().is_some(), raw.filled_bytes() >= 72);
    assert_eq!(raw.state().is_some(), raw.filled_bytes() >= 1);
    assert_ne!(raw.min_rtt_us(), Some(u32::MAX));
    let info = TcpInfo::from_kernel(&raw);
    assert!(info.lost_segments_resent() <= info.total_retransmits);
    let _ = LossCounters::from_kernel(&raw);
    let _ = ListenQueue::from_kernel(&raw);
});
