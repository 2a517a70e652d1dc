//! Reads a legacy pcap file by mapping it into memory and walking its records in place: no
//! copy of the file into a buffer and no framing library on the hot path, which together
//! cost `pcap` a third of its time (issue 48). Every other input (pcapng, gzip, the modified
//! pcap format, a pipe) goes to the streaming reader, which this must agree with packet for
//! packet and error for error (a unit test holds them to it).
//!
//! A mapped file that shrinks while it is read (a capture rotated or rewritten in place)
//! raises SIGBUS at the first page past its new end. The handler installed here writes the
//! caller's one-line message and exits with the caller's status, instead of the default
//! core dump; a SIGBUS anywhere else keeps its default action.
#![allow(unsafe_code)]

use crate::reader::{
    BUFFER_BYTES, Packet, ReadError, ReadStats, read_packets, record_time_ns, timestamp_error,
};
use memmap2::{Advice, Mmap, MmapOptions, UncheckedAdvice};
use std::fs::File;
use std::io::Read;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// The legacy file header and each record header, in bytes.
const FILE_HEADER_BYTES: usize = 24;
const RECORD_HEADER_BYTES: usize = 16;
/// The standard legacy magic numbers as they appear in the file: µs and ns, each byte order.
/// The modified format (0xa1b2cd34) has longer records and goes to the streaming reader.
const LITTLE_MICROS: [u8; 4] = [0xd4, 0xc3, 0xb2, 0xa1];
const LITTLE_NANOS: [u8; 4] = [0x4d, 0x3c, 0xb2, 0xa1];
const BIG_MICROS: [u8; 4] = [0xa1, 0xb2, 0xc3, 0xd4];
const BIG_NANOS: [u8; 4] = [0xa1, 0xb2, 0x3c, 0x4d];

/// What a SIGBUS on a mapped capture does: the message written to stderr and the exit status.
#[derive(Debug, Clone)]
pub struct OnShrink {
    /// One line, newline included by the handler.
    pub message: String,
    /// The process's exit status.
    pub exit_status: i32,
}

/// A capture to read: a file, mapped where it can be, or any stream (a pipe, stdin).
pub enum CaptureInput {
    /// A file named on the command line.
    File(File),
    /// Bytes that can only be read once, in order.
    Stream(Box<dyn Read + Send>),
}

/// Reads every packet of `input` into `on_packet`, as [`read_packets`] does: a regular file
/// in the legacy pcap format is mapped and walked in place, anything else is streamed.
pub fn read_capture<F>(
    input: CaptureInput,
    on_shrink: &OnShrink,
    stats: &mut ReadStats,
    on_packet: F,
) -> Result<(), ReadError>
where
    F: FnMut(&Packet<'_>),
{
    let file = match input {
        CaptureInput::File(file) => file,
        CaptureInput::Stream(stream) => return read_packets(stream, stats, on_packet),
    };
    let Some(map) = map_legacy(&file) else { return read_packets(file, stats, on_packet) };
    let _guard = ShrinkGuard::arm(&map, on_shrink);
    let mut window = Window::new(&map);
    walk(&map, stats, on_packet, |offset| window.reached(offset))
}

/// Bytes of the mapping brought in, and let go, at once.
const WINDOW_BYTES: usize = 8 * 1024 * 1024;

/// Keeps the mapped pages to about two windows: the next window is mapped in one call
/// (fewer page faults than touching it page by page), and the one behind is dropped, so the
/// resident set does not grow with the file. The pages stay in the page cache either way.
struct Window<'a> {
    map: &'a Mmap,
    /// The start of the window being walked.
    start: usize,
}

impl<'a> Window<'a> {
    fn new(map: &'a Mmap) -> Self {
        let _ = map.advise_range(Advice::PopulateRead, 0, WINDOW_BYTES.min(map.len()));
        Window { map, start: 0 }
    }

    /// Called as the walk passes `offset`: once per record, so the test is inlined and the
    /// work is not.
    #[inline]
    fn reached(&mut self, offset: usize) {
        if offset >= self.start + WINDOW_BYTES {
            self.advance();
        }
    }

