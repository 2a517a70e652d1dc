//! The classic BPF program attached to the capture socket (SO_ATTACH_FILTER): the kernel
//! keeps TCP over IPv4 and IPv6 (and only the ports asked for, either side) and cuts each
//! packet to its headers, so watch never copies a payload byte nor wakes up for traffic it
//! does not follow.
//!
//! The socket is a cooked one (SOCK_DGRAM), so the program sees the packet from its IP header
//! whatever the link (Ethernet, loopback, a tunnel), and reads the protocol from the kernel's
//! ancillary field (`SKF_AD_PROTOCOL`), as libpcap does for `-i any`. IPv4 fragments after
//! the first carry no TCP header and are dropped; an IPv6 packet is TCP when its first next
//! header is (extension headers are not followed).

/// The headers-only snap length, in bytes: the largest IPv4 header (60) and TCP header with
/// options (60) fit, and an IPv6 header (40) with the largest TCP header too. The payload's
/// length comes from the IP header, not from what was captured.
pub const SNAP_BYTES: u32 = 128;

/// Ports a filter can hold: each costs two instructions, and conditional jumps reach at most
/// 255 instructions ahead.
pub const MAX_PORTS: usize = 64;

// The classic BPF opcodes used (linux/bpf_common.h, linux/filter.h).
const BPF_LD: u16 = 0x00;
const BPF_LDX: u16 = 0x01;
const BPF_JMP: u16 = 0x05;
const BPF_RET: u16 = 0x06;
const BPF_H: u16 = 0x08;
const BPF_B: u16 = 0x10;
const BPF_ABS: u16 = 0x20;
const BPF_IND: u16 = 0x40;
const BPF_IMM: u16 = 0x00;
const BPF_MSH: u16 = 0xa0;
const BPF_JA: u16 = 0x00;
const BPF_JEQ: u16 = 0x10;
const BPF_JSET: u16 = 0x40;
const BPF_K: u16 = 0x00;
/// The ancillary load of the packet's protocol (`SKF_AD_OFF + SKF_AD_PROTOCOL`).
const SKF_AD_PROTOCOL: u32 = (-0x1000i32) as u32;
const ETH_P_IP: u32 = 0x0800;
const ETH_P_IPV6: u32 = 0x86dd;
const IPPROTO_TCP: u32 = 6;

/// One instruction, as `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Instruction {
    /// Opcode.
    pub code: u16,
    /// Instructions skipped when the condition holds.
    pub jt: u8,
    /// Instructions skipped when it does not.
    pub jf: u8,
    /// The constant.
    pub k: u32,
}

const fn op(code: u16, k: u32) -> Instruction {
    Instruction { code, jt: 0, jf: 0, k }
}

/// A program assembled with forward jumps to labels, resolved once the whole is laid out.
struct Assembler {
    code: Vec<Instruction>,
    /// (instruction, label when true, label when false): `None` falls through.
    jumps: Vec<(usize, Option<Label>, Option<Label>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    V4,
    V6,
    Ports,
    Accept,
    Drop,
}

impl Assembler {
    fn push(&mut self, instruction: Instruction) {
        self.code.push(instruction);
    }

    fn jump(&mut self, code: u16, k: u32, when_true: Option<Label>, when_false: Option<Label>) {
        self.jumps.push((self.code.len(), when_true, when_false));
        self.code.push(op(BPF_JMP | code | BPF_K, k));
    }

