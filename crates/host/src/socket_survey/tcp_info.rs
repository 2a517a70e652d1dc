//! The `struct tcp_info` a sock_diag dump attaches to each socket (INET_DIAG_INFO), read
//! through the one transcription of the kernel's layout (`nodelay_tcp::KernelTcpInfo`): the
//! kernel sends as many bytes as it knows, so an older kernel's shorter struct leaves the
//! later figures `None` rather than failing.

use nodelay_tcp::KernelTcpInfo;
use serde::{Deserialize, Serialize};

/// The TCP_INFO figures of one socket as sock_diag gives them, without its descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
/// struct of Linux 4.9 (`delivery_rate`), which every kernel with pidfd_getfd has.
pub(crate) fn parse(bytes: &[u8]) -> Option<DiagTcpInfo> {
    let raw = KernelTcpInfo::from_bytes(bytes);
    Some(DiagTcpInfo {
        rto_us: raw.rto()?,
        ato_us: raw.ato()?,
        snd_mss_bytes: raw.snd_mss()?,
        rcv_mss_bytes: raw.rcv_mss()?,
        unacked_segments: raw.unacked()?,
        lost_segments: raw.lost()?,
        retrans_segments: raw.retrans()?,
        last_data_sent_ms: raw.last_data_sent()?,
        last_data_recv_ms: raw.last_data_recv()?,
        last_ack_recv_ms: raw.last_ack_recv()?,
        rtt_us: raw.rtt()?,
        rttvar_us: raw.rttvar()?,
        snd_cwnd_segments: raw.snd_cwnd()?,
        total_retrans_segments: raw.total_retrans()?,
        bytes_acked: raw.bytes_acked()?,
        bytes_received: raw.bytes_received()?,
        segments_out: raw.segs_out()?,
        segments_in: raw.segs_in()?,
        notsent_bytes: raw.notsent_bytes()?,
        min_rtt_us: raw.min_rtt_us()?,
        data_segments_in: raw.data_segs_in()?,
        data_segments_out: raw.data_segs_out()?,
        delivery_rate_bytes_per_s: raw.delivery_rate()?,
        busy_time_us: raw.busy_time(),
        rwnd_limited_us: raw.rwnd_limited(),
        sndbuf_limited_us: raw.sndbuf_limited(),
        bytes_sent: raw.bytes_sent(),
        bytes_retrans: raw.bytes_retrans(),
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
