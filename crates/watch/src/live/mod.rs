//! The live capture: an AF_PACKET socket (cooked, SOCK_DGRAM: packets from their IP header
//! whatever the link) bound to one interface or to all (`any`), with the kernel filter of
//! [`filter`] attached before it receives anything, kernel timestamps, the memory-mapped
//! [`ring`] (or, where the kernel refuses one, `recvmmsg` [`batch`]es from a large receive
//! buffer), and the kernel's own count of what it dropped (PACKET_STATISTICS): a drop is
//! counted and shown, never silent.
//!
//! On the loopback device every packet passes twice (sent, then received): on `lo` the kernel
//! is told to skip the sent copy (PACKET_IGNORE_OUTGOING); on `any` the sent copy of a
//! loopback packet is skipped here, as libpcap does.

pub mod batch;
pub mod filter;
pub mod ring;

use batch::{Batch, Frame};
use ring::Ring;
use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// The receive buffer asked for, in bytes: about 50 ms of 100k packets/s of headers-only
/// packets with the kernel's per-packet overhead, so a scheduling hiccup drops nothing.
const RECEIVE_BUFFER_BYTES: i32 = 8 << 20;
/// Once packets wait, how long to let more gather before reading them: a wake-up and a few
/// `recvmmsg` calls per millisecond instead of one per packet or two (the kernel timestamps
/// each packet as it passes, so timing is unaffected). At 100k packets/s that is 100 packets
/// a read, well within the receive buffer.
const GATHER: Duration = Duration::from_millis(1);
/// `ETH_P_ALL`: every protocol (the filter keeps IPv4 and IPv6 TCP).
const ETH_P_ALL: u16 = 0x0003;
/// `PACKET_IGNORE_OUTGOING` (Linux 4.20), not in every libc.
const PACKET_IGNORE_OUTGOING: i32 = 23;

/// Why the capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// No interface of that name.
    #[error("no network interface named '{0}' (see `ip link`; `any` captures on all of them)")]
    NoSuchInterface(String),
    /// The process may not open packet sockets (no CAP_NET_RAW).
    #[error("opening a packet socket was refused: {0} (needs root or CAP_NET_RAW)")]
    NotPermitted(io::Error),
    /// Anything else the kernel refused.
    #[error("{what}: {error}")]
    Io {
        /// The step that failed.
        what: &'static str,
        /// The kernel's answer.
        error: io::Error,
    },
}

/// What the kernel counted for the socket since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Packets the filter kept (delivered or dropped).
    pub packets: u64,
    /// Of those, packets dropped because watch did not read fast enough.
    pub dropped: u64,
}

/// How packets are read from the socket.
enum Reader {
    /// The TPACKET_V3 ring.
    Ring(Ring),
    /// `recvmmsg` batches.
    Batch(Batch),
}

/// An open capture.
pub struct LiveCapture {
    socket: OwnedFd,
    reader: Reader,
    counts: KernelCounts,
    /// The interface's name as asked (`any` for all).
    pub interface: String,
}

fn io_error(what: &'static str) -> CaptureError {
    CaptureError::Io { what, error: io::Error::last_os_error() }
}

