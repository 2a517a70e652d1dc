//! The capture's memory-mapped receive ring (TPACKET_V3, as libpcap uses on Linux): the
//! kernel writes each packet's headers into blocks shared with watch, as it passes, and hands
//! over a block when it is full or [`BLOCK_TIMEOUT_MS`] after its first packet. Watch walks
//! the blocks in memory and gives them back: no system call and no copy per packet, one
//! wake-up per block. With `recvmmsg` (the fallback, [`super::batch`]) the copies alone cost
//! about 1 µs a packet of watch's CPU, 10 % of a core at 100k packets/s.

use super::batch::Frame;
use super::filter::SNAP_BYTES;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// One block: about 1000 headers-only packets.
const BLOCK_BYTES: u32 = 256 << 10;
/// Blocks in the ring (4 MB): 160 ms of 100k packets/s before the kernel must drop.
const BLOCKS: u32 = 16;
/// A block is handed over this long after its first packet even if not full: what watch sees
/// is at most this late (tcpdump's 1 s default is what loses a short capture, docs/field-notes.md §8).
pub const BLOCK_TIMEOUT_MS: u32 = 10;
/// The frame size the kernel wants declared (V3 packs packets of any size in a block).
const FRAME_BYTES: u32 = 2048;
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where the link-layer address starts.
const SOCKADDR_OFFSET: usize = libc::TPACKET3_HDRLEN - size_of::<libc::sockaddr_ll>();

/// A TPACKET_V3 ring mapped from a packet socket.
pub struct Ring {
    map: NonNull<u8>,
    next_block: usize,
    /// Sent copies of loopback packets skipped (on `any`).
    pub loopback_copies: u64,
}

fn set_option<T>(socket: &OwnedFd, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` points at a live T of the size given.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            name,
            (value as *const T).cast(),
            size_of::<T>() as u32,
        )
    };
    if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

impl Ring {
    /// Sets up the ring on `socket` (before it is bound) and maps it.
    pub fn map(socket: &OwnedFd) -> io::Result<Ring> {
        set_option(socket, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V3 as libc::c_int))?;
        let request = libc::tpacket_req3 {
            tp_block_size: BLOCK_BYTES,
            tp_block_nr: BLOCKS,
            tp_frame_size: FRAME_BYTES,
            tp_frame_nr: BLOCK_BYTES / FRAME_BYTES * BLOCKS,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        set_option(socket, libc::PACKET_RX_RING, &request)?;
        let length = (BLOCK_BYTES * BLOCKS) as usize;
        // SAFETY: maps the ring the kernel just allocated for this socket, shared.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                socket.as_raw_fd(),
                0,
            )
        };
        // MAP_LOCKED needs CAP_IPC_LOCK or room under RLIMIT_MEMLOCK: without it, unlocked.
        let map = if map == libc::MAP_FAILED {
            // SAFETY: as above, without locking the pages.
            unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    length,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    socket.as_raw_fd(),
                    0,
                )
            }
        } else {
            map
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = NonNull::new(map.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Ring { map, next_block: 0, loopback_copies: 0 })
    }

    fn block(&self, index: usize) -> *mut u8 {
        // SAFETY: index < BLOCKS: within the mapping.
        unsafe { self.map.as_ptr().add(index * BLOCK_BYTES as usize) }
    }

    /// The block's status word, read and written with the ordering the kernel pairs with.
    fn status(&self, index: usize) -> &AtomicU32 {
        let header = self.block(index).cast::<libc::tpacket_block_desc>();
        // SAFETY: the status word is 4-byte aligned inside the mapped block header (the V3
        // variant of its union, the version set in `map`), and shared with the kernel only
        // through atomic accesses.
        unsafe { AtomicU32::from_ptr(&raw mut (*header).hdr.bh1.block_status) }
    }

    /// Whether the next block is ready for watch.
    pub fn ready(&self) -> bool {
        self.status(self.next_block).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0
    }

    /// Hands every packet of the blocks ready (at most `most_blocks`) to `each`, giving each
    /// block back to the kernel; returns the packets read.
    pub fn read(&mut self, most_blocks: usize, mut each: impl FnMut(Frame<'_>)) -> usize {
        let mut packets = 0;
        for _ in 0..most_blocks {
            if !self.ready() {
                break;
            }
            let block = self.block(self.next_block);
            // SAFETY: the kernel hands a block over whole: its header and packets are ours
            // until its status goes back to TP_STATUS_KERNEL.
            let (count, first) = unsafe {
                let header = &(*block.cast::<libc::tpacket_block_desc>()).hdr.bh1;
                (header.num_pkts, header.offset_to_first_pkt as usize)
            };
            let mut offset = first;
            for _ in 0..count {
                if offset + SOCKADDR_OFFSET + size_of::<libc::sockaddr_ll>() > BLOCK_BYTES as usize {
                    break;
                }
                // SAFETY: the kernel laid each packet inside the block; offsets are checked
                // against the block's end before each read.
                let (packet, name) = unsafe {
                    let packet = &*block.add(offset).cast::<libc::tpacket3_hdr>();
                    let name = &*block.add(offset + SOCKADDR_OFFSET).cast::<libc::sockaddr_ll>();
                    (packet, name)
                };
                let data_start = offset + usize::from(packet.tp_net);
                let length = (packet.tp_snaplen as usize).min(SNAP_BYTES as usize);
                if name.sll_pkttype == libc::PACKET_OUTGOING && name.sll_hatype == libc::ARPHRD_LOOPBACK {
                    self.loopback_copies += 1;
                } else if data_start + length <= BLOCK_BYTES as usize {
                    // SAFETY: within the block, checked above.
                    let data = unsafe { std::slice::from_raw_parts(block.add(data_start), length) };
                    let timestamp_ns = u64::from(packet.tp_sec) * 1_000_000_000 + u64::from(packet.tp_nsec);
                    each(Frame { timestamp_ns, data });
                }
                packets += 1;
                if packet.tp_next_offset == 0 {
                    break;
                }
                offset += packet.tp_next_offset as usize;
            }
            self.status(self.next_block).store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next_block = (self.next_block + 1) % BLOCKS as usize;
        }
        packets
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unused after this.
        unsafe { libc::munmap(self.map.as_ptr().cast(), (BLOCK_BYTES * BLOCKS) as usize) };
    }
}

// SAFETY: the ring is owned by one capture and used from one thread at a time.
unsafe impl Send for Ring {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_are_laid_out_as_the_kernel_lays_them() {
        // libc's structs, checked against the kernel's uapi layout.
        assert_eq!(size_of::<libc::tpacket_req3>(), 28);
        assert_eq!(std::mem::offset_of!(libc::tpacket_block_desc, hdr), 8);
        assert_eq!(std::mem::offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt), 8);
        assert_eq!(std::mem::offset_of!(libc::tpacket3_hdr, tp_net), 26);
        assert_eq!(SOCKADDR_OFFSET, 48);
        assert_eq!(BLOCK_BYTES % FRAME_BYTES, 0);
    }
}
