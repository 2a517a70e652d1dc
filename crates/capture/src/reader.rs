//! Streaming reader for pcap (both byte orders, µs and ns timestamps) and pcapng (several
//! interfaces, each with its own link type and timestamp resolution), built on pcap-parser,
//! from any `Read` (a file, a pipe), gzip-compressed or not. One packet at a time through a
//! callback: memory does not depend on the file size.

use flate2::read::MultiGzDecoder;
use pcap_parser::pcapng::Block;
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};
use std::io::{self, Cursor, ErrorKind, Read};
use thiserror::Error;

/// Bytes of file buffered at once; a packet must fit (snap lengths are at most 256 KiB).
pub(crate) const BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// The first two bytes of every gzip member (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Bytes kept from the start of the capture: enough for the longest header pcap-parser
/// reads first (a pcapng section header without options: 28 bytes).
const HEAD_BYTES: usize = 32;
/// Bytes of them shown for a file that is not a capture.
const SHOWN_BYTES: usize = 4;
/// Magic numbers of pcap (µs and ns, both byte orders, and the modified format) and pcapng.
const CAPTURE_MAGICS: [[u8; 4]; 7] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
    [0x34, 0xcd, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xcd, 0x34],
    [0x0a, 0x0d, 0x0d, 0x0a],
];
/// The shortest pcap file header, and pcapng section header.
const SHORTEST_HEADER: usize = 24;
const SHORTEST_SECTION_HEADER: usize = 28;

/// One captured packet, valid during the callback.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// 1-based, counting every packet record in the file.
    pub number: u64,
    /// Byte offset of the packet's record in the file.
    pub offset: u64,
    /// Capture time, in nanoseconds since the Unix epoch (the interface's offset applied).
    pub timestamp_ns: u64,
    /// LINKTYPE_* value of the interface it was captured on.
    pub link_type: u16,
    /// Captured bytes (may be shorter than the packet on the wire).
    pub data: &'a [u8],
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadError {
    /// The input has no bytes at all.
    #[error("it is empty (0 bytes)")]
    Empty,
    /// The input starts with no pcap or pcapng magic number.
    #[error("not a pcap or pcapng file (it starts with {first_bytes})")]
    NotACapture {
        /// The first bytes of the input (after decompression), in hex.
        first_bytes: String,
    },
    /// The input ends inside the file header.
    #[error("truncated: the file header is cut short ({bytes} bytes)")]
    TruncatedHeader {
        /// The input's length, in bytes.
        bytes: usize,
    },
    /// A known magic number whose header does not parse (a pcapng block length that is no
    /// length, an unknown byte-order mark): the file is damaged, not of another kind.
    #[error("a {kind} file whose header is damaged (it starts with {first_bytes})")]
    DamagedHeader {
        /// `pcap` or `pcapng`, as the magic number says.
        kind: &'static str,
        /// The first bytes of the input (after decompression), in hex.
        first_bytes: String,
    },
    /// The input ends inside a packet record.
    #[error("truncated: packet record #{packet} at byte offset {offset} is cut short")]
    Truncated {
        /// Number of the record cut short (1-based).
        packet: u64,
        /// Byte offset of the record in the (decompressed) input.
        offset: u64,
    },
    /// A packet record says it captured more bytes than its interface's snap length allows.
    #[error(
        "packet #{packet} at byte offset {offset}: captured length {caplen} exceeds the snap length {snaplen}"
    )]
    CaplenExceedsSnaplen {
        /// Number of the packet (1-based).
        packet: u64,
        /// Byte offset of its record in the (decompressed) input.
        offset: u64,
        /// The captured length the record gives, in bytes.
        caplen: u32,
        /// The interface's snap length, in bytes.
        snaplen: u32,
    },
    /// A pcapng packet names an interface no earlier block described.
    #[error(
        "packet #{packet} at byte offset {offset}: refers to interface {interface}, which was never described"
    )]
    UnknownInterface {
        /// Number of the packet (1-based).
        packet: u64,
        /// Byte offset of its block in the (decompressed) input.
        offset: u64,
        /// The interface ID it names.
        interface: u32,
    },
    /// A record that cannot be parsed.
    #[error("malformed record at byte offset {offset} (after packet #{packet}): {reason}")]
    Malformed {
        /// Packets read before it.
        packet: u64,
        /// Byte offset of the record in the (decompressed) input.
        offset: u64,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// Why reading failed, in words (`cannot read it: ...`, `the gzip stream is cut short`).
    #[error("{0}")]
    Io(String),
}