    #[cold]
    fn advance(&mut self) {
        let behind = self.start;
        self.start += WINDOW_BYTES;
        let next = self.start + WINDOW_BYTES;
        if next < self.map.len() {
            let _ =
                self.map.advise_range(Advice::PopulateRead, next, WINDOW_BYTES.min(self.map.len() - next));
        }
        // SAFETY: the walk is past this range for good (packets are lent only during their
        // callback), and a read-only file mapping dropped this way reads the file again if
        // it is touched.
        let _ = unsafe { self.map.unchecked_advise_range(UncheckedAdvice::DontNeed, behind, WINDOW_BYTES) };
    }
}

/// The file mapped, when it is a regular file that starts like a standard legacy pcap.
fn map_legacy(file: &File) -> Option<Mmap> {
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() < FILE_HEADER_BYTES as u64 {
        return None;
    }
    // SAFETY: the mapping is read-only and private to this process. Another process may
    // still change or truncate the file while it is mapped: changed bytes are read as any
    // bytes (every field is checked where it is read), and a truncation raises SIGBUS,
    // which `ShrinkGuard` turns into the caller's message and exit status.
    let map = unsafe { MmapOptions::new().map(file) }.ok()?;
    let magic: [u8; 4] = map[..4].try_into().ok()?;
    if ![LITTLE_MICROS, LITTLE_NANOS, BIG_MICROS, BIG_NANOS].contains(&magic) {
        return None;
    }
    // Only a hint: the walk goes front to back once.
    let _ = map.advise(Advice::Sequential);
    Some(map)
}

