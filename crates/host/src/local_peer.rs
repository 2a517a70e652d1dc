//! The other end of a connection when it is on this host, in the sender's network namespace:
//! the process that holds it and the delay its delayed ACKs get now. A hold a delayed ACK
//! released was that process's timer: this names it. Read through sock_diag, so only for a
//! sender in watch's own namespace; a peer elsewhere (another host, another namespace) is not
//! looked for.

use crate::sock_diag;
use crate::socket_owner::{HELD_STATES, Indexed, OwnerIndex, canonical};
use crate::socket_survey::{diag, port_filter};
use nodelay_tcp::timers::linux_delayed_ack_delay;
use procfs::process::Process;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

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
                ack_timeout: socket.info.and_then(|info| {
                    let us = |value: u32| Duration::from_micros(u64::from(value));
                    linux_delayed_ack_delay(us(info.ato_us), us(info.rtt_us))
                }),
            })
        })
        .collect()
}
