//! Blocking reads that end at a deadline, for the probes that wait seconds (Expect, hold,
//! idle). Not `SO_RCVTIMEO`: Linux keeps that timeout on its timer wheel, which rounds a long
//! timer up to its level's granularity (64 jiffies, 256 ms at HZ=250, for a timeout of 2 to
//! 16 s), so an idle probe that waited out a 3 s budget ended up to a quarter of a second
//! late. poll(2) sleeps on a high-resolution timer.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Reads what arrives before `deadline` (`Ok(Some(0))`: the peer closed); `Ok(None)` once
/// the deadline has passed with nothing to read.
pub(crate) fn read_by(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
) -> io::Result<Option<usize>> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        // Whole milliseconds, rounded up: under a millisecond late, never early.
        let millis = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
        let mut poll_fd = libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, borrowed for the call only.
        let ready = unsafe { libc::poll(&mut poll_fd, 1, millis) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        } else if ready > 0 {
            // Readable, closed or failed: the read says which, without blocking.
            match stream.read(buffer) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                result => return result.map(Some),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    #[test]
    fn ends_at_the_deadline_not_a_timer_wheel_slot_later() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _held = listener.accept().unwrap();
        let start = Instant::now();
        // 1.1 s is a level-2 timer at HZ=250: SO_RCVTIMEO could end it up to 256 ms late.
        let read = read_by(&mut stream, &mut [0u8; 16], start + Duration::from_millis(1100)).unwrap();
        let waited = start.elapsed();
        assert_eq!(read, None);
        assert!(waited >= Duration::from_millis(1100) && waited < Duration::from_millis(1150), "{waited:?}");
    }

    #[test]
    fn returns_data_and_the_close() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server.write_all(b"hi").unwrap();
        drop(server);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buffer = [0u8; 16];
        assert_eq!(read_by(&mut stream, &mut buffer, deadline).unwrap(), Some(2));
        assert_eq!(&buffer[..2], b"hi");
        assert_eq!(read_by(&mut stream, &mut buffer, deadline).unwrap(), Some(0));
    }
}