/// What the reader saw besides packets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Packet records read, timed or not.
    pub packets: u64,
    /// Captured bytes of the timed packets (decompressed).
    pub bytes: u64,
    /// Packets without a timestamp (pcapng simple packet blocks), skipped.
    pub untimed_packets: u64,
    /// Packets timed earlier than the packet before them in the file (several interfaces,
    /// or a clock stepped back): gaps are measured in file order.
    pub steps_back: u64,
    /// The largest of those steps back, in nanoseconds.
    pub largest_step_back_ns: u64,
    /// The input was gzip-compressed (byte offsets in errors count decompressed bytes).
    pub gzip: bool,
}

impl ReadStats {
    /// Counts a timed packet of `bytes` captured bytes at `timestamp_ns`, and a step back
    /// from the packet before it (`previous_ns`, which it then becomes).
    pub(crate) fn count_timed(&mut self, previous_ns: &mut u64, timestamp_ns: u64, bytes: usize) {
        if let Some(step_back) = previous_ns.checked_sub(timestamp_ns).filter(|&step| step > 0) {
            self.steps_back += 1;
            self.largest_step_back_ns = self.largest_step_back_ns.max(step_back);
        }
        *previous_ns = timestamp_ns;
        self.packets += 1;
        self.bytes += bytes as u64;
    }
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: u16,
    snaplen: u32,
    /// Timestamp units per second, and offset in seconds.
    units_per_second: u64,
    offset_s: i64,
}

