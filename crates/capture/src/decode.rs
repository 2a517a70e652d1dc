//! From a captured frame to the TCP facts the analysis needs, for the link types captures
//! are taken with: Ethernet (with VLAN tags), Linux cooked v1 and v2, BSD loopback/null,
//! OpenBSD loop and raw IP; IPv4 and IPv6. Parsing is etherparse's (lax, so a snap length
//! that cut the payload still yields the header); lengths come from the IP header, not from
//! what was captured.

use etherparse::{EtherType, IpNumber, LaxNetSlice, LaxSlicedPacket, TcpOptionElement, TransportSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub mod fast;

/// BSD loopback (`DLT_NULL`): a 4-byte address family, then IP.
pub const LINKTYPE_NULL: u16 = 0;
/// Ethernet, VLAN tags allowed.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// Raw IP, under an older number some systems' libpcap writes.
pub const LINKTYPE_RAW_12: u16 = 12;
/// Raw IP, under an older number some systems' libpcap writes.
pub const LINKTYPE_RAW_14: u16 = 14;
/// Raw IPv4 or IPv6, no link header.
pub const LINKTYPE_RAW: u16 = 101;
/// OpenBSD loopback: a 4-byte address family, then IP.
pub const LINKTYPE_LOOP: u16 = 108;
/// Linux cooked capture v1 (`tcpdump -i any`).
pub const LINKTYPE_LINUX_SLL: u16 = 113;
/// Raw IPv4, no link header.
pub const LINKTYPE_IPV4: u16 = 228;
/// Raw IPv6, no link header.
pub const LINKTYPE_IPV6: u16 = 229;
/// Linux cooked capture v2 (`tcpdump -i any` with newer libpcap).
pub const LINKTYPE_LINUX_SLL2: u16 = 276;

/// Whether nodelay can decode frames of this link type.
pub fn link_type_supported(link_type: u16) -> bool {
    matches!(
        link_type,
        LINKTYPE_NULL
            | LINKTYPE_ETHERNET
            | LINKTYPE_RAW_12
            | LINKTYPE_RAW_14
            | LINKTYPE_RAW
            | LINKTYPE_LOOP
            | LINKTYPE_LINUX_SLL
            | LINKTYPE_IPV4
            | LINKTYPE_IPV6
            | LINKTYPE_LINUX_SLL2
    )
}

/// One TCP segment as the analysis sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    /// Sender's address and port.
    pub source: (IpAddr, u16),
    /// Receiver's address and port.
    pub destination: (IpAddr, u16),
    /// Sequence number of the first payload byte (or of the SYN or FIN).
    pub seq: u32,
    /// Acknowledgment number; meaningful when `ack_flag` is set.
    pub ack: u32,
    /// The SYN flag.
    pub syn: bool,
    /// The ACK flag.
    pub ack_flag: bool,
    /// The FIN flag.
    pub fin: bool,
    /// The RST flag.
    pub rst: bool,
    /// Payload bytes on the wire (from the IP length, even when the capture cut them).
    pub payload_len: u32,
    /// The MSS option of a SYN.
    pub mss_option: Option<u16>,
    /// The segment carries the timestamps option (12 bytes off every segment's payload).
    pub timestamps: bool,
    /// The window field as sent (unscaled: 0 is a zero window whatever the scale).
    pub window: u16,
    /// IPv4's identification field; `None` over IPv6. Linux counts it per connection, one a
    /// packet, so a gap between two of a sender's packets is packets the capture never saw.
    pub ip_id: Option<u16>,
}

/// Decodes a frame; `None` when it is not a TCP segment (ARP, UDP, fragments, runts). The
/// common frame is read by hand ([`fast`]), the rest by etherparse.
pub fn decode_tcp(link_type: u16, frame: &[u8]) -> Option<TcpSegment> {
    match fast::decode(link_type, frame) {
        fast::Fast::Segment(segment) => Some(segment),
        fast::Fast::NotTcp => None,
        fast::Fast::Unsure => decode_with_etherparse(link_type, frame),
    }
}

/// What follows the link header of a frame that is not Ethernet: the EtherType the header
/// names (Linux cooked captures), or `None` where IP follows directly (raw, BSD and OpenBSD
/// loopback), and the bytes after the header. `None` for Ethernet (its VLAN tags are
/// etherparse's), an unknown link type, or a frame shorter than its header.
pub(crate) fn after_link_header(link_type: u16, frame: &[u8]) -> Option<(Option<u16>, &[u8])> {
    let ether_type = |at: usize| Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
    match link_type {
        LINKTYPE_NULL | LINKTYPE_LOOP => Some((None, frame.get(4..)?)),
        LINKTYPE_RAW | LINKTYPE_RAW_12 | LINKTYPE_RAW_14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            Some((None, frame))
        }
        LINKTYPE_LINUX_SLL => Some((Some(ether_type(14)?), frame.get(16..)?)),
        LINKTYPE_LINUX_SLL2 => Some((Some(ether_type(0)?), frame.get(20..)?)),
        _ => None,
    }
}

