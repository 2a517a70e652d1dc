//! The kernel's `struct tcp_info` (include/uapi/linux/tcp.h), transcribed once. `getsockopt`
//! (TCP_INFO) and a sock_diag dump (INET_DIAG_INFO) both hand over its bytes, as many as the
//! running kernel knows; each figure is read at its offset in the layout below and is `None`
//! where an older kernel's shorter struct stops before it.

use std::mem::{offset_of, size_of};

/// The layout of `struct tcp_info`, up to the fields nodelay reads (Linux 5.4's
/// `tcpi_snd_wnd`), written once: the macro makes of it a `#[repr(C)]` struct that is never
/// built (it gives each field's offset and the size) and one accessor per field, `None`
/// where the kernel's struct stops before it.
macro_rules! kernel_struct {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {
        #[repr(C)]
        #[allow(dead_code)] // The fields exist for `offset_of!`.
        struct Layout {
            $($name: $ty,)*
        }

        impl KernelTcpInfo {
            $(
                #[doc = concat!("`tcpi_", stringify!($name), "`.")]
                $(#[$doc])*
                pub fn $name(&self) -> Option<$ty> {
                    self.field::<{ size_of::<$ty>() }>(offset_of!(Layout, $name)).map(<$ty>::from_ne_bytes)
                }
            )*
        }
    };
}

kernel_struct! {
    /// The TCP state (`TCP_ESTABLISHED` = 1, `TCP_SYN_SENT` = 2, `TCP_LISTEN` = 10).
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    delivery_flags: u8,
    /// Current retransmission timeout, in µs.
    rto: u32,
    /// The delayed-ACK timeout this socket would use now, in µs.
    ato: u32,
    /// The maximum segment size this side sends with, in bytes.
    snd_mss: u32,
    /// The kernel's estimate of the peer's maximum segment size, in bytes.
    rcv_mss: u32,
    /// Segments sent and not yet acknowledged; a listener's accept queue.
    unacked: u32,
    /// SACKed segments; a listener's backlog limit.
    sacked: u32,
    /// Segments thought lost.
    lost: u32,
    /// Segments retransmitted and not yet acknowledged.
    retrans: u32,
    fackets: u32,
    /// Time since this side last sent data, in ms.
    last_data_sent: u32,
    last_ack_sent: u32,
    /// Time since this side last received data, in ms.
    last_data_recv: u32,
    /// Time since this side last received an ACK, in ms.
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    /// Smoothed RTT, in µs.
    rtt: u32,
    /// Variation of the smoothed RTT, in µs.
    rttvar: u32,
    snd_ssthresh: u32,
    /// Congestion window, in segments.
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    /// Retransmitted segments over the connection's life.
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    /// Bytes the peer acknowledged.
    bytes_acked: u64,
    /// Bytes received.
    bytes_received: u64,
    /// Segments sent.
    segs_out: u32,
    /// Segments received.
    segs_in: u32,
    /// Bytes written and not yet sent.
    notsent_bytes: u32,
    /// Minimum RTT in µs, all ones before a sample (see [`KernelTcpInfo::min_rtt_us`]).
    min_rtt: u32,
    /// Segments carrying data received.
    data_segs_in: u32,
    /// Segments carrying data sent.
    data_segs_out: u32,
    /// The latest delivery-rate sample, in bytes/s.
    delivery_rate: u64,
    /// Time spent sending data, in µs (Linux 4.10).
    busy_time: u64,
    /// Time limited by the receiver's window, in µs (Linux 4.10).
    rwnd_limited: u64,
    /// Time limited by the send buffer, in µs (Linux 4.10).
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    /// Bytes sent, retransmissions included (Linux 4.19).
    bytes_sent: u64,
    /// Bytes retransmitted (Linux 4.19).
    bytes_retrans: u64,
    /// Retransmissions the peer reported as duplicates with a D-SACK (Linux 4.19).
    dsack_dups: u32,
    reord_seen: u32,
    /// Packets received out of order (Linux 5.4).
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// How many bytes of `struct tcp_info` nodelay asks for.
pub const KERNEL_TCP_INFO_BYTES: usize = size_of::<Layout>();

/// The bytes of one socket's `struct tcp_info`, as many as the kernel filled.
#[derive(Clone, Copy)]
pub struct KernelTcpInfo {
    bytes: [u8; KERNEL_TCP_INFO_BYTES],
    filled: usize,
}

impl KernelTcpInfo {
    /// The struct as the kernel sent it: `bytes` may be shorter (an older kernel) or longer
    /// (a newer one) than the layout nodelay knows.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut info = KernelTcpInfo {
            bytes: [0; KERNEL_TCP_INFO_BYTES],
            filled: bytes.len().min(KERNEL_TCP_INFO_BYTES),
        };
        info.bytes[..info.filled].copy_from_slice(&bytes[..info.filled]);
        info
    }

    /// How many bytes the kernel filled.
    pub fn filled_bytes(&self) -> usize {
        self.filled
    }

    fn field<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let end = offset + N;
        (end <= self.filled).then(|| self.bytes[offset..end].try_into().expect("N bytes"))
    }
}

impl KernelTcpInfo {
    /// The minimum RTT in µs, 0 before a sample: the kernel's "none yet" is all ones, and
    /// 4294.967 s is no RTT.
    pub fn min_rtt_us(&self) -> Option<u32> {
        self.min_rtt().map(|rtt| if rtt == u32::MAX { 0 } else { rtt })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets as include/uapi/linux/tcp.h puts them (and as pahole prints them).
    #[test]
    fn the_layout_matches_the_kernels() {
        assert_eq!(offset_of!(Layout, rto), 8);
        assert_eq!(offset_of!(Layout, rtt), 68);
        assert_eq!(offset_of!(Layout, total_retrans), 100);
        assert_eq!(offset_of!(Layout, bytes_acked), 120);
        assert_eq!(offset_of!(Layout, min_rtt), 148);
        assert_eq!(offset_of!(Layout, delivery_rate), 160);
        assert_eq!(offset_of!(Layout, bytes_sent), 200);
        assert_eq!(offset_of!(Layout, dsack_dups), 216);
        assert_eq!(offset_of!(Layout, rcv_ooopack), 224);
        assert_eq!(KERNEL_TCP_INFO_BYTES, 232);
    }

    #[test]
    fn a_short_struct_leaves_later_figures_out_and_a_long_one_is_cut() {
        let mut bytes = vec![0u8; 300];
        bytes[68..72].copy_from_slice(&40_000u32.to_ne_bytes());
        bytes[148..152].copy_from_slice(&u32::MAX.to_ne_bytes());
        bytes[200..208].copy_from_slice(&99u64.to_ne_bytes());
        let long = KernelTcpInfo::from_bytes(&bytes);
        assert_eq!((long.rtt(), long.min_rtt_us(), long.bytes_sent()), (Some(40_000), Some(0), Some(99)));
        assert_eq!(long.filled_bytes(), KERNEL_TCP_INFO_BYTES);
        let short = KernelTcpInfo::from_bytes(&bytes[..192]);
        assert_eq!((short.busy_time(), short.bytes_sent()), (Some(0), None));
        assert_eq!(KernelTcpInfo::from_bytes(&bytes[..70]).rtt(), None);
    }
}
