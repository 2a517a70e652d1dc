//! The `struct tcp_info` a sock_diag dump attaches to each socket (INET_DIAG_INFO), read by
//! offset: the kernel sends as many bytes as it knows, so an older kernel's shorter struct
//! leaves the later figures `None` rather than failing. Offsets from include/uapi/linux/tcp.h.

use serde::Serialize;

/// The TCP_INFO figures of one socket as sock_diag gives them, without its descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DiagTcpInfo {
    /// Current retransmission timeout.
    pub rto_us: u32,
    /// The delayed-ACK timeout this socket would use now (`icsk_ack.ato`; 0 before it
    /// received data): not whether a delayed ACK is pending.
    pub ato_us: u32,
    /// The maximum segment size this side sends with.
    pub snd_mss_bytes: u32,
    /// The kernel's estimate of the peer's maximum segment size.
    pub rcv_mss_bytes: u32,
    /// Segments sent and not yet acknowledged (for a listener: its accept queue).
    pub unacked_segments: u32,
    /// Segments thought lost.
    pub lost_segments: u32,
    /// Segments retransmitted and not yet acknowledged.
    pub retrans_segments: u32,
    /// Time since this side last sent data.
    pub last_data_sent_ms: u32,
    /// Time since this side last received data.
    pub last_data_recv_ms: u32,
    /// Time since this side last received an ACK.
    pub last_ack_recv_ms: u32,
    /// Smoothed RTT: inflated on a Nagling side by the peer's ACK delay.
    pub rtt_us: u32,
    /// Variation of the smoothed RTT.
    pub rttvar_us: u32,
    /// Congestion window.
    pub snd_cwnd_segments: u32,
    /// Retransmitted segments over the connection's life.
    pub total_retrans_segments: u32,
    /// Bytes the peer acknowledged over the connection's life.
    pub bytes_acked: u64,
    /// Bytes received over the connection's life.
    pub bytes_received: u64,
    /// Segments sent over the connection's life.
    pub segments_out: u32,
    /// Segments received over the connection's life.
    pub segments_in: u32,
    /// Bytes written and not yet sent (held by Nagle, a cork, the window or the congestion
    /// window).
    pub notsent_bytes: u32,
    /// Minimum RTT seen, suspected delayed ACKs left out: the path's own; 0 before a sample.
    pub min_rtt_us: u32,
    /// Segments carrying data received.
    pub data_segments_in: u32,
    /// Segments carrying data sent.
    pub data_segments_out: u32,
    /// The kernel's latest delivery-rate sample.
    pub delivery_rate_bytes_per_s: u64,
    /// Time spent sending data (Linux ≥ 4.10).
    pub busy_time_us: Option<u64>,
    /// Time limited by the receiver's window (Linux ≥ 4.10).
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer (Linux ≥ 4.10).
    pub sndbuf_limited_us: Option<u64>,
    /// Bytes sent, retransmissions included (Linux ≥ 4.19).
    pub bytes_sent: Option<u64>,
    /// Bytes retransmitted (Linux ≥ 4.19).
    pub bytes_retrans: Option<u64>,
}

/// Reads the payload of an INET_DIAG_INFO attribute; `None` when it is shorter than the
/// struct of Linux 4.9 (`delivery_rate`, 168 bytes), which every kernel with pidfd_getfd has.
pub(crate) fn parse(bytes: &[u8]) -> Option<DiagTcpInfo> {
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
    let u64_at = |at: usize| bytes.get(at..at + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()));
    let min_rtt_us = u32_at(148)?;
    Some(DiagTcpInfo {
        rto_us: u32_at(8)?,
        ato_us: u32_at(12)?,
        snd_mss_bytes: u32_at(16)?,
        rcv_mss_bytes: u32_at(20)?,
        unacked_segments: u32_at(24)?,
        lost_segments: u32_at(32)?,
        retrans_segments: u32_at(36)?,
        last_data_sent_ms: u32_at(44)?,
        last_data_recv_ms: u32_at(52)?,
        last_ack_recv_ms: u32_at(56)?,
        rtt_us: u32_at(68)?,
        rttvar_us: u32_at(72)?,
        snd_cwnd_segments: u32_at(80)?,
        total_retrans_segments: u32_at(100)?,
        bytes_acked: u64_at(120)?,
        bytes_received: u64_at(128)?,
        segments_out: u32_at(136)?,
        segments_in: u32_at(140)?,
        notsent_bytes: u32_at(144)?,
        // The kernel's "no sample yet" is all ones.
        min_rtt_us: if min_rtt_us == u32::MAX { 0 } else { min_rtt_us },
        data_segments_in: u32_at(152)?,
        data_segments_out: u32_at(156)?,
        delivery_rate_bytes_per_s: u64_at(160)?,
        busy_time_us: u64_at(168),
        rwnd_limited_us: u64_at(176),
        sndbuf_limited_us: u64_at(184),
        bytes_sent: u64_at(200),
        bytes_retrans: u64_at(208),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_read_at_their_offsets_and_a_short_struct_leaves_later_ones_out() {
        let mut bytes = vec![0u8; 216];
        bytes[68..72].copy_from_slice(&40_000u32.to_ne_bytes());
        bytes[120..128].copy_from_slice(&12_345u64.to_ne_bytes());
        bytes[148..152].copy_from_slice(&u32::MAX.to_ne_bytes());
        bytes[200..208].copy_from_slice(&99u64.to_ne_bytes());
        let info = parse(&bytes).unwrap();
        assert_eq!((info.rtt_us, info.bytes_acked, info.min_rtt_us), (40_000, 12_345, 0));
        assert_eq!(info.bytes_sent, Some(99));
        let short = parse(&bytes[..192]).unwrap();
        assert_eq!((short.busy_time_us, short.bytes_sent), (Some(0), None));
        assert_eq!(parse(&bytes[..160]), None);
    }
}
