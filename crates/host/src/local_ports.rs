//! This machine's ephemeral ports, for a bench run whose connects failed with EADDRNOTAVAIL:
//! the range the kernel picks local ports from (`net.ipv4.ip_local_port_range`), whether it
//! may reuse a TIME-WAIT port for a new connection (`net.ipv4.tcp_tw_reuse`), and the
//! sockets in TIME-WAIT (to the target, and in all) in this network namespace's tables. The
//! side that closes a connection first keeps its port in TIME-WAIT for 60 s; a client that
//! opens and closes connections faster than the range divided by 60 s runs out.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// This machine's ephemeral port range, TIME-WAIT reuse setting and TIME-WAIT sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalPorts {
    /// `net.ipv4.ip_local_port_range`, both ends included.
    pub range_low: u16,
    /// The range's upper end.
    pub range_high: u16,
    /// `net.ipv4.tcp_tw_reuse`: 0 off, 1 on, 2 (the default) on for loopback only.
    pub tcp_tw_reuse: Option<u8>,
    /// Sockets in TIME-WAIT whose remote end is the target.
    pub time_wait_to_target: u64,
    /// Sockets in TIME-WAIT in all.
    pub time_wait_total: u64,
}

impl LocalPorts {
    /// Ports in the range.
    pub fn ports(&self) -> u32 {
        u32::from(self.range_high).saturating_sub(u32::from(self.range_low)) + 1
    }
}

/// Reads the range and the TIME-WAIT sockets towards `target`; `None` where /proc cannot
/// be read (or off Linux).
#[cfg(target_os = "linux")]
pub fn local_ports(target: SocketAddr) -> Option<LocalPorts> {
    let (range_low, range_high) = port_range()?;
    let tcp_tw_reuse =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse").ok().and_then(|t| t.trim().parse().ok());
    let entries = crate::tcp_table::read_once(None).ok()?;
    let time_wait: Vec<_> = entries.iter().filter(|e| e.state == procfs::net::TcpState::TimeWait).collect();
    let time_wait_to_target = time_wait.iter().filter(|e| same_endpoint(e.remote, target)).count() as u64;
    Some(LocalPorts {
        range_low,
        range_high,
        tcp_tw_reuse,
        time_wait_to_target,
        time_wait_total: time_wait.len() as u64,
    })
}

/// `::ffff:127.0.0.1:80` is `127.0.0.1:80`.
#[cfg(target_os = "linux")]
fn same_endpoint(one: SocketAddr, other: SocketAddr) -> bool {
    one.port() == other.port() && one.ip().to_canonical() == other.ip().to_canonical()
}

#[cfg(not(target_os = "linux"))]
pub fn local_ports(_target: SocketAddr) -> Option<LocalPorts> {
    None
}

/// `net.ipv4.ip_local_port_range` of this process's network namespace: the ports the kernel
/// picks a client's local port from, both ends included.
#[cfg(target_os = "linux")]
pub fn port_range() -> Option<(u16, u16)> {
    parse_range(&std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?)
}

/// Not known off Linux.
#[cfg(not(target_os = "linux"))]
pub fn port_range() -> Option<(u16, u16)> {
    None
}

/// Connects to one destination after which the kernel's choice of local port has gone round
/// this namespace's range, and meets ports it used earlier in the run: from there 4-tuples
/// repeat. Since Linux 5.17 (`__inet_hash_connect`'s `table_perturb`) each connect moves the
/// next port tried 2 to 16 ports on, 9 on average, so a round takes ~range/9 connects (taken
/// as range/8); before, 2 ports on, so range/2. Measured on 6.18 through an nginx proxy over
/// 28 232 ports: 3 809 connects made 3 668 distinct 4-tuples, 18 504 made 10 868, 39 108 made
/// 13 496.
#[cfg(target_os = "linux")]
pub(crate) fn connects_per_round() -> Option<u64> {
    let (low, high) = port_range()?;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let ports = u64::from(high - low) + 1;
    Some((ports / ports_per_connect_round(&release)?).max(1))
}

/// The range's share a round of connects takes, by kernel release (`6.18.44-...`).
fn ports_per_connect_round(release: &str) -> Option<u64> {
    let mut numbers = release.split(['.', '-']).map(|n| n.parse::<u32>().ok());
    let (major, minor) = (numbers.next()??, numbers.next()??);
    Some(if (major, minor) >= (5, 17) { 8 } else { 2 })
}

/// "32768\t60999\n" -> (32768, 60999).
fn parse_range(text: &str) -> Option<(u16, u16)> {
    let mut ends = text.split_whitespace().map(|n| n.parse::<u16>().ok());
    let (low, high) = (ends.next()??, ends.next()??);
    (low <= high).then_some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connects_go_round_the_range_in_an_eighth_of_it_since_5_17() {
        assert_eq!(ports_per_connect_round("6.18.44-fc-v657"), Some(8));
        assert_eq!(ports_per_connect_round("5.17.0"), Some(8));
        assert_eq!(ports_per_connect_round("5.16.20-generic"), Some(2));
        assert_eq!(ports_per_connect_round("4.19.0-27-amd64"), Some(2));
        assert_eq!(ports_per_connect_round("6"), None);
        assert_eq!(ports_per_connect_round("x.y"), None);
    }

    #[test]
    fn the_range_is_two_numbers_low_first() {
        assert_eq!(parse_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_range("40000 40049"), Some((40000, 40049)));
        assert_eq!(parse_range("60999 32768"), None);
        assert_eq!(parse_range("x 1"), None);
        let ports = LocalPorts {
            range_low: 40000,
            range_high: 40049,
            tcp_tw_reuse: Some(0),
            time_wait_to_target: 0,
            time_wait_total: 0,
        };
        assert_eq!(ports.ports(), 50);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_has_a_range_and_tables() {
        let ports = local_ports("127.0.0.1:9".parse().unwrap()).expect("readable /proc");
        assert!(ports.ports() >= 1);
        assert!(ports.time_wait_to_target <= ports.time_wait_total);
    }
}
