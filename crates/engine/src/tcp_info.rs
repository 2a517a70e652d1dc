//! Reads the kernel's TCP_INFO for a socket. libc's glibc struct stops before `tcpi_min_rtt`,
//! so the kernel layout (include/uapi/linux/tcp.h) is declared here up to the fields we use.
//!
//! Linux only: elsewhere TCP_INFO reads as `None` and TCP_QUICKACK is an "unsupported" error,
//! so the rest of nodelay builds and `bench` runs (without kernel figures) on other Unixes.

use serde::Serialize;
use std::os::fd::AsRawFd;

/// What nodelay reports of a connection's TCP state (times in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
    /// Resent segments the peer did not report as duplicates: those lost on the way.
    pub fn lost_segments_resent(&self) -> u32 {
        self.total_retransmits.saturating_sub(self.spurious_retransmits)
    }
}

#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct KernelTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    delivery_flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
}

#[cfg(target_os = "linux")]
impl KernelTcpInfo {
    /// The minimum RTT, 0 before a sample: `tcp_min_rtt()` is ~0U until one, and 4294.967 s
    /// is no RTT.
    fn min_rtt_us(&self) -> u32 {
        if self.min_rtt == u32::MAX { 0 } else { self.min_rtt }
    }
}

/// TCP_INFO is Linux's; other systems report no kernel figures.
#[cfg(not(target_os = "linux"))]
pub fn read_tcp_info(_socket: &impl AsRawFd) -> Option<TcpInfo> {
    None
}

/// TCP_INFO of a connected socket, or `None` where the kernel refuses (not TCP, closed).
#[cfg(target_os = "linux")]
pub fn read_tcp_info(socket: &impl AsRawFd) -> Option<TcpInfo> {
    let raw = read_raw(socket)?;
    Some(TcpInfo {
        rtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        min_rtt_us: raw.min_rtt_us(),
        ato_us: raw.ato,
        rto_us: raw.rto,
        snd_mss_bytes: raw.snd_mss,
        rcv_mss_bytes: raw.rcv_mss,
        unacked_segments: raw.unacked,
        notsent_bytes: raw.notsent_bytes,
        total_retransmits: raw.total_retrans,
        spurious_retransmits: raw.dsack_dups,
        segments_out: raw.segs_out,
        segments_in: raw.segs_in,
    })
}

#[cfg(target_os = "linux")]
fn read_raw(socket: &impl AsRawFd) -> Option<KernelTcpInfo> {
    read_raw_sized(socket).map(|(raw, _)| raw)
}

/// TCP_INFO and how many bytes of it the kernel filled (older kernels fill less).
#[cfg(target_os = "linux")]
fn read_raw_sized(socket: &impl AsRawFd) -> Option<(KernelTcpInfo, usize)> {
    let mut raw = KernelTcpInfo::default();
    let mut len = std::mem::size_of::<KernelTcpInfo>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `raw`, a plain-old-data struct.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut KernelTcpInfo).cast(),
            &mut len,
        )
    };
    // Kernels older than 4.6 return a shorter struct without min_rtt; zero stays zero.
    (rc == 0).then_some((raw, len as usize))
}

/// What one end of a connection knows of the segments lost between it and its peer, both ways.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LossCounters {
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

/// `None` where the kernel is older than 5.4 (no `rcv_ooopack`), refuses TCP_INFO, or off Linux.
#[cfg(target_os = "linux")]
pub(crate) fn read_loss_counters(socket: &impl AsRawFd) -> Option<LossCounters> {
    let (raw, filled) = read_raw_sized(socket)?;
    let end = std::mem::offset_of!(KernelTcpInfo, rcv_ooopack) + std::mem::size_of::<u32>();
    (filled >= end).then_some(LossCounters {
        out_of_order_packets: raw.rcv_ooopack,
        retransmits: raw.total_retrans,
        spurious_retransmits: raw.dsack_dups,
        min_rtt_us: raw.min_rtt_us(),
    })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn read_loss_counters(_socket: &impl AsRawFd) -> Option<LossCounters> {
    None
}

/// A listening socket's accept queue, as TCP_INFO gives it for a listener (the kernel puts
/// `sk_ack_backlog` in `tcpi_unacked` and `sk_max_ack_backlog` in `tcpi_sacked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ListenQueue {
    /// Connections accepted by the kernel and waiting for the program's `accept()`.
    pub queued: u32,
    /// The queue's limit: the `listen()` backlog, capped by `net.core.somaxconn`.
    pub backlog: u32,
}

