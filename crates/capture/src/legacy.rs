//! Reads a legacy pcap file in large reads into one reused buffer and walks its records in
//! place: no framing library on the hot path, and a buffer small enough to stay in the CPU's
//! cache between the read that fills it and the walk (issue 48). Every other input (pcapng,
//! gzip, the modified pcap format, a pipe) goes to the streaming reader, which this must
//! agree with packet for packet and error for error (unit tests hold them to it), but for
//! where a read error is told: the streaming reader reads 4 MB ahead, so an I/O error there
//! is reported in place of a damaged record before it, which this reader, 256 KB ahead,
//! reports first.
//!
//! Not a memory map: mapping the page cache's pages cost more than copying them (the page
//! faults, and a cache miss at each record's first byte), and a file cut short under a map
//! raises SIGBUS. Read this way, a file that shrinks while it is read ends as a file cut short.

use crate::reader::{
    BUFFER_BYTES, Packet, ReadError, ReadStats, describe_io_error, read_full, read_packets, record_time_ns,
    timestamp_error,
};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// The legacy file header and each record header, in bytes.
const FILE_HEADER_BYTES: usize = 24;
const RECORD_HEADER_BYTES: usize = 16;
/// The standard legacy magic numbers as they appear in the file: µs and ns, each byte order.
/// The modified format (0xa1b2cd34) has longer records and goes to the streaming reader.
const LITTLE_MICROS: [u8; 4] = [0xd4, 0xc3, 0xb2, 0xa1];
const LITTLE_NANOS: [u8; 4] = [0x4d, 0x3c, 0xb2, 0xa1];
const BIG_MICROS: [u8; 4] = [0xa1, 0xb2, 0xc3, 0xd4];
const BIG_NANOS: [u8; 4] = [0xa1, 0xb2, 0x3c, 0x4d];
/// Bytes asked of each read: large enough that the system calls cost little, small enough
/// that the buffer stays in the cache while it is walked (64 KB to 1 MB read the bench's
/// capture equally fast here; 4 MB a fifth slower). A record longer than what is left of it
/// grows the buffer, up to the streaming reader's bound.
const READ_BYTES: usize = 256 * 1024;

/// A capture to read: a file, read in large pieces where it is a legacy pcap, or any stream
/// (a pipe, stdin).
pub enum CaptureInput {
    /// A file named on the command line.
    File(File),
    /// Bytes that can only be read once, in order.
    Stream(Box<dyn Read + Send>),
}