/// Walks the records of a legacy pcap held whole in `bytes`.
/// `reached` is told each record's offset before it is read.
fn walk<F, R>(bytes: &[u8], stats: &mut ReadStats, mut on_packet: F, mut reached: R) -> Result<(), ReadError>
where
    F: FnMut(&Packet<'_>),
    R: FnMut(usize),
{
    let magic: [u8; 4] = bytes[..4].try_into().expect("checked by map_legacy");
    let big_endian = magic == BIG_MICROS || magic == BIG_NANOS;
    let units_per_second: u64 =
        if magic == LITTLE_NANOS || magic == BIG_NANOS { 1_000_000_000 } else { 1_000_000 };
    let word = |at: usize| {
        let four: [u8; 4] = bytes[at..at + 4].try_into().expect("in bounds");
        if big_endian { u32::from_be_bytes(four) } else { u32::from_le_bytes(four) }
    };
    let snaplen = word(16);
    let link_type = word(20) as u16;
    let mut offset = FILE_HEADER_BYTES;
    let mut previous_ns: u64 = 0;
    while offset < bytes.len() {
        reached(offset);
        let packet_number = stats.packets + 1;
        let truncated = ReadError::Truncated { packet: packet_number, offset: offset as u64 };
        if bytes.len() - offset < RECORD_HEADER_BYTES {
            return Err(truncated);
        }
        let (ts_sec, ts_fraction, caplen) = (word(offset), word(offset + 4), word(offset + 8));
        let data_start = offset + RECORD_HEADER_BYTES;
        // The streaming reader's buffer bounds a record, whether or not the file holds it;
        // the same bound holds here.
        if RECORD_HEADER_BYTES + caplen as usize >= BUFFER_BYTES {
            return Err(ReadError::Malformed {
                packet: stats.packets,
                offset: offset as u64,
                reason: format!("a record larger than {BUFFER_BYTES} bytes"),
            });
        }
        if caplen as usize > bytes.len() - data_start {
            return Err(truncated);
        }
        if snaplen > 0 && caplen > snaplen {
            return Err(ReadError::CaplenExceedsSnaplen {
                packet: packet_number,
                offset: offset as u64,
                caplen,
                snaplen,
            });
        }
        if u64::from(ts_fraction) >= units_per_second {
            return Err(timestamp_error(stats.packets, offset as u64, ts_fraction));
        }
        let timestamp_ns = record_time_ns(ts_sec, ts_fraction, units_per_second);
        if let Some(step_back) = previous_ns.checked_sub(timestamp_ns).filter(|&step| step > 0) {
            stats.steps_back += 1;
            stats.largest_step_back_ns = stats.largest_step_back_ns.max(step_back);
        }
        previous_ns = timestamp_ns;
        let data = &bytes[data_start..data_start + caplen as usize];
        stats.packets += 1;
        stats.bytes += data.len() as u64;
        on_packet(&Packet { number: packet_number, offset: offset as u64, timestamp_ns, link_type, data });
        offset = data_start + caplen as usize;
    }
    Ok(())
}

/// The mapping being walked, for the SIGBUS handler: its address range, and what to say.
static MAPPED_START: AtomicUsize = AtomicUsize::new(0);
static MAPPED_END: AtomicUsize = AtomicUsize::new(0);
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static EXIT_STATUS: AtomicI32 = AtomicI32::new(1);
/// One mapping is armed at a time (tests read captures on several threads).
static ARMED: Mutex<()> = Mutex::new(());

/// Arms the SIGBUS handler for one mapping while it is walked; disarms it on drop, keeping
/// the handler installed (it passes any other SIGBUS to the default action).
struct ShrinkGuard {
    _lock: std::sync::MutexGuard<'static, ()>,
    _message: Box<[u8]>,
}

impl ShrinkGuard {
    fn arm(map: &Mmap, on_shrink: &OnShrink) -> Self {
        let lock = ARMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut message = format!("{}\n", on_shrink.message).into_bytes().into_boxed_slice();
        MESSAGE.store(message.as_mut_ptr(), Ordering::SeqCst);
        MESSAGE_LEN.store(message.len(), Ordering::SeqCst);
        EXIT_STATUS.store(on_shrink.exit_status, Ordering::SeqCst);
        MAPPED_START.store(map.as_ptr() as usize, Ordering::SeqCst);
        MAPPED_END.store(map.as_ptr() as usize + map.len(), Ordering::SeqCst);
        install_handler();
        ShrinkGuard { _lock: lock, _message: message }
    }
}

impl Drop for ShrinkGuard {
    fn drop(&mut self) {
        MAPPED_START.store(0, Ordering::SeqCst);
        MAPPED_END.store(0, Ordering::SeqCst);
        MESSAGE.store(std::ptr::null_mut(), Ordering::SeqCst);
        MESSAGE_LEN.store(0, Ordering::SeqCst);
    }
}

fn install_handler() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid value of the C struct; the handler only reads
        // atomics and calls async-signal-safe functions (write, _exit, sigaction, raise).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler; the message
    // pointer and length were stored together by `arm` and the box outlives the mapping.
    unsafe {
        let address = (*info).si_addr() as usize;
        let (start, end) = (MAPPED_START.load(Ordering::SeqCst), MAPPED_END.load(Ordering::SeqCst));
        if start != 0 && (start..end).contains(&address) {
            let message = MESSAGE.load(Ordering::SeqCst);
            if !message.is_null() {
                libc::write(2, message.cast(), MESSAGE_LEN.load(Ordering::SeqCst));
            }
            libc::_exit(EXIT_STATUS.load(Ordering::SeqCst));
        }
        // Not ours: the default action, as if no handler were installed.
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &default, std::ptr::null_mut());
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    fn on_shrink() -> OnShrink {
        OnShrink { message: "test capture shrank".into(), exit_status: 1 }
    }

    /// Everything a reader tells: each packet, the stats, and the error.
    type Reading = (Vec<(u64, u64, u64, u16, Vec<u8>)>, ReadStats, Result<(), ReadError>);

    fn through_stream(bytes: &[u8]) -> Reading {
        let mut stats = ReadStats::default();
        let mut packets = Vec::new();
        let result = read_packets(bytes, &mut stats, |p| {
            packets.push((p.number, p.offset, p.timestamp_ns, p.link_type, p.data.to_vec()))
        });
        (packets, stats, result)
    }

    fn through_map(bytes: &[u8]) -> Reading {
        let mut file = tempfile();
        file.write_all(bytes).unwrap();
        file.seek(std::io::SeekFrom::Start(0)).unwrap();
        let mut stats = ReadStats::default();
        let mut packets = Vec::new();
        let result = read_capture(CaptureInput::File(file), &on_shrink(), &mut stats, |p| {
            packets.push((p.number, p.offset, p.timestamp_ns, p.link_type, p.data.to_vec()))
        });
        (packets, stats, result)
    }

    fn tempfile() -> File {
        let dir = std::env::temp_dir();
        let path =
            dir.join(format!("nodelay-mapped-{}-{:?}", std::process::id(), std::thread::current().id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }

    fn fixtures() -> Vec<(String, Vec<u8>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pcap");
        let mut found: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "pcap"))
            .map(|path| (path.display().to_string(), std::fs::read(&path).unwrap()))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn the_mapped_walk_reads_every_fixture_as_the_stream_does() {
        let fixtures = fixtures();
        assert!(fixtures.len() >= 5, "fixtures found: {}", fixtures.len());
        for (name, bytes) in fixtures {
            assert_eq!(through_map(&bytes), through_stream(&bytes), "{name}");
        }
    }

    /// Cuts, lengths and timestamps broken on purpose give the stream's errors, at the same
    /// packet and offset, after the same packets.
    #[test]
    fn a_damaged_file_stops_where_and_as_the_stream_stops() {
        let (name, bytes) =
            fixtures().into_iter().find(|(_, b)| b.len() > 2000 && b[..4] == LITTLE_MICROS).unwrap();
        let mut checked = 0;
        for cut in (FILE_HEADER_BYTES..bytes.len()).step_by(29) {
            let cut_short = &bytes[..cut];
            assert_eq!(through_map(cut_short), through_stream(cut_short), "{name} cut at {cut}");
            checked += 1;
        }
        // Each field of the first records' headers set to values around its bounds.
        let mut offset = FILE_HEADER_BYTES;
        for _ in 0..5 {
            for (field, value) in
                [(4, 999_999u32), (4, 1_000_000), (8, 262_145), (8, 0), (8, 5_000_000), (8, 70)]
            {
                let mut damaged = bytes.clone();
                damaged[offset + field..offset + field + 4].copy_from_slice(&value.to_le_bytes());
                assert_eq!(
                    through_map(&damaged),
                    through_stream(&damaged),
                    "{name}: {field} = {value} at {offset}"
                );
                checked += 1;
            }
            let caplen = u32::from_le_bytes(bytes[offset + 8..offset + 12].try_into().unwrap()) as usize;
            offset += RECORD_HEADER_BYTES + caplen;
        }
        assert!(checked > 100);
    }

    /// Set in the child process of the test below, which reads the file it names.
    const SHRINK_CHILD: &str = "NODELAY_TEST_SHRINK_CHILD";

    /// A file cut short under the mapping raises SIGBUS at the first page past its new end:
    /// the process says the caller's line and exits with its status, not a core dump. Run in
    /// a child process (this test binary again), since it ends the process that reads.
    #[test]
    fn a_file_cut_short_while_it_is_read_ends_with_the_callers_message_and_status() {
        if let Some(path) = std::env::var_os(SHRINK_CHILD) {
            let file = File::open(&path).unwrap();
            let cutter = File::options().write(true).open(&path).unwrap();
            let shrink = OnShrink { message: "capture shrank under the reader".into(), exit_status: 7 };
            let mut stats = ReadStats::default();
            let _ = read_capture(CaptureInput::File(file), &shrink, &mut stats, |packet| {
                if packet.number == 1 {
                    cutter.set_len(4096).unwrap();
                }
            });
            // Reached only if the cut went unnoticed.
            std::process::exit(0);
        }
        // 100 records of 200 bytes: 20 KB, five pages.
        let mut bytes = LITTLE_MICROS.to_vec();
        bytes.extend([2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 101, 0, 0, 0]);
        for second in 0..100u32 {
            for word in [second, 0, 200, 200] {
                bytes.extend(word.to_le_bytes());
            }
            bytes.extend([0x45; 200]);
        }
        let path = std::env::temp_dir().join(format!("nodelay-shrink-{}.pcap", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let test =
            "mapped::tests::a_file_cut_short_while_it_is_read_ends_with_the_callers_message_and_status";
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture"])
            .env(SHRINK_CHILD, &path)
            .output()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert_eq!(child.status.code(), Some(7), "stderr: {stderr}");
        assert!(stderr.contains("capture shrank under the reader\n"), "stderr: {stderr}");
    }

    #[test]
    fn pcapng_gzip_and_foreign_files_are_streamed() {
        for bytes in [
            b"\x0a\x0d\x0d\x0a".repeat(10),
            b"\x1f\x8b\x08\x00".repeat(10),
            b"GET / HTTP/1.1\r\n\r\n\r\n\r\n\r\n".to_vec(),
        ] {
            assert_eq!(through_map(&bytes), through_stream(&bytes));
        }
    }
}
