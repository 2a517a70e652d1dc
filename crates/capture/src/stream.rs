//! Wireshark's `tcp.stream` numbers, so that a flow nodelay reports can be found in Wireshark
//! (`tcp.stream eq N`): TCP conversations are numbered 0, 1, 2, ... in the order their first
//! packet appears in the file, every TCP packet counting (a conversation of bare ACKs too).
//!
//! A 4-tuple used again is a new conversation only when Wireshark would say so (its "TCP
//! port numbers reused"): a SYN without ACK whose sequence number differs from the base
//! sequence number of its direction. That base is the first SYN's sequence number, or one
//! less than the first packet's when the capture starts after the SYN. A retransmitted SYN,
//! or packets after both FINs without a new SYN, stay in the old conversation. Checked
//! against tshark 4.0 (crates/cli/tests/suite/pcap.rs).
//!
//! Wireshark also numbers TCP that nodelay does not decode (IP fragments, tunnels, link
//! types nodelay skips): a capture with such TCP numbers differently.

use crate::decode::TcpSegment;

/// One conversation's number and what decides whether a SYN starts the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub index: u64,
    /// Per direction (0: from the first endpoint of the flow key), Wireshark's base
    /// sequence number, once that direction sent a packet.
    base_seq: [Option<u32>; 2],
}

impl Stream {
    pub fn new(index: u64) -> Self {
        Stream { index, base_seq: [None, None] }
    }

    /// Notes a segment sent in `direction` (0 or 1); true when it starts a new conversation
    /// on this 4-tuple, which the caller numbers with [`Stream::new`] and notes it again.
    pub fn starts_new(&mut self, direction: usize, segment: &TcpSegment) -> bool {
        let Some(base) = self.base_seq.get_mut(direction) else { return false };
        let pure_syn = segment.syn && !segment.ack_flag;
        match *base {
            Some(base) => pure_syn && segment.seq != base,
            None => {
                // Relative sequence numbers start at 0 on a SYN, at 1 on anything else.
                *base = Some(if segment.syn { segment.seq } else { segment.seq.wrapping_sub(1) });
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn segment(seq: u32, syn: bool, ack_flag: bool) -> TcpSegment {
        let end = (IpAddr::V4(Ipv4Addr::LOCALHOST), 1);
        TcpSegment {
            source: end,
            destination: end,
            seq,
            ack: 0,
            syn,
            ack_flag,
            fin: false,
            rst: false,
            payload_len: 0,
            mss_option: None,
            timestamps: false,
            window: 65535,
            ip_id: None,
        }
    }

    #[test]
    fn a_syn_with_a_new_sequence_number_starts_a_new_stream() {
        let mut stream = Stream::new(0);
        assert!(!stream.starts_new(0, &segment(1000, true, false)));
        assert!(!stream.starts_new(1, &segment(5000, true, true)));
        assert!(!stream.starts_new(0, &segment(1000, true, false)), "a retransmitted SYN");
        assert!(!stream.starts_new(1, &segment(6000, true, true)), "a SYN-ACK never starts one");
        assert!(stream.starts_new(0, &segment(9000, true, false)), "port reuse");
        assert!(stream.starts_new(1, &segment(7000, true, false)), "reuse from the other side");
    }

    #[test]
    fn without_a_syn_the_base_is_one_before_the_first_sequence_number() {
        let mut stream = Stream::new(3);
        assert!(!stream.starts_new(0, &segment(50, false, true)));
        assert!(!stream.starts_new(0, &segment(49, true, false)));
        assert!(stream.starts_new(0, &segment(50, true, false)));
        // The first packet from the other side sets that side's base, SYN or not.
        assert!(!stream.starts_new(1, &segment(0, true, false)));
        assert!(!stream.starts_new(1, &segment(0, true, false)));
    }
}
