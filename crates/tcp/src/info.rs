//! What nodelay reports of a socket's TCP state, built from the kernel's struct: a
//! connection's figures, the loss counters of one end, and a listener's accept queue.

use crate::kernel::KernelTcpInfo;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What nodelay reports of a connection's TCP state (times in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpInfo {
    /// Smoothed RTT: inflated on the Nagling side by the peer's ACK delay.
    pub rtt_us: u32,
    /// Variation of the smoothed RTT.
    pub rttvar_us: u32,
    /// Minimum RTT seen; the kernel keeps suspected delayed ACKs out of it. 0 before the
    /// first RTT sample (the kernel's own "none yet" is all ones).
    pub min_rtt_us: u32,
    /// This socket's current delayed-ACK timeout.
    pub ato_us: u32,
    /// Current retransmission timeout.
    pub rto_us: u32,
    /// The maximum segment size this side sends with, in bytes.
    pub snd_mss_bytes: u32,
    /// The kernel's estimate of the maximum segment size the peer sends with, in bytes.
    pub rcv_mss_bytes: u32,
    /// Segments sent and not yet acknowledged.
    pub unacked_segments: u32,
    /// Bytes written and not yet sent (waiting for the window, Nagle or a cork).
    pub notsent_bytes: u32,
    /// Retransmitted segments over the connection's life...
    pub total_retransmits: u32,
    /// ...of which the peer reported this many as duplicates (D-SACK, `dsack_dups`): they
    /// were late, not lost (a path or a CPU stalled past the retransmission timer).
    pub spurious_retransmits: u32,
    /// Segments sent over the connection's life.
    pub segments_out: u32,
    /// Segments received over the connection's life.
    pub segments_in: u32,
}

impl TcpInfo {
    /// The figures of the kernel's struct; those an older kernel does not fill read 0.
    pub fn from_kernel(raw: &KernelTcpInfo) -> Self {
        TcpInfo {
            rtt_us: raw.rtt().unwrap_or(0),
            rttvar_us: raw.rttvar().unwrap_or(0),
            min_rtt_us: raw.min_rtt_us().unwrap_or(0),
            ato_us: raw.ato().unwrap_or(0),
            rto_us: raw.rto().unwrap_or(0),
            snd_mss_bytes: raw.snd_mss().unwrap_or(0),
            rcv_mss_bytes: raw.rcv_mss().unwrap_or(0),
            unacked_segments: raw.unacked().unwrap_or(0),
            notsent_bytes: raw.notsent_bytes().unwrap_or(0),
            total_retransmits: raw.total_retrans().unwrap_or(0),
            spurious_retransmits: raw.dsack_dups().unwrap_or(0),
            segments_out: raw.segs_out().unwrap_or(0),
            segments_in: raw.segs_in().unwrap_or(0),
        }
    }

    /// Resent segments the peer did not report as duplicates: those lost on the way.
    pub fn lost_segments_resent(&self) -> u32 {
        self.total_retransmits.saturating_sub(self.spurious_retransmits)
    }

    /// [`TcpInfo::min_rtt_us`] as a `Duration` (zero before the first sample).
    pub fn min_rtt(&self) -> Duration {
        from_kernel_us(self.min_rtt_us)
    }

    /// [`TcpInfo::rto_us`] as a `Duration`.
    pub fn rto(&self) -> Duration {
        from_kernel_us(self.rto_us)
    }
}

/// A kernel figure in microseconds (the unit `struct tcp_info` gives) as a `Duration`.
fn from_kernel_us(micros: u32) -> Duration {
    Duration::from_micros(u64::from(micros))
}

/// What one end of a connection knows of the segments lost between it and its peer, both ways.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossCounters {
    /// Packets received out of order over the socket's life (TCP_INFO `rcv_ooopack`): bytes
    /// beyond a hole, which the kernel holds from the reader until a retransmission fills it.
    pub out_of_order_packets: u32,
    /// Segments this end resent (`total_retrans`): the peer's kernel held what followed them,
    /// unless the peer already had them...
    pub retransmits: u32,
    /// ...which it says with a D-SACK (`dsack_dups`): a retransmission of a segment that was
    /// late, not lost (a path or a CPU that stalled past the retransmission timer).
    pub spurious_retransmits: u32,
    /// The path's round trip (`min_rtt`), 0 before a sample.
    pub min_rtt_us: u32,
}

impl LossCounters {
    /// `None` where the kernel is older than 5.4 (no `rcv_ooopack`).
    pub fn from_kernel(raw: &KernelTcpInfo) -> Option<Self> {
        Some(LossCounters {
            out_of_order_packets: raw.rcv_ooopack()?,
            retransmits: raw.total_retrans()?,
            spurious_retransmits: raw.dsack_dups()?,
            min_rtt_us: raw.min_rtt_us()?,
        })
    }

    /// [`LossCounters::min_rtt_us`] as a `Duration` (zero before a sample).
    pub fn min_rtt(&self) -> Duration {
        from_kernel_us(self.min_rtt_us)
    }
}

/// A listening socket's accept queue, as TCP_INFO gives it for a listener (the kernel puts
/// `sk_ack_backlog` in `tcpi_unacked` and `sk_max_ack_backlog` in `tcpi_sacked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenQueue {
    /// Connections accepted by the kernel and waiting for the program's `accept()`.
    pub queued: u32,
    /// The queue's limit: the `listen()` backlog, capped by `net.core.somaxconn`.
    pub backlog: u32,
}

/// The kernel's TCP states nodelay tells apart.
pub mod state {
    /// A connection that sent its SYN and awaits the answer.
    pub const SYN_SENT: u8 = 2;
    /// A listening socket.
    pub const LISTEN: u8 = 10;
}

impl ListenQueue {
    /// The queue of a listener; `None` for any other socket.
    pub fn from_kernel(raw: &KernelTcpInfo) -> Option<Self> {
        (raw.state()? == state::LISTEN)
            .then_some(ListenQueue { queued: raw.unacked()?, backlog: raw.sacked()? })
    }
}