/// Reads every packet of `input` into `on_packet`. On an error, the packets before it were
/// delivered and `stats` says how far it got.
pub fn read_packets<R, F>(input: R, stats: &mut ReadStats, on_packet: F) -> Result<(), ReadError>
where
    R: Read + Send,
    F: FnMut(&Packet<'_>),
{
    read_packets_buffered(input, BUFFER_BYTES, stats, on_packet)
}

/// [`read_packets`] with a buffer of `buffer_bytes` (records larger than it are malformed).
pub fn read_packets_buffered<R, F>(
    input: R,
    buffer_bytes: usize,
    stats: &mut ReadStats,
    on_packet: F,
) -> Result<(), ReadError>
where
    R: Read + Send,
    F: FnMut(&Packet<'_>),
{
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let mut failure = None;
    let result = match Source::open(input, &mut head, &mut failure) {
        Ok((source, gzip)) => {
            stats.gzip = gzip;
            read_records(source, buffer_bytes, stats, on_packet)
        }
        Err(e) => Err(ReadError::Io(describe_io_error(&e, false))),
    };
    // The input ended at an I/O error: that error, not what its end looked like, is why.
    if let Some(failure) = failure {
        return Err(ReadError::Io(describe_io_error(&failure, stats.gzip)));
    }
    // pcap-parser says only that the header is unknown or short: the source kept what the
    // input starts with (a pipe cannot be read again to find out).
    result.map_err(|error| match error {
        ReadError::NotACapture { .. } | ReadError::TruncatedHeader { .. } => header_error(&head),
        other => other,
    })
}

/// Why the start of the input is no capture: a header cut short, or no known magic number.
fn header_error(head: &[u8]) -> ReadError {
    let magic = &head[..head.len().min(4)];
    let known = CAPTURE_MAGICS.iter().find(|m| m.starts_with(magic));
    let shortest = if known == Some(&CAPTURE_MAGICS[6]) { SHORTEST_SECTION_HEADER } else { SHORTEST_HEADER };
    if known.is_some() && head.len() < shortest {
        return ReadError::TruncatedHeader { bytes: head.len() };
    }
    let shown = &head[..head.len().min(SHOWN_BYTES)];
    let first_bytes = shown.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
    match known {
        // Long enough for its header (the check above), and the magic number whole.
        Some(magic) => {
            let kind = if magic == &CAPTURE_MAGICS[6] { "pcapng" } else { "pcap" };
            ReadError::DamagedHeader { kind, first_bytes }
        }
        _ => ReadError::NotACapture { first_bytes },
    }
}

pub(crate) fn describe_io_error(error: &io::Error, gzip: bool) -> String {
    match error.kind() {
        ErrorKind::UnexpectedEof if gzip => "the gzip stream is cut short".into(),
        ErrorKind::InvalidInput | ErrorKind::InvalidData if gzip => {
            format!("the gzip stream is corrupt ({error})")
        }
        _ => format!("cannot read it: {error}"),
    }
}

/// What pcap-parser reads from: the input, decompressed when it starts with the gzip magic.
/// Each read fills the buffer unless the input ends, because a pipe hands over what has
/// been written so far and pcap-parser takes a short first read for a bad header. It keeps
/// the first bytes it hands over, for the "not a capture" error.
///
/// An I/O error ends the input as if it were the end of the file, and is kept: pcap-parser
/// would drop the bytes read before it (a cut gzip stream still yields the packets before
/// the cut) and would say only that a read failed, not why.
struct Source<'a> {
    inner: Box<dyn Read + Send + 'a>,
    head: &'a mut Vec<u8>,
    failure: &'a mut Option<io::Error>,
}

impl<'a> Source<'a> {
    /// Reads the first two bytes to tell gzip from the rest; returns whether it is gzip.
    fn open<R: Read + Send + 'a>(
        mut input: R,
        head: &'a mut Vec<u8>,
        failure: &'a mut Option<io::Error>,
    ) -> io::Result<(Self, bool)> {
        let mut magic = [0u8; 2];
        let (got, error) = read_full(&mut input, &mut magic);
        if let Some(error) = error {
            return Err(error);
        }
        let input = Cursor::new(magic[..got].to_vec()).chain(input);
        let gzip = magic[..got] == GZIP_MAGIC;
        // Multi-member: `cat a.gz b.gz` is a valid gzip file too.
        let inner: Box<dyn Read + Send + 'a> =
            if gzip { Box::new(MultiGzDecoder::new(input)) } else { Box::new(input) };
        Ok((Source { inner, head, failure }, gzip))
    }
}

impl Read for Source<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.failure.is_some() {
            return Ok(0);
        }
        let (filled, error) = read_full(&mut self.inner, buffer);
        if error.is_some() {
            *self.failure = error;
        }
        let room = HEAD_BYTES.saturating_sub(self.head.len()).min(filled);
        self.head.extend_from_slice(&buffer[..room]);
        Ok(filled)
    }
}

/// Reads until `buffer` is full or the input ends; returns how much it read and the error
/// that stopped it, if any.
pub(crate) fn read_full(input: &mut impl Read, buffer: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut filled = 0;
    while filled < buffer.len() {
        match input.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (filled, Some(e)),
        }
    }
    (filled, None)
}