/// The accept queue of a listening socket; `None` for any other socket, or off Linux.
#[cfg(target_os = "linux")]
pub fn read_listen_queue(socket: &impl AsRawFd) -> Option<ListenQueue> {
    const TCP_LISTEN: u8 = 10;
    let raw = read_raw(socket)?;
    (raw.state == TCP_LISTEN).then_some(ListenQueue { queued: raw.unacked, backlog: raw.sacked })
}

#[cfg(not(target_os = "linux"))]
pub fn read_listen_queue(_socket: &impl AsRawFd) -> Option<ListenQueue> {
    None
}

/// Whether a TCP socket has sent its SYN and awaits the answer (SYN-SENT); `None` where
/// TCP_INFO is refused, or off Linux.
#[cfg(target_os = "linux")]
pub fn is_syn_sent(socket: &impl AsRawFd) -> Option<bool> {
    const TCP_SYN_SENT: u8 = 2;
    read_raw(socket).map(|raw| raw.state == TCP_SYN_SENT)
}

#[cfg(not(target_os = "linux"))]
pub fn is_syn_sent(_socket: &impl AsRawFd) -> Option<bool> {
    None
}

/// Leaves pingpong (delayed-ACK) mode once and flushes a pending ACK. Not sticky: the
/// kernel re-enters pingpong, so callers set it again after every read.
#[cfg(target_os = "linux")]
pub fn set_quickack(socket: &(impl AsRawFd + std::os::fd::AsFd)) -> std::io::Result<()> {
    socket2::SockRef::from(socket).set_tcp_quickack(true)
}

/// TCP_QUICKACK is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn set_quickack(_socket: &(impl AsRawFd + std::os::fd::AsFd)) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "TCP_QUICKACK needs Linux"))
}

/// Whether this system has TCP_INFO and TCP_QUICKACK, which the doctor's experiments need.
pub const KERNEL_TCP_FIGURES: bool = cfg!(target_os = "linux");

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn reads_mss_and_rtt_of_a_loopback_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let info = read_tcp_info(&client).expect("TCP_INFO on a TCP socket");
        assert!(info.snd_mss_bytes > 500, "{info:?}");
        assert!(info.rto_us >= 200_000, "{info:?}");
        set_quickack(&client).unwrap();
    }

    #[test]
    fn a_listener_shows_its_backlog_and_the_connections_waiting_for_accept() {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
        socket.listen(7).unwrap();
        let listener: TcpListener = socket.into();
        let address = listener.local_addr().unwrap();
        let _waiting: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(address).unwrap()).collect();
        assert_eq!(read_listen_queue(&listener), Some(ListenQueue { queued: 3, backlog: 7 }));
        let (accepted, _) = listener.accept().unwrap();
        assert_eq!(read_listen_queue(&listener).map(|q| q.queued), Some(2));
        assert_eq!(read_listen_queue(&accepted), None, "a connection is no listener");
    }

    /// The kernel reports "no RTT sample yet" as all ones, which read as 4294.967 s.
    #[test]
    fn a_socket_without_an_rtt_sample_has_no_min_rtt() {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let info = read_tcp_info(&socket).expect("TCP_INFO on an unconnected TCP socket");
        assert_eq!((info.rtt_us, info.min_rtt_us), (0, 0), "{info:?}");
    }

    #[test]
    fn a_loopback_connection_receives_nothing_out_of_order() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let counters = read_loss_counters(&client).expect("this kernel is 5.4 or later");
        assert_eq!((counters.out_of_order_packets, counters.retransmits), (0, 0));
    }

    #[test]
    fn refuses_non_tcp_sockets() {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(read_tcp_info(&udp), None);
    }
}
