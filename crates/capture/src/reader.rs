//! Streaming reader for pcap (both byte orders, µs and ns timestamps) and pcapng (several
//! interfaces, each with its own link type and timestamp resolution), built on pcap-parser.
//! One packet at a time through a callback: memory does not depend on the file size.

use pcap_parser::pcapng::Block;
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};
use std::io::Read;
use thiserror::Error;

/// Bytes of file buffered at once; a packet must fit (snap lengths are at most 256 KiB).
const BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// One captured packet, valid during the callback.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// 1-based, counting every packet record in the file.
    pub number: u64,
    /// Byte offset of the packet's record in the file.
    pub offset: u64,
    pub timestamp_ns: u64,
    /// LINKTYPE_* value of the interface it was captured on.
    pub link_type: u16,
    /// Captured bytes (may be shorter than the packet on the wire).
    pub data: &'a [u8],
}

/// Why reading stopped before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadError {
    #[error("the file is empty")]
    Empty,
    #[error("not a pcap or pcapng file (no known magic number at byte offset 0)")]
    NotACapture,
    #[error("the file is truncated: packet record #{packet} at byte offset {offset} is cut short")]
    Truncated { packet: u64, offset: u64 },
    #[error(
        "packet #{packet} at byte offset {offset}: captured length {caplen} exceeds the snap length {snaplen}"
    )]
    CaplenExceedsSnaplen { packet: u64, offset: u64, caplen: u32, snaplen: u32 },
    #[error(
        "packet #{packet} at byte offset {offset}: refers to interface {interface}, which was never described"
    )]
    UnknownInterface { packet: u64, offset: u64, interface: u32 },
    #[error("malformed record at byte offset {offset} (after packet #{packet}): {reason}")]
    Malformed { packet: u64, offset: u64, reason: String },
    #[error("cannot read the file: {0}")]
    Io(String),
}

/// What the reader saw besides packets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub packets: u64,
    pub bytes: u64,
    /// Packets without a timestamp (pcapng simple packet blocks), skipped.
    pub untimed_packets: u64,
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
    mut on_packet: F,
) -> Result<(), ReadError>
where
    R: Read + Send,
    F: FnMut(&Packet<'_>),
{
    let mut reader = match create_reader(buffer_bytes, input) {
        Ok(reader) => reader,
        Err(PcapError::Eof) => return Err(ReadError::Empty),
        Err(PcapError::Incomplete(_)) => return Err(ReadError::Truncated { packet: 0, offset: 0 }),
        Err(PcapError::ReadError) => return Err(ReadError::Io("read failed".into())),
        Err(_) => return Err(ReadError::NotACapture),
    };
    // Legacy pcap: one interface from the file header.
    let mut legacy: Option<Interface> = None;
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut offset: u64 = 0;
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
                        let fraction_ns =
                            u64::from(record.ts_usec) * (1_000_000_000 / interface.units_per_second);
                        let timestamp_ns = u64::from(record.ts_sec) * 1_000_000_000 + fraction_ns;
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
                    stats.packets += 1;
                    stats.bytes += data.len() as u64;
                    on_packet(&Packet { number: packet_number, offset: here, timestamp_ns, link_type, data });
                }
                offset += consumed as u64;
                reader.consume(consumed);
            }
            Err(PcapError::Eof) => return Ok(()),
            Err(PcapError::Incomplete(_)) => {
                if reader.reader_exhausted() {
                    return Err(ReadError::Truncated { packet: packet_number, offset });
                }
                reader.refill().map_err(|e| ReadError::Io(format!("{e:?}")))?;
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
            Err(PcapError::ReadError) => return Err(ReadError::Io("read failed".into())),
            Err(PcapError::NomError(_, kind)) | Err(PcapError::OwnedNomError(_, kind)) => {
                let reason = format!("the record does not parse ({})", kind.description());
                return Err(ReadError::Malformed { packet: stats.packets, offset, reason });
            }
            Err(PcapError::HeaderNotRecognized) => return Err(ReadError::NotACapture),
        }
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