/// The records of a capture, from its header on.
fn read_records<F>(
    input: Source<'_>,
    buffer_bytes: usize,
    stats: &mut ReadStats,
    mut on_packet: F,
) -> Result<(), ReadError>
where
    F: FnMut(&Packet<'_>),
{
    let mut reader = match create_reader(buffer_bytes, input) {
        Ok(reader) => reader,
        Err(PcapError::Eof) => return Err(ReadError::Empty),
        Err(PcapError::Incomplete(_)) => return Err(ReadError::TruncatedHeader { bytes: 0 }),
        Err(PcapError::ReadError) => return Err(ReadError::Io("cannot read it".into())),
        Err(_) => return Err(ReadError::NotACapture { first_bytes: String::new() }),
    };
    // Legacy pcap: one interface from the file header.
    let mut legacy: Option<Interface> = None;
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut offset: u64 = 0;
    let mut previous_ns: u64 = 0;
    let mut pcapng = false;
    let mut big_endian = false;
    loop {
        let packet_number = stats.packets + 1;
        if pcapng && let Some(length) = pcapng_block_length(reader.data(), &mut big_endian) {
            // pcap-parser 0.17 subtracts 12 from shorter lengths and overflows.
            if length < 12 {
                let reason = format!("pcapng block length {length} is shorter than a block's 12-byte frame");
                return Err(ReadError::Malformed { packet: stats.packets, offset, reason });
            }
        }
        match reader.next() {
            Ok((consumed, block)) => {
                let here = offset;
                let timed = match block {
                    PcapBlockOwned::LegacyHeader(header) => {
                        let units = if header.is_nanosecond_precision() { 1_000_000_000 } else { 1_000_000 };
                        legacy = Some(Interface {
                            link_type: header.network.0 as u16,
                            snaplen: header.snaplen,
                            units_per_second: units,
                            offset_s: 0,
                        });
                        None
                    }
                    PcapBlockOwned::Legacy(record) => {
                        let interface = legacy.expect("pcap-parser yields the header first");
                        if interface.snaplen > 0 && record.caplen > interface.snaplen {
                            return Err(ReadError::CaplenExceedsSnaplen {
                                packet: packet_number,
                                offset: here,
                                caplen: record.caplen,
                                snaplen: interface.snaplen,
                            });
                        }
                        if u64::from(record.ts_usec) >= interface.units_per_second {
                            return Err(timestamp_error(stats.packets, here, record.ts_usec));
                        }
                        let timestamp_ns =
                            record_time_ns(record.ts_sec, record.ts_usec, interface.units_per_second);
                        let data = &record.data[..(record.caplen as usize).min(record.data.len())];
                        Some((timestamp_ns, interface.link_type, data))
                    }
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        // Interface ids restart in every section.
                        interfaces.clear();
                        pcapng = true;
                        None
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        interfaces.push(Interface {
                            link_type: idb.linktype.0 as u16,
                            snaplen: idb.snaplen,
                            units_per_second: idb.ts_resolution().unwrap_or(1_000_000).max(1),
                            offset_s: idb.if_tsoffset,
                        });
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        let Some(interface) = interfaces.get(epb.if_id as usize).copied() else {
                            return Err(ReadError::UnknownInterface {
                                packet: packet_number,
                                offset: here,
                                interface: epb.if_id,
                            });
                        };
                        if interface.snaplen > 0 && epb.caplen > interface.snaplen {
                            return Err(ReadError::CaplenExceedsSnaplen {
                                packet: packet_number,
                                offset: here,
                                caplen: epb.caplen,
                                snaplen: interface.snaplen,
                            });
                        }
                        let raw = (u128::from(epb.ts_high) << 32) | u128::from(epb.ts_low);
                        let ns = raw * 1_000_000_000 / u128::from(interface.units_per_second);
                        let ns = ns as i128 + i128::from(interface.offset_s) * 1_000_000_000;
                        // Clamp nonsense timestamps into range rather than wrapping them.
                        let ns = ns.clamp(0, i128::from(u64::MAX)) as u64;
                        let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                        Some((ns, interface.link_type, data))
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(_)) => {
                        stats.packets += 1;
                        stats.untimed_packets += 1;
                        None
                    }
                    PcapBlockOwned::NG(_) => None,
                };
                if let Some((timestamp_ns, link_type, data)) = timed {
                    stats.count_timed(&mut previous_ns, timestamp_ns, data.len());
                    on_packet(&Packet { number: packet_number, offset: here, timestamp_ns, link_type, data });
                }
                offset += consumed as u64;
                // Not `consume`: past half the buffer it moves the rest to the front on every
                // call, copying the file a second time. `refill` moves only the record cut
                // short, once per buffer.
                reader.consume_noshift(consumed);
            }
            Err(PcapError::Eof) => return Ok(()),
            Err(PcapError::Incomplete(_)) => {
                if reader.reader_exhausted() {
                    return Err(ReadError::Truncated { packet: packet_number, offset });
                }
                reader.refill().map_err(|_| ReadError::Io("cannot read it".into()))?;
            }
            Err(PcapError::UnexpectedEof) => {
                return Err(ReadError::Truncated { packet: packet_number, offset });
            }
            Err(PcapError::BufferTooSmall) => {
                return Err(ReadError::Malformed {
                    packet: stats.packets,
                    offset,
                    reason: format!("a record larger than {buffer_bytes} bytes"),
                });
            }
            Err(PcapError::ReadError) => return Err(ReadError::Io("cannot read it".into())),
            Err(PcapError::NomError(_, kind)) | Err(PcapError::OwnedNomError(_, kind)) => {
                let reason = format!("the record does not parse ({})", kind.description());
                return Err(ReadError::Malformed { packet: stats.packets, offset, reason });
            }
            Err(PcapError::HeaderNotRecognized) => {
                return Err(ReadError::NotACapture { first_bytes: String::new() });
            }
        }
    }
}

