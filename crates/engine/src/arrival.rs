//! When a read's bytes reached this machine: the kernel's receive timestamp (SO_TIMESTAMPNS),
//! for loops that do not wake for every response (`bench --io-uring` waits for several).
//!
//! Loopback stamps a segment when it is handed to the receiving side, so the time is the
//! response's arrival, not when the worker got round to it; TCP reports the stamp of the last
//! segment a read consumed. The stamp is on CLOCK_REALTIME: it is carried onto the monotonic
//! clock through a pair of readings taken at the same wake-up, so a clock step between the two
//! costs at most the microseconds between the arrival and that wake-up.

use std::io;
use std::mem::{MaybeUninit, size_of};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Asks the kernel to stamp what `fd` receives.
pub fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid option value of the declared size.
    let result = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Nanoseconds since the Unix epoch on CLOCK_REALTIME, the receive stamps' clock.
fn realtime_ns() -> i128 {
    let mut now = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: CLOCK_REALTIME always exists and `now` is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, now.as_mut_ptr()) };
    // SAFETY: filled by the call above.
    let now = unsafe { now.assume_init() };
    i128::from(now.tv_sec) * 1_000_000_000 + i128::from(now.tv_nsec)
}

/// The monotonic and real clocks read together, to place realtime stamps on `Instant`s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockPair {
    instant: Instant,
    realtime_ns: i128,
}

impl ClockPair {
    pub fn now() -> Self {
        ClockPair { instant: Instant::now(), realtime_ns: realtime_ns() }
    }

    /// The instant of a realtime stamp. Bytes that arrived after this pair was read (while the
    /// worker dealt with the wake-up's other sockets) get a fresh pair first, else they would
    /// be dated back to it.
    pub fn place(&mut self, stamp_ns: i128) -> Instant {
        if stamp_ns > self.realtime_ns {
            *self = ClockPair::now();
        }
        self.instant_of(stamp_ns)
    }

    /// The instant of a realtime stamp, never after this pair's reading.
    fn instant_of(&self, stamp_ns: i128) -> Instant {
        let age_ns = (self.realtime_ns - stamp_ns).max(0);
        let age = Duration::from_nanos(u64::try_from(age_ns).unwrap_or(u64::MAX));
        self.instant.checked_sub(age).unwrap_or(self.instant)
    }
}

/// Reads into `buffer` like read(2), with the receive stamp of what was read (nanoseconds on
/// CLOCK_REALTIME), when the kernel gave one.
pub fn read_stamped(fd: RawFd, buffer: &mut [u8]) -> io::Result<(usize, Option<i128>)> {
    // A cmsghdr and a timespec, aligned as cmsg needs.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: buffer.len() };
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    // socklen_t on musl, size_t on glibc.
    message.msg_controllen = size_of_val(&control) as _;
    // SAFETY: `message` describes writable memory of the stated sizes.
    let read = unsafe { libc::recvmsg(fd, &mut message, 0) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: walks the control messages the kernel wrote within `control`.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            let whole =
                (*header).cmsg_len as usize >= libc::CMSG_LEN(size_of::<libc::timespec>() as u32) as usize;
            if (*header).cmsg_level == libc::SOL_SOCKET
                && (*header).cmsg_type == libc::SCM_TIMESTAMPNS
                && whole
            {
                let time = libc::CMSG_DATA(header).cast::<libc::timespec>().read_unaligned();
                stamp = Some(i128::from(time.tv_sec) * 1_000_000_000 + i128::from(time.tv_nsec));
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok((read as usize, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_stamp_is_the_arrival_not_the_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        enable(receiver.as_raw_fd()).unwrap();
        let mut buffer = [0u8; 16];
        // The kernel switches stamping on for the whole machine in deferred work: until then
        // segments arrive unstamped (the worker times those by its clock).
        let mut tries = 0;
        while tries < 1000 {
            sender.write_all(b".").unwrap();
            if read_stamped(receiver.as_raw_fd(), &mut buffer).unwrap().1.is_some() {
                break;
            }
            tries += 1;
            std::thread::yield_now();
        }
        assert!(tries < 1000, "no segment was stamped");
        // Loopback hands the segment over inside write(): it arrives between these two.
        let before_write = Instant::now();
        sender.write_all(b"hello").unwrap();
        let written = Instant::now();
        // The bytes wait in the socket while the reader is busy elsewhere.
        let busy_until = written + Duration::from_millis(30);
        while Instant::now() < busy_until {
            std::hint::spin_loop();
        }
        let (read, stamp) = read_stamped(receiver.as_raw_fd(), &mut buffer).unwrap();
        let mut clocks = ClockPair::now();
        assert_eq!(&buffer[..read], b"hello");
        let arrived = clocks.place(stamp.expect("the kernel stamps received segments"));
        // The two clocks are read a few hundred nanoseconds apart: a millisecond of slack.
        let slack = Duration::from_millis(1);
        assert!(arrived + slack >= before_write && arrived <= written + slack, "arrived outside the write");
        assert!(clocks.instant - arrived >= Duration::from_millis(29), "the stamp is the read's time");
    }

    #[test]
    fn a_stamp_after_the_wake_up_is_placed_on_a_fresh_pair() {
        let mut clocks = ClockPair::now();
        let woke = clocks.instant;
        let later = woke + Duration::from_millis(3);
        while Instant::now() < later {
            std::hint::spin_loop();
        }
        let placed = clocks.place(realtime_ns());
        assert!(placed >= woke + Duration::from_millis(2), "placed {:?} after the wake-up", placed - woke);
        assert!(placed <= Instant::now());
    }

    #[test]
    fn a_socket_without_stamps_reads_plainly() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        sender.write_all(b"x").unwrap();
        let mut buffer = [0u8; 4];
        assert_eq!(read_stamped(receiver.as_raw_fd(), &mut buffer).unwrap(), (1, None));
    }
}