    fn resolve(mut self, labels: &[(Label, usize)]) -> Vec<Instruction> {
        let at = |label: Label| labels.iter().find(|(l, _)| *l == label).map(|(_, at)| *at);
        for (index, when_true, when_false) in self.jumps {
            let offset = |label: Option<Label>| {
                label.and_then(at).map_or(0, |target| {
                    // Programs are laid out so that every jump is forward and in reach.
                    u32::try_from(target - index - 1).unwrap_or(0)
                })
            };
            let instruction = &mut self.code[index];
            if instruction.code == BPF_JMP | BPF_JA {
                instruction.k = offset(when_true);
            } else {
                instruction.jt = offset(when_true) as u8;
                instruction.jf = offset(when_false) as u8;
            }
        }
        self.code
    }
}

/// The program for `ports` (empty: every TCP packet); at most [`MAX_PORTS`] ports.
pub fn tcp_filter(ports: &[u16]) -> Vec<Instruction> {
    let ports = &ports[..ports.len().min(MAX_PORTS)];
    let mut a = Assembler { code: Vec::new(), jumps: Vec::new() };
    let mut labels = Vec::new();
    a.push(op(BPF_LD | BPF_H | BPF_ABS, SKF_AD_PROTOCOL));
    a.jump(BPF_JEQ, ETH_P_IP, Some(Label::V4), None);
    a.jump(BPF_JEQ, ETH_P_IPV6, Some(Label::V6), Some(Label::Drop));
    labels.push((Label::V4, a.code.len()));
    a.push(op(BPF_LD | BPF_B | BPF_ABS, 9));
    a.jump(BPF_JEQ, IPPROTO_TCP, None, Some(Label::Drop));
    a.push(op(BPF_LD | BPF_H | BPF_ABS, 6));
    a.jump(BPF_JSET, 0x1fff, Some(Label::Drop), None);
    // X = the IPv4 header's length.
    a.push(op(BPF_LDX | BPF_B | BPF_MSH, 0));
    a.jump(BPF_JA, 0, Some(Label::Ports), None);
    labels.push((Label::V6, a.code.len()));
    a.push(op(BPF_LD | BPF_B | BPF_ABS, 6));
    a.jump(BPF_JEQ, IPPROTO_TCP, None, Some(Label::Drop));
    a.push(op(BPF_LDX | BPF_IMM, 40));
    labels.push((Label::Ports, a.code.len()));
    if !ports.is_empty() {
        for (field, last) in [(0, false), (2, true)] {
            a.push(op(BPF_LD | BPF_H | BPF_IND, field));
            for (i, port) in ports.iter().enumerate() {
                let otherwise = (last && i + 1 == ports.len()).then_some(Label::Drop);
                a.jump(BPF_JEQ, u32::from(*port), Some(Label::Accept), otherwise);
            }
        }
    }
    labels.push((Label::Accept, a.code.len()));
    a.push(op(BPF_RET | BPF_K, SNAP_BYTES));
    labels.push((Label::Drop, a.code.len()));
    a.push(op(BPF_RET | BPF_K, 0));
    a.resolve(&labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic BPF interpreter for the opcodes above: what the kernel returns for `packet`
    /// (bytes from the IP header) of protocol `protocol`. `None`: the program read out of
    /// bounds (the kernel drops the packet then).
    fn run(program: &[Instruction], protocol: u32, packet: &[u8]) -> Option<u32> {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let byte = |at: u32| packet.get(at as usize).map(|b| u32::from(*b));
        let half = |at: u32| Some(byte(at)? << 8 | byte(at + 1)?);
        loop {
            let i = program[pc];
            pc += 1;
            match i.code {
                c if c == BPF_LD | BPF_H | BPF_ABS && i.k == SKF_AD_PROTOCOL => a = protocol,
                c if c == BPF_LD | BPF_H | BPF_ABS => a = half(i.k)?,
                c if c == BPF_LD | BPF_B | BPF_ABS => a = byte(i.k)?,
                c if c == BPF_LD | BPF_H | BPF_IND => a = half(x + i.k)?,
                c if c == BPF_LDX | BPF_B | BPF_MSH => x = (byte(i.k)? & 0xf) * 4,
                c if c == BPF_LDX | BPF_IMM => x = i.k,
                c if c == BPF_JMP | BPF_JA => pc += i.k as usize,
                c if c == BPF_JMP | BPF_JEQ | BPF_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                c if c == BPF_JMP | BPF_JSET | BPF_K => {
                    pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf })
                }
                c if c == BPF_RET | BPF_K => return Some(i.k),
                other => panic!("opcode {other:#x} not interpreted"),
            }
        }
    }

    fn ipv4(protocol: u8, fragment: u16, ports: (u16, u16)) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 60, 0, 0, 0, 0, 64, protocol, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        p[6..8].copy_from_slice(&fragment.to_be_bytes());
        p.extend_from_slice(&ports.0.to_be_bytes());
        p.extend_from_slice(&ports.1.to_be_bytes());
        p.resize(40, 0);
        p
    }

    fn ipv6(next: u8, ports: (u16, u16)) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 20, next, 64];
        p.resize(40, 0);
        p.extend_from_slice(&ports.0.to_be_bytes());
        p.extend_from_slice(&ports.1.to_be_bytes());
        p.resize(60, 0);
        p
    }

    #[test]
    fn every_tcp_packet_without_ports_and_nothing_else() {
        let program = tcp_filter(&[]);
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0, (1, 2))), Some(SNAP_BYTES));
        assert_eq!(run(&program, ETH_P_IPV6, &ipv6(6, (1, 2))), Some(SNAP_BYTES));
        assert_eq!(run(&program, ETH_P_IP, &ipv4(17, 0, (1, 2))), Some(0), "UDP");
        assert_eq!(run(&program, ETH_P_IPV6, &ipv6(17, (1, 2))), Some(0));
        assert_eq!(run(&program, 0x0806, &ipv4(6, 0, (1, 2))), Some(0), "ARP");
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0x0010, (1, 2))), Some(0), "a later fragment");
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0x4000, (1, 2))), Some(SNAP_BYTES), "don't fragment");
    }

    #[test]
    fn ports_match_either_side_and_an_ipv4_header_with_options() {
        let program = tcp_filter(&[8080, 443]);
        for ports in [(8080, 40000), (40000, 8080), (443, 1), (1, 443)] {
            assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0, ports)), Some(SNAP_BYTES), "{ports:?}");
            assert_eq!(run(&program, ETH_P_IPV6, &ipv6(6, ports)), Some(SNAP_BYTES), "{ports:?}");
        }
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0, (1, 2))), Some(0));
        assert_eq!(run(&program, ETH_P_IPV6, &ipv6(6, (8081, 2))), Some(0));
        // A 24-byte IPv4 header (one option word): the ports sit 4 bytes later.
        let mut packet = ipv4(6, 0, (0, 0));
        packet[0] = 0x46;
        packet[24..28].copy_from_slice(&[0x1f, 0x90, 0, 1]);
        assert_eq!(run(&program, ETH_P_IP, &packet), Some(SNAP_BYTES));
    }

    #[test]
    fn the_most_ports_still_jump_within_reach() {
        let ports: Vec<u16> = (1..=MAX_PORTS as u16 + 5).collect();
        let program = tcp_filter(&ports);
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0, (MAX_PORTS as u16, 9))), Some(SNAP_BYTES));
        assert_eq!(run(&program, ETH_P_IP, &ipv4(6, 0, (MAX_PORTS as u16 + 1, 40000))), Some(0));
        assert_eq!(run(&program, ETH_P_IPV6, &ipv6(17, (1, 1))), Some(0));
    }
}