/// A legacy record's time in nanoseconds since the Unix epoch; `fraction` is below
/// `units_per_second` (1e6 or 1e9).
pub(crate) fn record_time_ns(seconds: u32, fraction: u32, units_per_second: u64) -> u64 {
    u64::from(seconds) * 1_000_000_000 + u64::from(fraction) * (1_000_000_000 / units_per_second)
}

/// A record whose fraction of a second is a second or more, which libpcap and Wireshark
/// take as broken.
pub(crate) fn timestamp_error(packets_before: u64, offset: u64, fraction: u32) -> ReadError {
    ReadError::Malformed {
        packet: packets_before,
        offset,
        reason: format!("its timestamp's fraction of a second, {fraction}, is a second or more"),
    }
}

/// The length field of the pcapng block at the start of `data`, in the current section's
/// byte order (updated when the block is a section header).
fn pcapng_block_length(data: &[u8], big_endian: &mut bool) -> Option<u32> {
    const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
    if data.get(..4) == Some(&SECTION_HEADER[..]) {
        *big_endian = data.get(8..12)? == [0x1a, 0x2b, 0x3c, 0x4d];
    }
    let bytes: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    Some(if *big_endian { u32::from_be_bytes(bytes) } else { u32::from_le_bytes(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    /// A little-endian µs pcap of raw IP frames, one packet per payload, a second apart.
    fn pcap(payloads: &[&[u8]]) -> Vec<u8> {
        let times: Vec<(u32, u32)> = (0..payloads.len() as u32).map(|second| (second, 0)).collect();
        pcap_timed(payloads, &times)
    }

    /// The same, each packet at its (seconds, microseconds).
    fn pcap_timed(payloads: &[&[u8]], times: &[(u32, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        for field in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 101] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        for (payload, (second, micros)) in payloads.iter().zip(times) {
            let length = payload.len() as u32;
            for field in [*second, *micros, length, length] {
                out.extend_from_slice(&field.to_le_bytes());
            }
            out.extend_from_slice(payload);
        }
        out
    }

    #[test]
    fn a_pcapng_header_whose_block_length_is_no_length_is_damaged_not_foreign() {
        let mut header = vec![0x0a, 0x0d, 0x0d, 0x0a, 5, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a];
        header.resize(40, 0);
        let (_, _, result) = read(&header[..]);
        let error = result.unwrap_err().to_string();
        assert!(
            error.starts_with("a pcapng file whose header is damaged (it starts with 0a 0d 0d 0a"),
            "{error}"
        );
    }

    #[test]
    fn a_fraction_of_a_second_of_a_second_or_more_is_a_broken_record() {
        let bytes = pcap_timed(&[b"one", b"two"], &[(1, 999_999), (2, 1_000_000)]);
        let (numbers, _, result) = read(&bytes[..]);
        assert_eq!(numbers, [1]);
        assert_eq!(
            result.unwrap_err().to_string(),
            "malformed record at byte offset 43 (after packet #1): its timestamp's fraction of a second, \
             1000000, is a second or more"
        );
    }

    #[test]
    fn packets_timed_before_the_one_before_them_are_counted_with_the_largest_step() {
        let times = [(10, 0), (9, 500_000), (11, 0), (10, 999_000)];
        let (numbers, stats, result) = read(&pcap_timed(&[b"a", b"b", b"c", b"d"], &times)[..]);
        assert!(result.is_ok() && numbers.len() == 4);
        assert_eq!((stats.steps_back, stats.largest_step_back_ns), (2, 500_000_000));
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// Packet numbers read, and how reading ended.
    fn read(input: impl Read + Send) -> (Vec<u64>, ReadStats, Result<(), ReadError>) {
        let mut numbers = Vec::new();
        let mut stats = ReadStats::default();
        let result = read_packets(input, &mut stats, |packet| numbers.push(packet.number));
        (numbers, stats, result)
    }

    /// Hands over one byte per read, and is interrupted between bytes: a slow pipe.
    struct Trickle {
        bytes: Vec<u8>,
        at: usize,
        interrupt: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::Error::from(ErrorKind::Interrupted));
            }
            let Some(byte) = self.bytes.get(self.at) else { return Ok(0) };
            buffer[0] = *byte;
            self.at += 1;
            Ok(1)
        }
    }

    #[test]
    fn gzip_is_found_by_its_magic_and_read_like_the_plain_file() {
        let plain = pcap(&[b"one", b"two", b"three"]);
        let (numbers, stats, result) = read(&plain[..]);
        assert_eq!((numbers, stats.gzip, result), (vec![1, 2, 3], false, Ok(())));
        let (numbers, stats, result) = read(&gzip(&plain)[..]);
        assert_eq!((numbers, stats.gzip, result), (vec![1, 2, 3], true, Ok(())));
        assert_eq!(stats.bytes, 11, "captured bytes count the decompressed packets");
        // Two gzip members (`cat a.gz b.gz`) are one stream.
        let (first, second) = plain.split_at(40);
        let (numbers, _, result) = read(&[gzip(first), gzip(second)].concat()[..]);
        assert_eq!((numbers, result), (vec![1, 2, 3], Ok(())));
    }

    #[test]
    fn a_slow_interrupted_pipe_reads_like_a_file() {
        let plain = pcap(&[b"one", b"two"]);
        let (numbers, _, result) = read(Trickle { bytes: plain, at: 0, interrupt: false });
        assert_eq!((numbers, result), (vec![1, 2], Ok(())));
    }

    #[test]
    fn a_cut_gzip_stream_keeps_the_packets_before_the_cut() {
        let payloads: Vec<Vec<u8>> = (0..200u32).map(|i| i.to_le_bytes().repeat(50)).collect();
        let payloads: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        let compressed = gzip(&pcap(&payloads));
        let (numbers, stats, result) = read(&compressed[..compressed.len() / 2]);
        assert!(!numbers.is_empty() && numbers.len() < 200, "{} packets", numbers.len());
        assert!(stats.gzip);
        assert_eq!(result, Err(ReadError::Io("the gzip stream is cut short".into())));
        let mut corrupt = compressed.clone();
        for byte in &mut corrupt[20..60] {
            *byte ^= 0x5a;
        }
        let (_, _, result) = read(&corrupt[..]);
        let Err(ReadError::Io(why)) = result else { panic!("{result:?}") };
        assert!(why.starts_with("the gzip stream is corrupt"), "{why}");
    }

    #[test]
    fn the_first_bytes_say_what_a_non_capture_is() {
        let not_a_capture =
            |first_bytes: &str| Err(ReadError::NotACapture { first_bytes: first_bytes.into() });
        assert_eq!(read(&b"GET / HTTP/1.1\r\n"[..]).2, not_a_capture("47 45 54 20"));
        assert_eq!(read(&gzip(b"GET / HTTP/1.1\r\n")[..]).2, not_a_capture("47 45 54 20"));
        assert_eq!(read(&b"G"[..]).2, not_a_capture("47"));
        assert_eq!(read(&b""[..]).2, Err(ReadError::Empty));
        assert_eq!(read(&gzip(b"")[..]).2, Err(ReadError::Empty));
        // A capture's magic number with too few bytes after it is a cut header.
        let plain = pcap(&[b"one"]);
        assert_eq!(read(&plain[..10]).2, Err(ReadError::TruncatedHeader { bytes: 10 }));
        assert_eq!(read(&[0x0a, 0x0d, 0x0d][..]).2, Err(ReadError::TruncatedHeader { bytes: 3 }));
    }
}
