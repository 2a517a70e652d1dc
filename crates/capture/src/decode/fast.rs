//! The common frame read by hand: IPv4 or IPv6 straight under the link header, then TCP.
//! Measured on a 254 MB loopback capture, etherparse's slicing (and the copies of the large
//! struct it returns) took about a third of `nodelay pcap`'s time; this path reads the few
//! fields the analysis needs in place. Whatever it is not sure of (VLAN tags, IPv6 extension
//! headers, a header cut short, a malformed option) it leaves to etherparse, so the two agree
//! on every frame (`tests::agrees_with_etherparse_on_every_fixture_frame`, and the fuzz target
//! `decode_fast`).

use super::TcpSegment;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What the fast path made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fast {
    /// A TCP segment.
    Segment(TcpSegment),
    /// Surely no TCP segment (another protocol over IP, a fragment).
    NotTcp,
    /// Not a frame this path reads: etherparse decides.
    Unsure,
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTOCOL_TCP: u8 = 6;
/// IPv6 next-header values that are extension headers (RFC 8200, 5096, 6275, 7401, 8200's
/// registry): etherparse walks them.
const IPV6_EXTENSIONS: [u8; 9] = [0, 43, 44, 50, 51, 60, 135, 139, 140];

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// The IP packet under the link header, when the link says IPv4 or IPv6 plainly: `None` for
/// anything else.
pub fn ip_of(link_type: u16, frame: &[u8]) -> Option<&[u8]> {
    let ip = |ether_type: u16| matches!(ether_type, ETHERTYPE_IPV4 | ETHERTYPE_IPV6);
    match (link_type, super::after_link_header(link_type, frame)) {
        (super::LINKTYPE_ETHERNET, _) => frame.get(14..).filter(|_| be16(frame, 12).is_some_and(ip)),
        (_, Some((None, packet))) => Some(packet),
        (_, Some((Some(ether_type), packet))) => ip(ether_type).then_some(packet),
        (_, None) => None,
    }
}

/// Reads `frame` of `link_type`, or says it cannot be sure.
pub fn decode(link_type: u16, frame: &[u8]) -> Fast {
    let Some(ip) = ip_of(link_type, frame) else { return Fast::Unsure };
    match ip.first().map(|b| b >> 4) {
        Some(4) => ipv4(ip),
        Some(6) => ipv6(ip),
        _ => Fast::Unsure,
    }
}

fn ipv4(ip: &[u8]) -> Fast {
    let header_len = usize::from(ip[0] & 0x0f) * 4;
    let (Some(total_len), Some(flags_fragment)) = (be16(ip, 2), be16(ip, 6)) else { return Fast::Unsure };
    let total_len = usize::from(total_len);
    if header_len < 20 || ip.len() < header_len || total_len < header_len {
        return Fast::Unsure;
    }
    // More fragments, or an offset: a fragment, which the analysis leaves out.
    if flags_fragment & 0x3fff != 0 {
        return Fast::NotTcp;
    }
    if ip[9] != PROTOCOL_TCP {
        return Fast::Unsure;
    }
    let source = IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]));
    let destination = IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]));
    tcp(&ip[header_len..], source, destination, total_len - header_len, be16(ip, 4))
}

fn ipv6(ip: &[u8]) -> Fast {
    if ip.len() < 40 {
        return Fast::Unsure;
    }
    let next_header = ip[6];
    let Some(payload_len) = be16(ip, 4) else { return Fast::Unsure };
    // A jumbogram's length is in an extension header; extensions are etherparse's.
    if next_header != PROTOCOL_TCP || payload_len == 0 || IPV6_EXTENSIONS.contains(&next_header) {
        return Fast::Unsure;
    }
    let address = |at: usize| -> IpAddr {
        let bytes: [u8; 16] = ip[at..at + 16].try_into().expect("40 bytes checked");
        IpAddr::V6(Ipv6Addr::from(bytes))
    };
    tcp(&ip[40..], address(8), address(24), usize::from(payload_len), None)
}

/// The TCP header at the start of `bytes` (as captured), of a segment `ip_payload_len` long
/// on the wire, in a packet of IPv4 identification `ip_id`.
fn tcp(bytes: &[u8], source: IpAddr, destination: IpAddr, ip_payload_len: usize, ip_id: Option<u16>) -> Fast {
    if bytes.len() < 20 {
        return Fast::Unsure;
    }
    let header_len = usize::from(bytes[12] >> 4) * 4;
    if header_len < 20 || bytes.len() < header_len || ip_payload_len < header_len {
        return Fast::Unsure;
    }
    let syn = bytes[13] & 0x02 != 0;
    let Some(options) = options(&bytes[20..header_len], syn) else { return Fast::Unsure };
    Fast::Segment(segment(bytes, (source, destination), ip_payload_len - header_len, options, ip_id))
}

