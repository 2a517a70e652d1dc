//! One direction of the link: a thread that drains packets from one TUN device as they come,
//! holds each until its [`Schedule`] says it leaves, then writes it to the other device.
//! It waits on `ppoll` with a nanosecond timeout, so a packet leaves on time to within the
//! scheduler's wake-up latency; [`crate::Path`] runs these threads at real-time priority
//! so that a busy machine does not stretch the path.

use crate::schedule::{QUEUE_LIMIT_PACKETS, Schedule};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Largest IP packet a TUN device hands over.
const LARGEST_PACKET_BYTES: usize = 65_536;

/// Moves packets from `source` to `destination` on `schedule`'s times, until reading the
/// source fails for good (its namespace was deleted).
pub(crate) fn forward(mut source: File, mut destination: File, mut schedule: Schedule) -> io::Result<()> {
    let mut waiting: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buffer = vec![0u8; LARGEST_PACKET_BYTES];
    loop {
        let timeout =
            waiting.front().map(|(departure, _)| departure.saturating_duration_since(Instant::now()));
        wait_readable(&source, timeout)?;
        loop {
            match source.read(&mut buffer) {
                Ok(0) => return Ok(()),
                Ok(length) => {
                    let Some(departure) = schedule.departure(Instant::now(), length) else { continue };
                    if waiting.len() < QUEUE_LIMIT_PACKETS {
                        waiting.push_back((departure, buffer[..length].to_vec()));
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        let now = Instant::now();
        // Departures never decrease (the schedule keeps order), so the due ones are in front.
        while waiting.front().is_some_and(|(departure, _)| *departure <= now) {
            let (_, packet) = waiting.pop_front().expect("a front packet");
            // A packet the far kernel refuses is lost, as on a wire; the path goes on.
            let _ = destination.write(&packet);
        }
    }
}

/// Waits until `source` has a packet or `timeout` (None: no limit) passes.
fn wait_readable(source: &File, timeout: Option<std::time::Duration>) -> io::Result<()> {
    let mut poll = libc::pollfd { fd: source.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let timespec = timeout.map(|timeout| libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(i32::MAX.into()),
        tv_nsec: timeout.subsec_nanos().into(),
    });
    let timespec_pointer = timespec.as_ref().map_or(std::ptr::null(), |timespec| timespec as *const _);
    // SAFETY: one valid pollfd for the call; the timespec, when given, outlives the call; no
    // signal mask is passed.
    let ready = unsafe { libc::ppoll(&mut poll, 1, timespec_pointer, std::ptr::null()) };
    if ready < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    Ok(())
}
