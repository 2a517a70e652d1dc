//! The other end of a connection when it is on this host, in the sender's network namespace:
//! the process that holds it and the delay its delayed ACKs get now. A hold a delayed ACK
//! released was that process's timer: this names it. Read through sock_diag, so only for a
//! sender in watch's own namespace; a peer elsewhere (another host, another namespace) is not
//! looked for.

use crate::sock_diag;
use crate::socket_owner::{HELD_STATES, Indexed, OwnerIndex, canonical};
use crate::socket_survey::{diag, port_filter};
use procfs::process::Process;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Linux's shortest delayed-ACK timeout (`TCP_DELACK_MIN`).
const DELAYED_ACK_MIN: Duration = Duration::from_millis(40);

/// The local end of a connection's other side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPeer {
    /// The process that holds the peer's socket.
    pub pid: u32,
    /// Its name, as the owner index gives it.
    pub command: String,
    /// The delay its socket's delayed ACKs get now: its ACK timeout estimate (TCP_INFO's
    /// `tcpi_ato`) capped, as `tcp_send_delayed_ack` does, at its smoothed round trip or 40 ms,
    /// whichever is longer. `None` before it received data.
    pub ack_timeout: Option<Duration>,
}

/// One connection whose peer is asked for: the sender's PID, its local and remote addresses.
pub type PeerQuery = (u32, SocketAddr, SocketAddr);

/// The peer of each connection asked, in order: found when a process of this host holds it
/// in the sender's namespace, which must be ours; `None` otherwise, or when the tables cannot
/// be read. One socket dump and one walk of the processes' descriptors for all of them.
pub fn local_peers(queries: &[PeerQuery]) -> Vec<Option<LocalPeer>> {
    let ours = |pid: u32| {
        i32::try_from(pid)
            .ok()
            .and_then(|pid| Process::new(pid).ok())
            .is_some_and(|sender| crate::tcp_table::in_our_namespace(Some(&sender)))
    };
    // The peer's end of each connection: (its local, its remote), addresses canonical.
    let wanted: HashMap<(SocketAddr, SocketAddr), usize> = queries
        .iter()
        .enumerate()
        .filter(|(_, (pid, _, _))| ours(*pid))
        .map(|(at, (_, local, remote))| ((canonical(*remote), canonical(*local)), at))
        .collect();
    let mut found: Vec<Option<diag::DiagSocket>> = vec![None; queries.len()];
    if !wanted.is_empty() {
        let mut ports: Vec<u16> = wanted.keys().map(|(peer_local, _)| peer_local.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        let program = port_filter::local_or_remote(&ports);
        let dumped = sock_diag::dump_tcp(HELD_STATES, diag::WITH_TCP_INFO, &program, &mut |message| {
            if let Some(socket) = diag::parse(message)
                && socket.line.inode != 0
                && let Some(&at) = wanted.get(&(canonical(socket.line.local), canonical(socket.line.remote)))
            {
                found[at] = Some(socket);
            }
            Ok(())
        });
        if dumped.is_err() {
            return vec![None; queries.len()];
        }
    }
    let table: Vec<Indexed> = found
        .iter()
        .flatten()
        .map(|socket| Indexed {
            inode: socket.line.inode,
            local: socket.line.local,
            remote: socket.line.remote,
            state: socket.line.state.clone(),
            v6only: false,
        })
        .collect();
    if table.is_empty() {
        return vec![None; queries.len()];
    }
    // Every process's descriptors are walked once, for all the sockets found.
    let Ok(owners) = OwnerIndex::from_table(table, None) else { return vec![None; queries.len()] };
    found
        .iter()
        .map(|socket| {
            let socket = socket.as_ref()?;
            let owner = owners.by_inode(socket.line.inode)?;
            Some(LocalPeer {
                pid: owner.pid,
                command: owner.command.clone(),
                ack_timeout: socket.info.and_then(|info| delayed_ack_delay(info.ato_us, info.rtt_us)),
            })
        })
        .collect()
}

/// What `tcp_send_delayed_ack` makes of an ACK timeout estimate (`ato_us`, 0 before any data):
/// above 40 ms it is capped at the smoothed round trip (`srtt_us`) or 40 ms, the longer.
fn delayed_ack_delay(ato_us: u32, srtt_us: u32) -> Option<Duration> {
    let ato = Duration::from_micros(u64::from(ato_us));
    if ato.is_zero() {
        return None;
    }
    if ato <= DELAYED_ACK_MIN {
        return Some(ato);
    }
    Some(ato.min(Duration::from_micros(u64::from(srtt_us)).max(DELAYED_ACK_MIN)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_ack_timeout_is_capped_at_the_round_trip_or_40_ms() {
        let ms = Duration::from_millis;
        assert_eq!(delayed_ack_delay(0, 50), None);
        assert_eq!(delayed_ack_delay(40_000, 50), Some(ms(40)));
        // Loopback: an estimate grown to 160 ms still fires at 40 ms.
        assert_eq!(delayed_ack_delay(160_000, 50), Some(ms(40)));
        // A 120 ms path lets it grow to its round trip.
        assert_eq!(delayed_ack_delay(200_000, 120_000), Some(ms(120)));
        assert_eq!(delayed_ack_delay(100_000, 300_000), Some(ms(100)));
    }
}