fn set_option<T>(socket: &OwnedFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points at a live T of the size given.
    let result = unsafe {
        libc::setsockopt(socket.as_raw_fd(), level, name, (value as *const T).cast(), size_of::<T>() as u32)
    };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The index of interface `name`, 0 for `any`.
pub fn interface_index(name: &str) -> Result<u32, CaptureError> {
    if name == "any" {
        return Ok(0);
    }
    let no_such = || CaptureError::NoSuchInterface(name.to_string());
    let c_name = CString::new(name).map_err(|_| no_such())?;
    // SAFETY: a NUL-terminated string.
    match unsafe { libc::if_nametoindex(c_name.as_ptr()) } {
        0 => Err(no_such()),
        index => Ok(index),
    }
}

/// Whether interface `index` is a loopback device.
fn is_loopback(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/type")).is_ok_and(|t| t.trim() == "772")
}

impl LiveCapture {
    /// Opens a capture on `interface` (`any`: all) of TCP on `ports` (empty: every port).
    pub fn open(interface: &str, ports: &[u16]) -> Result<Self, CaptureError> {
        let index = interface_index(interface)?;
        // Protocol 0: the socket receives nothing until it is bound with a protocol, so no
        // packet slips in before the filter is attached.
        // SAFETY: plain socket(2).
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return Err(match error.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => CaptureError::NotPermitted(error),
                _ => CaptureError::Io { what: "opening a packet socket", error },
            });
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        let program = filter::tcp_filter(ports);
        let fprog = libc::sock_fprog {
            len: program.len() as u16,
            filter: program.as_ptr() as *mut libc::sock_filter,
        };
        set_option(&socket, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
            .map_err(|error| CaptureError::Io { what: "attaching the kernel filter", error })?;
        let reader = match Ring::map(&socket) {
            Ok(ring) => Reader::Ring(ring),
            Err(_) => {
                set_option(&socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1i32)
                    .map_err(|error| CaptureError::Io { what: "asking for kernel timestamps", error })?;
                // Beyond the system's rmem_max only with CAP_NET_ADMIN; the plain request is capped.
                if set_option(&socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &RECEIVE_BUFFER_BYTES).is_err()
                {
                    let _ = set_option(&socket, libc::SOL_SOCKET, libc::SO_RCVBUF, &RECEIVE_BUFFER_BYTES);
                }
                Reader::Batch(Batch::default())
            }
        };
        if index != 0 && is_loopback(interface) {
            // Older kernels lack it: the sent copies are then skipped in user space.
            let _ = set_option(&socket, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32);
        }
        // SAFETY: a zeroed sockaddr_ll is valid; the fields set are its address.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = ETH_P_ALL.to_be();
        address.sll_ifindex = index as i32;
        // SAFETY: `address` is a sockaddr_ll of the size given.
        let bound = unsafe {
            libc::bind(socket.as_raw_fd(), (&raw const address).cast(), size_of::<libc::sockaddr_ll>() as u32)
        };
        if bound != 0 {
            return Err(io_error("binding the packet socket to the interface"));
        }
        let mut capture =
            LiveCapture { socket, reader, counts: KernelCounts::default(), interface: interface.into() };
        // Counting starts now: what the socket saw before bind is not ours.
        capture.kernel_counts();
        capture.counts = KernelCounts::default();
        Ok(capture)
    }

    /// Waits up to `timeout` for packets, lets more gather for `GATHER`, then hands every
    /// one waiting to `each` (in batches, until the socket is empty or `most` packets were
    /// read). Returns the packets read.
    pub fn read(
        &mut self,
        timeout: Duration,
        most: usize,
        mut each: impl FnMut(Frame<'_>),
    ) -> io::Result<usize> {
        let mut poll = libc::pollfd { fd: self.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let millis = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(error) };
        }
        let reader = match &mut self.reader {
            Reader::Ring(ring) => return Ok(ring.read(most.div_ceil(1000).max(1), each)),
            Reader::Batch(batch) => batch,
        };
        if ready > 0 && !timeout.is_zero() {
            std::thread::sleep(GATHER);
        }
        let mut total = 0;
        while total < most {
            let read = reader.read(&self.socket, &mut each)?;
            total += read;
            if read < batch::BATCH {
                break;
            }
        }
        Ok(total)
    }

    /// Whether packets are read from the memory-mapped ring (else in `recvmmsg` batches).
    pub fn uses_ring(&self) -> bool {
        matches!(self.reader, Reader::Ring(_))
    }

    /// Everything captured until now, the ring's partly filled block too (it is handed over
    /// [`ring::BLOCK_TIMEOUT_MS`] after its first packet): for the last summary.
    pub fn drain(&mut self, each: impl FnMut(Frame<'_>)) -> io::Result<usize> {
        let wait = match self.reader {
            Reader::Ring(_) => Duration::from_millis(u64::from(ring::BLOCK_TIMEOUT_MS) * 2),
            Reader::Batch(_) => Duration::ZERO,
        };
        // The ring's block is handed over on its timer: poll until it is, or the wait is over.
        if wait > Duration::ZERO {
            std::thread::sleep(wait);
        }
        self.read(Duration::ZERO, usize::MAX, each)
    }

    /// The kernel's counts since the capture opened (PACKET_STATISTICS, which resets on each
    /// read, summed here).
    pub fn kernel_counts(&mut self) -> KernelCounts {
        let mut stats = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut length = size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: `stats` is a tpacket_stats of the length given.
        let result = unsafe {
            libc::getsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&raw mut stats).cast(),
                &mut length,
            )
        };
        if result == 0 {
            self.counts.packets += u64::from(stats.tp_packets);
            self.counts.dropped += u64::from(stats.tp_drops);
        }
        self.counts
    }

    /// Sent copies of loopback packets skipped in user space (on `any`).
    pub fn loopback_copies(&self) -> u64 {
        match &self.reader {
            Reader::Ring(ring) => ring.loopback_copies,
            Reader::Batch(batch) => batch.loopback_copies,
        }
    }
}