/// [`decode_tcp`] by etherparse alone: every link type and header it knows.
pub fn decode_with_etherparse(link_type: u16, frame: &[u8]) -> Option<TcpSegment> {
    let sliced = match (link_type, after_link_header(link_type, frame)) {
        (LINKTYPE_ETHERNET, _) => LaxSlicedPacket::from_ethernet(frame).ok()?,
        (_, Some((None, ip))) => LaxSlicedPacket::from_ip(ip).ok()?,
        (_, Some((Some(protocol), payload))) => {
            LaxSlicedPacket::from_ether_type(EtherType(protocol), payload)
        }
        (_, None) => return None,
    };
    let (source_ip, destination_ip, ip_payload_len, payload, ip_id) = match sliced.net.as_ref()? {
        LaxNetSlice::Ipv4(ipv4) => {
            let header = ipv4.header();
            if header.is_fragmenting_payload() {
                return None;
            }
            let payload = usize::from(header.total_len()).saturating_sub(header.slice().len());
            (
                IpAddr::V4(Ipv4Addr::from(header.source())),
                IpAddr::V4(Ipv4Addr::from(header.destination())),
                payload,
                ipv4.payload(),
                Some(header.identification()),
            )
        }
        LaxNetSlice::Ipv6(ipv6) => {
            let header = ipv6.header();
            let extensions = ipv6.extensions().slice().len();
            let payload = usize::from(header.payload_length()).saturating_sub(extensions);
            (
                IpAddr::V6(Ipv6Addr::from(header.source())),
                IpAddr::V6(Ipv6Addr::from(header.destination())),
                payload,
                ipv6.payload(),
                None,
            )
        }
        LaxNetSlice::Arp(_) => return None,
    };
    let tcp = match sliced.transport {
        Some(TransportSlice::Tcp(tcp)) => tcp,
        // A TCP header whose options the snap length cut (tcpdump -s 96 and an ACK with three
        // SACK blocks): etherparse slices no transport, but every field the analysis reads
        // but the options is there.
        None if payload.ip_number == IpNumber::TCP && !payload.fragmented => {
            let ends = (source_ip, destination_ip);
            return options_cut_short(payload.payload, ends, ip_payload_len)
                .map(|s| TcpSegment { ip_id, ..s });
        }
        _ => return None,
    };
    let header_len = usize::from(tcp.data_offset()) * 4;
    let mut mss_option = None;
    let mut timestamps = false;
    for option in tcp.options_iterator().flatten() {
        match option {
            TcpOptionElement::MaximumSegmentSize(mss) if tcp.syn() => mss_option = Some(mss),
            TcpOptionElement::Timestamp(_, _) => timestamps = true,
            _ => {}
        }
    }
    Some(TcpSegment {
        source: (source_ip, tcp.source_port()),
        destination: (destination_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack: tcp.acknowledgment_number(),
        syn: tcp.syn(),
        ack_flag: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload_len: ip_payload_len.saturating_sub(header_len) as u32,
        mss_option,
        timestamps,
        window: tcp.window_size(),
        ip_id,
    })
}

/// A TCP header cut short inside its options by the capture's snap length: the fixed 20 bytes
/// decoded, and the options as far as they were captured (an option cut in two is left out).
/// `None` when even the fixed header is cut, or when the header is not cut at all (etherparse
/// refused it for another reason).
fn options_cut_short(
    bytes: &[u8],
    (source, destination): (IpAddr, IpAddr),
    ip_payload_len: usize,
) -> Option<TcpSegment> {
    let fixed = bytes.get(..20)?;
    let header_len = usize::from(fixed[12] >> 4) * 4;
    if header_len < 20 || bytes.len() >= header_len || ip_payload_len < header_len {
        return None;
    }
    let syn = fixed[13] & 0x02 != 0;
    let (mut mss_option, mut timestamps) = (None, false);
    let mut options = &bytes[20..];
    while let Some(&kind) = options.first() {
        match kind {
            0 => break,
            1 => options = &options[1..],
            _ => {
                let Some(length) = options.get(1).map(|&l| usize::from(l)).filter(|&l| l >= 2) else { break };
                let Some(option) = options.get(..length) else { break };
                match (kind, length) {
                    (2, 4) if syn => mss_option = Some(u16::from_be_bytes([option[2], option[3]])),
                    (8, 10) => timestamps = true,
                    _ => {}
                }
                options = &options[length..];
            }
        }
    }
    let ends = (source, destination);
    Some(fast::segment(fixed, ends, ip_payload_len - header_len, (mss_option, timestamps), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 ACK from 10.0.0.1:34000 to 10.0.0.2:80 whose 60-byte TCP header carries
    /// NOP, NOP, timestamps and three SACK blocks, cut after `captured` bytes of TCP.
    fn sack_ack(captured: usize) -> Vec<u8> {
        let mut tcp = vec![0x84, 0xd0, 0, 80, 0, 0, 0, 7, 0, 0, 0, 9, 15 << 4, 0x10, 0x01, 0xf5, 0, 0, 0, 0];
        tcp.extend([1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        tcp.extend([1, 1, 5, 26]);
        tcp.extend([0u8; 24]);
        assert_eq!(tcp.len(), 60);
        let mut ip = vec![0x45, 0, 0, 80, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        ip.extend(&tcp[..captured]);
        ip
    }

    #[test]
    fn a_header_whose_options_the_snap_length_cut_is_still_a_segment() {
        let whole = decode_tcp(LINKTYPE_RAW, &sack_ack(60)).expect("whole");
        // tcpdump -s 96 on an SLL2 link keeps 56 of the 60 bytes: the third SACK block is cut.
        let cut = decode_tcp(LINKTYPE_RAW, &sack_ack(56)).expect("cut in the SACK option");
        assert_eq!(cut, whole);
        assert_eq!((cut.source.1, cut.destination.1, cut.seq, cut.ack, cut.window), (34000, 80, 7, 9, 501));
        assert!(cut.ack_flag && cut.timestamps && cut.payload_len == 0);
        // Cut inside the timestamps: the fixed header still reads, without them.
        let short = decode_tcp(LINKTYPE_RAW, &sack_ack(26)).expect("cut in the timestamps");
        assert!(!short.timestamps && short.ack == 9);
        // Cut inside the fixed 20 bytes: nothing to read.
        assert_eq!(decode_tcp(LINKTYPE_RAW, &sack_ack(19)), None);
    }
}
