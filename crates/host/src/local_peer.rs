//! The other end of a connection when it is on this host, in the sender's network namespace:
//! the process that holds it and the delayed-ACK timeout its socket uses now (TCP_INFO's
//! `tcpi_ato`, the kernel's `icsk_ack.ato`). A hold a delayed ACK released was that process's
//! timer: this names it. Read through sock_diag, so only for a sender in watch's own
//! namespace; a peer elsewhere (another host, another namespace) is not looked for.

use crate::sock_diag;
use crate::socket_owner::{HELD_STATES, Indexed, OwnerIndex, canonical};
use crate::socket_survey::{diag, port_filter};
use procfs::process::Process;
use std::net::SocketAddr;
use std::time::Duration;

/// The local end of a connection's other side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPeer {
    /// The process that holds the peer's socket.
    pub pid: u32,
    /// Its name, as the owner index gives it.
    pub command: String,
    /// The delayed-ACK timeout the peer's socket would use now (Linux's starts at 40 ms and
    /// grows up to 200 ms); `None` before it received data.
    pub ack_timeout: Option<Duration>,
}

/// The peer of `sender_pid`'s connection from `local` to `remote`, when a process of this
/// host holds it in the sender's namespace, which must be ours; `None` otherwise, or when the
/// tables cannot be read.
pub fn local_peer(sender_pid: u32, local: SocketAddr, remote: SocketAddr) -> Option<LocalPeer> {
    let sender = Process::new(i32::try_from(sender_pid).ok()?).ok()?;
    if !crate::tcp_table::in_our_namespace(Some(&sender)) {
        return None;
    }
    let (local, remote) = (canonical(local), canonical(remote));
    let mut found = None;
    let program = port_filter::local_or_remote(&[remote.port()]);
    sock_diag::dump_tcp(HELD_STATES, diag::WITH_TCP_INFO, &program, &mut |message| {
        if let Some(socket) = diag::parse(message)
            && canonical(socket.line.local) == remote
            && canonical(socket.line.remote) == local
            && socket.line.inode != 0
        {
            found = Some(socket);
        }
        Ok(())
    })
    .ok()?;
    let socket = found?;
    let indexed = Indexed {
        inode: socket.line.inode,
        local: socket.line.local,
        remote: socket.line.remote,
        state: socket.line.state.clone(),
        v6only: false,
    };
    // Every process's descriptors are walked for this one socket: once per finding.
    let owners = OwnerIndex::from_table(vec![indexed], None).ok()?;
    let owner = owners.by_inode(socket.line.inode)?;
    let ack_timeout = socket.info.map(|info| info.ato_us).filter(|&us| us > 0);
    Some(LocalPeer {
        pid: owner.pid,
        command: owner.command.clone(),
        ack_timeout: ack_timeout.map(|us| Duration::from_micros(u64::from(us))),
    })
}
