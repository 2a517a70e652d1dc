//! Asks the kernel about one socket: TCP_INFO by `getsockopt`, and TCP_QUICKACK.
//!
//! Linux only: elsewhere TCP_INFO reads as `None` and TCP_QUICKACK is an "unsupported" error,
//! so the rest of nodelay builds and `bench` runs (without kernel figures) on other Unixes.

#![allow(unsafe_code)] // One getsockopt into a byte buffer.

use crate::info::{ListenQueue, LossCounters, TcpInfo, state};
use crate::kernel::KernelTcpInfo;
use std::os::fd::{AsFd, AsRawFd};

/// Whether this system has TCP_INFO and TCP_QUICKACK, which the doctor's experiments need.
pub const KERNEL_TCP_FIGURES: bool = cfg!(target_os = "linux");

/// The kernel's struct for a socket, as many bytes as it filled; `None` where it refuses
/// (not TCP, closed), or off Linux.
#[cfg(target_os = "linux")]
pub fn read_kernel_tcp_info(socket: &impl AsRawFd) -> Option<KernelTcpInfo> {
    let mut bytes = [0u8; crate::kernel::KERNEL_TCP_INFO_BYTES];
    let mut len = bytes.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `bytes`, which holds `len` bytes,
    // and sets `len` to how many it wrote.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            bytes.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (rc == 0).then(|| KernelTcpInfo::from_bytes(&bytes[..(len as usize).min(bytes.len())]))
}

/// TCP_INFO is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn read_kernel_tcp_info(_socket: &impl AsRawFd) -> Option<KernelTcpInfo> {
    None
}

/// TCP_INFO of a connected socket, or `None` where the kernel refuses (not TCP, closed).
pub fn read_tcp_info(socket: &impl AsRawFd) -> Option<TcpInfo> {
    read_kernel_tcp_info(socket).map(|raw| TcpInfo::from_kernel(&raw))
}

/// `None` where the kernel is older than 5.4 (no `rcv_ooopack`), refuses TCP_INFO, or off Linux.
pub fn read_loss_counters(socket: &impl AsRawFd) -> Option<LossCounters> {
    LossCounters::from_kernel(&read_kernel_tcp_info(socket)?)
}

/// The accept queue of a listening socket; `None` for any other socket, or off Linux.
pub fn read_listen_queue(socket: &impl AsRawFd) -> Option<ListenQueue> {
    ListenQueue::from_kernel(&read_kernel_tcp_info(socket)?)
}

/// Whether a TCP socket has sent its SYN and awaits the answer (SYN-SENT); `None` where
/// TCP_INFO is refused, or off Linux.
pub fn is_syn_sent(socket: &impl AsRawFd) -> Option<bool> {
    Some(read_kernel_tcp_info(socket)?.state()? == state::SYN_SENT)
}

/// Leaves pingpong (delayed-ACK) mode once and flushes a pending ACK. Not sticky: the
/// kernel re-enters pingpong, so callers set it again after every read.
#[cfg(target_os = "linux")]
pub fn set_quickack(socket: &(impl AsRawFd + AsFd)) -> std::io::Result<()> {
    socket2::SockRef::from(socket).set_tcp_quickack(true)
}

/// TCP_QUICKACK is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn set_quickack(_socket: &(impl AsRawFd + AsFd)) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "TCP_QUICKACK needs Linux"))
}

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
        assert_eq!(is_syn_sent(&accepted), Some(false));
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