/// The segment whose fixed TCP header starts `fixed` (20 bytes at least), `payload_len` bytes
/// long on the wire, with its options' MSS and timestamps as read.
pub(super) fn segment(
    fixed: &[u8],
    (source, destination): (IpAddr, IpAddr),
    payload_len: usize,
    (mss_option, timestamps): (Option<u16>, bool),
    ip_id: Option<u16>,
) -> TcpSegment {
    let field16 = |at| be16(fixed, at).expect("a fixed header has 20 bytes");
    let field32 = |at| be32(fixed, at).expect("a fixed header has 20 bytes");
    let flags = fixed[13];
    TcpSegment {
        source: (source, field16(0)),
        destination: (destination, field16(2)),
        seq: field32(4),
        ack: field32(8),
        syn: flags & 0x02 != 0,
        ack_flag: flags & 0x10 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload_len: payload_len as u32,
        mss_option,
        timestamps,
        window: field16(14),
        ip_id,
    }
}

/// The MSS (of a SYN) and whether timestamps are on; `None` for options this path is not sure
/// of: an unknown kind, a length that kind cannot have, or one past the header. etherparse
/// stops at the first of those, and decides such a segment.
fn options(mut bytes: &[u8], syn: bool) -> Option<(Option<u16>, bool)> {
    // Nearly every segment of a Linux peer: NOP, NOP, timestamps.
    if bytes.len() == 12 && bytes[..4] == [1, 1, 8, 10] {
        return Some((None, true));
    }
    let (mut mss, mut timestamps) = (None, false);
    while let Some(&kind) = bytes.first() {
        if kind == 0 {
            break;
        }
        if kind == 1 {
            bytes = &bytes[1..];
            continue;
        }
        let length = *bytes.get(1)?;
        let fits = match kind {
            2 => length == 4,
            3 => length == 3,
            4 => length == 2,
            5 => matches!(length, 10 | 18 | 26 | 34),
            8 => length == 10,
            _ => false,
        };
        if !fits || usize::from(length) > bytes.len() {
            return None;
        }
        match kind {
            2 if syn => mss = Some(u16::from_be_bytes([bytes[2], bytes[3]])),
            8 => timestamps = true,
            _ => {}
        }
        bytes = &bytes[usize::from(length)..];
    }
    Some((mss, timestamps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_with_etherparse;
    use crate::reader::{ReadStats, read_packets};

    /// The fast path's answer agrees with etherparse's, or it left the frame to etherparse.
    fn agrees(link_type: u16, frame: &[u8]) -> Result<bool, String> {
        let slow = decode_with_etherparse(link_type, frame);
        match decode(link_type, frame) {
            Fast::Segment(segment) if Some(segment) != slow => {
                Err(format!("fast {segment:?}, etherparse {slow:?}"))
            }
            Fast::NotTcp if slow.is_some() => Err(format!("fast: not TCP, etherparse {slow:?}")),
            Fast::Unsure => Ok(false),
            _ => Ok(true),
        }
    }

    #[test]
    fn agrees_with_etherparse_on_every_fixture_frame_and_its_mutations() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pcap");
        let (mut frames, mut fast, mut mutations) = (0, 0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.extension().is_some_and(|e| e == "pcap" || e == "pcapng") {
                continue;
            }
            let file = std::fs::File::open(&path).unwrap();
            let mut stats = ReadStats::default();
            let _ = read_packets(file, &mut stats, |packet| {
                frames += 1;
                let name = path.display();
                match agrees(packet.link_type, packet.data) {
                    Ok(read_fast) => fast += usize::from(read_fast),
                    Err(why) => panic!("{name} #{}: {why}", packet.number),
                }
                // Every bit of the headers flipped in turn, in the first frames of each file.
                if packet.number > 40 {
                    return;
                }
                let mut frame = packet.data.to_vec();
                for at in 0..frame.len().min(80) {
                    for bit in 0..8 {
                        frame[at] ^= 1 << bit;
                        mutations += 1;
                        if let Err(why) = agrees(packet.link_type, &frame) {
                            panic!("{name} #{} with byte {at} bit {bit} flipped: {why}", packet.number);
                        }
                        frame[at] ^= 1 << bit;
                    }
                }
            });
        }
        // Most frames of the fixtures are plain IPv4 or IPv6 TCP: the fast path reads them.
        assert!(frames > 1000 && fast * 10 > frames * 9, "{fast} of {frames} frames read fast");
        assert!(mutations > 100_000, "{mutations}");
    }

    #[test]
    fn what_it_is_not_sure_of_goes_to_etherparse() {
        // An Ethernet frame with a VLAN tag, an IPv6 hop-by-hop header, an unknown option.
        let vlan = [&[0u8; 12][..], &[0x81, 0x00, 0, 1, 0x08, 0x00], &[0x45; 40]].concat();
        assert_eq!(decode(crate::decode::LINKTYPE_ETHERNET, &vlan), Fast::Unsure);
        let mut ipv6 = vec![0x60, 0, 0, 0, 0, 20, 0, 64];
        ipv6.extend([0u8; 32]);
        ipv6.extend([0u8; 20]);
        assert_eq!(decode(crate::decode::LINKTYPE_RAW, &ipv6), Fast::Unsure);
        assert_eq!(options(&[30, 4, 0, 0], false), None);
        assert_eq!(options(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2], false), Some((None, true)));
        assert_eq!(options(&[2, 4, 0x05, 0x64], true), Some((Some(1380), false)));
    }
}