/// Reads every packet of `input` into `on_packet`, as [`read_packets`] does: a regular file
/// in the standard legacy pcap format is walked in a reused buffer, anything else is
/// streamed.
pub fn read_capture<F>(input: CaptureInput, stats: &mut ReadStats, on_packet: F) -> Result<(), ReadError>
where
    F: FnMut(&Packet<'_>),
{
    let mut file = match input {
        CaptureInput::File(file) => file,
        CaptureInput::Stream(stream) => return read_packets(stream, stats, on_packet),
    };
    let mut header = [0u8; FILE_HEADER_BYTES];
    let Some(walk) = legacy_header(&mut file, &mut header) else {
        // Read again from the start, as if untouched; a regular file seeks (should it not,
        // the streaming reader reports what it then reads, in its own words).
        let _ = file.seek(SeekFrom::Start(0));
        return read_packets(file, stats, on_packet);
    };
    walk.read_records(file, READ_BYTES, stats, on_packet)
}

/// The walk of a regular file whose first bytes, read into `header`, are a standard legacy
/// pcap header.
fn legacy_header(file: &mut File, header: &mut [u8; FILE_HEADER_BYTES]) -> Option<Walk> {
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    file.read_exact(header).ok()?;
    Walk::of(header)
}

/// What the file header says about every record, and where the walk is.
struct Walk {
    big_endian: bool,
    units_per_second: u64,
    snaplen: u32,
    link_type: u16,
    previous_ns: u64,
}

/// How far a walk of the bytes at hand got.
enum Walked {
    /// Every whole record was read; the rest starts at this offset into the bytes.
    NeedMore(usize),
    /// The capture is done, or damaged there.
    Done(Result<(), ReadError>),
}

impl Walk {
    fn of(header: &[u8; FILE_HEADER_BYTES]) -> Option<Self> {
        let magic: [u8; 4] = header[..4].try_into().ok()?;
        if ![LITTLE_MICROS, LITTLE_NANOS, BIG_MICROS, BIG_NANOS].contains(&magic) {
            return None;
        }
        let big_endian = magic == BIG_MICROS || magic == BIG_NANOS;
        let units_per_second: u64 =
            if magic == LITTLE_NANOS || magic == BIG_NANOS { 1_000_000_000 } else { 1_000_000 };
        let word = |at: usize| word(header, at, big_endian);
        Some(Walk {
            big_endian,
            units_per_second,
            snaplen: word(16),
            link_type: word(20) as u16,
            previous_ns: 0,
        })
    }

    /// Reads the records after the file header, `read_bytes` at a time.
    fn read_records<F>(
        mut self,
        mut file: File,
        read_bytes: usize,
        stats: &mut ReadStats,
        mut on_packet: F,
    ) -> Result<(), ReadError>
    where
        F: FnMut(&Packet<'_>),
    {
        let mut buffer = vec![0u8; read_bytes];
        // File offset of buffer[0], and bytes of it filled.
        let mut base_offset = FILE_HEADER_BYTES as u64;
        let mut filled = 0;
        loop {
            let (read, failure) = read_full(&mut file, &mut buffer[filled..]);
            filled += read;
            let at_end = read == 0 || failure.is_some();
            match self.records(&buffer[..filled], base_offset, at_end, stats, &mut on_packet) {
                Walked::Done(result) => {
                    // An I/O error, not what the bytes before it looked like, is why it ended.
                    return match failure {
                        Some(e) => Err(ReadError::Io(describe_io_error(&e, false))),
                        None => result,
                    };
                }
                Walked::NeedMore(consumed) => {
                    buffer.copy_within(consumed..filled, 0);
                    filled -= consumed;
                    base_offset += consumed as u64;
                    // A record longer than the buffer: room for it whole (bounded by the
                    // check in `records`).
                    if filled >= RECORD_HEADER_BYTES {
                        let record_bytes = RECORD_HEADER_BYTES + self.word(&buffer, 8) as usize;
                        if record_bytes > buffer.len() {
                            buffer.resize(record_bytes, 0);
                        }
                    }
                    // Room for a read of its full size after the part kept.
                    if buffer.len() - filled < read_bytes.div_ceil(2) {
                        buffer.resize(filled + read_bytes, 0);
                    }
                }
            }
        }
    }

    fn word(&self, bytes: &[u8], at: usize) -> u32 {
        word(bytes, at, self.big_endian)
    }

    /// Walks the whole records of `bytes`, which start at file offset `base_offset`; `at_end`
    /// when the file has nothing after them.
    fn records<F>(
        &mut self,
        bytes: &[u8],
        base_offset: u64,
        at_end: bool,
        stats: &mut ReadStats,
        on_packet: &mut F,
    ) -> Walked
    where
        F: FnMut(&Packet<'_>),
    {
        let mut offset = 0;
        loop {
            let left = bytes.len() - offset;
            if left == 0 && at_end {
                return Walked::Done(Ok(()));
            }
            let file_offset = base_offset + offset as u64;
            let packet_number = stats.packets + 1;
            let truncated = ReadError::Truncated { packet: packet_number, offset: file_offset };
            if left < RECORD_HEADER_BYTES {
                return if at_end { Walked::Done(Err(truncated)) } else { Walked::NeedMore(offset) };
            }
            let (ts_sec, ts_fraction, caplen) =
                (self.word(bytes, offset), self.word(bytes, offset + 4), self.word(bytes, offset + 8));
            // The streaming reader's buffer bounds a record, whether or not the file holds it;
            // the same bound holds here.
            // In u64: a caplen near 4 GB would wrap a 32-bit usize.
            if RECORD_HEADER_BYTES as u64 + u64::from(caplen) >= BUFFER_BYTES as u64 {
                return Walked::Done(Err(ReadError::Malformed {
                    packet: stats.packets,
                    offset: file_offset,
                    reason: format!("a record larger than {BUFFER_BYTES} bytes"),
                }));
            }
            let data_start = offset + RECORD_HEADER_BYTES;
            if caplen as usize > bytes.len() - data_start {
                return if at_end { Walked::Done(Err(truncated)) } else { Walked::NeedMore(offset) };
            }
            if self.snaplen > 0 && caplen > self.snaplen {
                return Walked::Done(Err(ReadError::CaplenExceedsSnaplen {
                    packet: packet_number,
                    offset: file_offset,
                    caplen,
                    snaplen: self.snaplen,
                }));
            }
            if u64::from(ts_fraction) >= self.units_per_second {
                return Walked::Done(Err(timestamp_error(stats.packets, file_offset, ts_fraction)));
            }
            let timestamp_ns = record_time_ns(ts_sec, ts_fraction, self.units_per_second);
            let data = &bytes[data_start..data_start + caplen as usize];
            stats.count_timed(&mut self.previous_ns, timestamp_ns, data.len());
            on_packet(&Packet {
                number: packet_number,
                offset: file_offset,
                timestamp_ns,
                link_type: self.link_type,
                data,
            });
            offset = data_start + caplen as usize;
        }
    }
}

/// The 32-bit word at `at` in the file's byte order.
fn word(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let four: [u8; 4] = bytes[at..at + 4].try_into().expect("in bounds");
    if big_endian { u32::from_be_bytes(four) } else { u32::from_le_bytes(four) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

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

    fn through_file(bytes: &[u8]) -> Reading {
        let mut stats = ReadStats::default();
        let mut packets = Vec::new();
        let result = read_capture(CaptureInput::File(file_of(bytes)), &mut stats, |p| {
            packets.push((p.number, p.offset, p.timestamp_ns, p.link_type, p.data.to_vec()))
        });
        (packets, stats, result)
    }

    /// The walk with reads of `read_bytes`, so that records straddle the buffer's ends.
    fn through_reads(bytes: &[u8], read_bytes: usize) -> Reading {
        let mut file = file_of(bytes);
        let mut header = [0u8; FILE_HEADER_BYTES];
        let walk = legacy_header(&mut file, &mut header).expect("a legacy pcap");
        let mut stats = ReadStats::default();
        let mut packets = Vec::new();
        let result = walk.read_records(file, read_bytes, &mut stats, |p| {
            packets.push((p.number, p.offset, p.timestamp_ns, p.link_type, p.data.to_vec()))
        });
        (packets, stats, result)
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile();
        file.write_all(bytes).unwrap();
        file.seek(std::io::SeekFrom::Start(0)).unwrap();
        file
    }

    fn tempfile() -> File {
        let dir = std::env::temp_dir();
        let path =
            dir.join(format!("nodelay-legacy-{}-{:?}", std::process::id(), std::thread::current().id()));
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
    fn the_walk_reads_every_fixture_as_the_stream_does() {
        let fixtures = fixtures();
        assert!(fixtures.len() >= 5, "fixtures found: {}", fixtures.len());
        for (name, bytes) in fixtures {
            assert_eq!(through_file(&bytes), through_stream(&bytes), "{name}");
        }
    }

    /// Reads of 1 byte to a few records: every record's header and data cut by a buffer's end
    /// somewhere, and records longer than the buffer.
    #[test]
    fn records_cut_by_the_buffers_end_are_read_whole() {
        let legacy: Vec<_> = fixtures()
            .into_iter()
            .filter(|(_, b)| b.len() >= 24 && Walk::of(b[..24].try_into().unwrap()).is_some())
            .collect();
        assert!(legacy.len() >= 3, "legacy fixtures found: {}", legacy.len());
        let mut packets = 0;
        for (name, bytes) in legacy {
            let expected = through_stream(&bytes);
            packets += expected.0.len();
            for read_bytes in [1, 2, 15, 16, 17, 100, 1000, 4096] {
                assert_eq!(
                    through_reads(&bytes, read_bytes),
                    expected,
                    "{name}, reads of {read_bytes} bytes"
                );
            }
        }
        assert!(packets > 300, "packets read: {packets}");
    }

    /// The file read whole, and in reads that cut its records at a buffer's end, agree with
    /// the stream on `bytes` (a file of 24 bytes or more: the header is read first).
    fn assert_reads_agree(bytes: &[u8], what: &str) {
        let expected = through_stream(bytes);
        assert_eq!(through_file(bytes), expected, "{what}");
        if bytes.len() >= FILE_HEADER_BYTES {
            for read_bytes in [1, 16, 17, 100] {
                assert_eq!(through_reads(bytes, read_bytes), expected, "{what}, reads of {read_bytes} bytes");
            }
        }
    }

    /// Cuts (the file header's too), lengths and timestamps broken on purpose give the
    /// stream's errors, at the same packet and offset, after the same packets, whether or not
    /// a buffer's end cuts the record.
    #[test]
    fn a_damaged_file_stops_where_and_as_the_stream_stops() {
        let (name, bytes) =
            fixtures().into_iter().find(|(_, b)| b.len() > 2000 && b[..4] == LITTLE_MICROS).unwrap();
        let mut checked = 0;
        for cut in (0..FILE_HEADER_BYTES).chain((FILE_HEADER_BYTES..bytes.len()).step_by(29)) {
            assert_reads_agree(&bytes[..cut], &format!("{name} cut at {cut}"));
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
                assert_reads_agree(&damaged, &format!("{name}: {field} = {value} at {offset}"));
                checked += 1;
            }
            let caplen = u32::from_le_bytes(bytes[offset + 8..offset + 12].try_into().unwrap()) as usize;
            offset += RECORD_HEADER_BYTES + caplen;
        }
        assert!(checked > 100);
    }

    /// A file cut short while it is read ends as a file cut short at the record the cut
    /// falls in, after the packets before it.
    #[test]
    fn a_file_cut_short_while_it_is_read_ends_as_a_file_cut_short() {
        // 4000 records of 200 bytes: 864 KB, more than one read.
        let mut bytes = LITTLE_MICROS.to_vec();
        bytes.extend([2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 101, 0, 0, 0]);
        for second in 0..4000u32 {
            for word in [second, 0, 200, 200] {
                bytes.extend(word.to_le_bytes());
            }
            bytes.extend([0x45; 200]);
        }
        let file = file_of(&bytes);
        let cutter = file.try_clone().unwrap();
        let cut_at = 300_000;
        let mut stats = ReadStats::default();
        let result = read_capture(CaptureInput::File(file), &mut stats, |packet| {
            if packet.number == 1 {
                cutter.set_len(cut_at).unwrap();
            }
        });
        // The first read took READ_BYTES; the cut falls inside the record after them.
        let whole = (cut_at as usize - FILE_HEADER_BYTES) / 216;
        let offset = (FILE_HEADER_BYTES + whole * 216) as u64;
        assert_eq!(result, Err(ReadError::Truncated { packet: whole as u64 + 1, offset }));
        assert_eq!(stats.packets, whole as u64);
    }

    #[test]
    fn pcapng_gzip_and_foreign_files_are_streamed() {
        for bytes in [
            b"\x0a\x0d\x0d\x0a".repeat(10),
            b"\x1f\x8b\x08\x00".repeat(10),
            b"GET / HTTP/1.1\r\n\r\n\r\n\r\n\r\n".to_vec(),
        ] {
            assert_eq!(through_file(&bytes), through_stream(&bytes));
        }
    }
}
