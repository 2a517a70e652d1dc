//! floor_client's `uring-multishot` mode: the I/O itself through io_uring, not only the
//! readiness. Each connection has one multishot RecvMsg that lands every read, its arrival
//! stamp (SO_TIMESTAMPNS) beside it, in a buffer the kernel picks from a registered ring of
//! provided buffers; the next request goes out as a Send whose success posts nothing. One
//! io_uring_enter submits a batch's sends and waits for the next batch (N/2 completions or
//! 500 µs), so a request costs no system call of its own. It answers whether moving the
//! reads and writes into the ring beats `uring-stamped`'s recvmsg and send per request
//! (issue 15's candidate "io_uring as an option").

use io_uring::{IoUring, cqueue, opcode, squeue, types};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

/// Provided buffers: a power of two, as the kernel requires of a buffer ring.
const BUFFERS: u16 = 1024;
const BUFFER_BYTES: usize = 2048;
/// The control space asked of each recvmsg: a cmsghdr and a timespec, with room to spare.
const CONTROL_BYTES: u32 = 64;
/// Marks a Send's completion (posted only when it failed) apart from a connection's receive.
const SEND: u64 = 1 << 32;
const BUFFER_GROUP: u16 = 0;

/// The ring of provided buffers: entries the kernel takes buffers from, at a page-aligned
/// mapping, and the buffers themselves.
struct BufferRing {
    entries: *mut types::BufRingEntry,
    buffers: Vec<u8>,
    /// The next free slot, as the kernel reads it from the ring's tail.
    tail: u16,
}

impl BufferRing {
    fn new() -> Result<BufferRing, String> {
        let length = usize::from(BUFFERS) * size_of::<types::BufRingEntry>();
        // SAFETY: a fresh anonymous mapping, unmapped in Drop.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        let mut ring = BufferRing {
            entries: mapping.cast(),
            buffers: vec![0; usize::from(BUFFERS) * BUFFER_BYTES],
            tail: 0,
        };
        for id in 0..BUFFERS {
            ring.give_back(id);
        }
        Ok(ring)
    }

    /// Puts buffer `id` back at the tail for the kernel to fill again.
    fn give_back(&mut self, id: u16) {
        let slot = usize::from(self.tail & (BUFFERS - 1));
        // SAFETY: `slot` is within the mapping's BUFFERS entries.
        let entry = unsafe { &mut *self.entries.add(slot) };
        entry.set_addr(self.buffers.as_ptr() as u64 + (usize::from(id) * BUFFER_BYTES) as u64);
        entry.set_len(BUFFER_BYTES as u32);
        entry.set_bid(id);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail shares the first entry's last field; the kernel reads it
        // concurrently, so it is published with a release store after the entry is written.
        let tail = unsafe { &*types::BufRingEntry::tail(self.entries).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }

    fn buffer(&self, id: u16, length: usize) -> &[u8] {
        let start = usize::from(id) * BUFFER_BYTES;
        &self.buffers[start..start + length.min(BUFFER_BYTES)]
    }
}

impl Drop for BufferRing {
    fn drop(&mut self) {
        let length = usize::from(BUFFERS) * size_of::<types::BufRingEntry>();
        // SAFETY: unmaps the mapping made in `new`, once.
        unsafe { libc::munmap(self.entries.cast(), length) };
    }
}

pub fn run(
    streams: &[TcpStream],
    request: &[u8],
    response_bytes: usize,
    deadline: Instant,
) -> Result<u64, String> {
    let mut ring = super::batched_ring()?;
    let mut buffers = BufferRing::new()?;
    // SAFETY: the mapping holds BUFFERS entries, and the ring is dropped before it (below).
    unsafe {
        ring.submitter().register_buf_ring_with_flags(buffers.entries as u64, BUFFERS, BUFFER_GROUP, 0)
    }
    .map_err(|e| format!("register_buf_ring: {e}"))?;
    // A multishot recvmsg reads only the lengths from its msghdr.
    // SAFETY: an all-zero msghdr is valid.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_controllen = CONTROL_BYTES as usize;
    for stream in streams {
        std::io::Write::write_all(&mut &*stream, request).map_err(|e| e.to_string())?;
    }
    for (index, stream) in streams.iter().enumerate() {
        push_receive(&mut ring, stream, index, &message)?;
    }
    let mut pending = vec![0usize; streams.len()];
    let (mut requests, mut stamped) = (0u64, 0u64);
    let result = loop {
        if Instant::now() >= deadline {
            break Ok(requests);
        }
        if let Err(error) = super::submit_and_wait_batch(&mut ring, streams.len()) {
            break Err(error);
        }
        let done: Vec<(u64, i32, u32)> =
            ring.completion().map(|c| (c.user_data(), c.result(), c.flags())).collect();
        let mut failure = None;
        for (tag, result, flags) in done {
            if tag & SEND != 0 {
                failure = Some(format!("send: {}", std::io::Error::from_raw_os_error(-result)));
                break;
            }
            let index = tag as usize;
            if result < 0 {
                failure = Some(format!("recvmsg: {}", std::io::Error::from_raw_os_error(-result)));
                break;
            }
            let Some(id) = cqueue::buffer_select(flags) else {
                failure = Some("a receive without a buffer".into());
                break;
            };
            let parsed = types::RecvMsgOut::parse(buffers.buffer(id, result as usize), &message)
                .map(|out| (out.payload_data().len(), !out.control_data().is_empty()));
            buffers.give_back(id);
            let Ok((read, with_stamp)) = parsed else {
                failure = Some("a receive too short for its header".into());
                break;
            };
            if read == 0 {
                failure = Some("the server closed a connection".into());
                break;
            }
            stamped += u64::from(with_stamp);
            pending[index] += read;
            if pending[index] > response_bytes {
                failure =
                    Some("a response longer than the first: responses must all be the same length".into());
                break;
            }
            if pending[index] == response_bytes {
                pending[index] = 0;
                requests += 1;
                let send = opcode::Send::new(
                    types::Fd(streams[index].as_raw_fd()),
                    request.as_ptr(),
                    request.len() as u32,
                )
                .build()
                .flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(SEND | index as u64);
                // SAFETY: the request outlives the ring (both end with this function's caller).
                if unsafe { ring.submission().push(&send) }.is_err() {
                    failure = Some("the submission queue is full".into());
                    break;
                }
            }
            // A multishot receive that ended (no more to come) is armed again.
            if !cqueue::more(flags)
                && let Err(error) = push_receive(&mut ring, &streams[index], index, &message)
            {
                failure = Some(error);
                break;
            }
        }
        if let Some(error) = failure {
            break Err(error);
        }
    };
    // The kernel may still write into the buffers while the ring lives: end it first.
    drop(ring);
    drop(buffers);
    match result {
        Ok(_) if stamped == 0 => Err("no read carried an arrival stamp".into()),
        other => other,
    }
}

fn push_receive(
    ring: &mut IoUring,
    stream: &TcpStream,
    index: usize,
    message: &libc::msghdr,
) -> Result<(), String> {
    let receive = opcode::RecvMsgMulti::new(types::Fd(stream.as_raw_fd()), message, BUFFER_GROUP)
        .build()
        .user_data(index as u64);
    // SAFETY: `message` (only its lengths are read) outlives the ring.
    unsafe { ring.submission().push(&receive) }.map_err(|_| "the submission queue is full".to_string())
}
