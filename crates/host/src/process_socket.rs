//! One connection of a known process, found in that process's own network namespace: the
//! kernel names the process that sent (watch's eBPF source), and this finds its socket's
//! descriptor and whether the connection is one it serves (a listener of its namespace
//! accepts on the local port), wherever watch runs: a server in a container or at the far
//! end of a test path is not in watch's namespace, so its sockets are not in watch's table.

use crate::socket_fds::socket_fds;
use crate::table_line::TableLine;
use procfs::net::TcpState;
use procfs::process::Process;
use std::net::SocketAddr;

/// A process's connection, as its namespace's table and its descriptors show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSocket {
    /// The process's command name (`/proc/PID/comm`).
    pub command: String,
    /// The socket's descriptor; `None` once the connection closed (or the descriptors may not
    /// be read).
    pub fd: Option<i32>,
    /// A listening socket of the process's namespace accepts on the connection's local
    /// address: the process is the connection's server.
    pub serves: bool,
    /// That listener's descriptor in the process, when it holds it.
    pub listener_fd: Option<i32>,
}

/// `pid`'s connections, one for each (local, remote) asked, in order: its namespace's table
/// and its descriptors are read once for all of them. `None` when the process is gone or may
/// not be read.
pub fn process_sockets(pid: u32, connections: &[(SocketAddr, SocketAddr)]) -> Option<Vec<ProcessSocket>> {
    let process = Process::new(i32::try_from(pid).ok()?).ok()?;
    let command = process.stat().ok()?.comm;
    let table = crate::tcp_table::read_once(Some(&process)).unwrap_or_default();
    let fds = socket_fds(&process).unwrap_or_default();
    let fd_of = |line: Option<&TableLine>| {
        let inode = line.map(|line| line.inode).filter(|inode| *inode != 0)?;
        fds.iter().find(|(_, held)| *held == inode).map(|(fd, _)| *fd)
    };
    let found = connections.iter().map(|&(local, remote)| {
        let connection = table.iter().find(|line| {
            line.state != TcpState::Listen && same(line.local, local) && same(line.remote, remote)
        });
        let listener = table.iter().find(|line| line.state == TcpState::Listen && accepts(line, local));
        ProcessSocket {
            command: command.clone(),
            fd: fd_of(connection),
            serves: listener.is_some(),
            listener_fd: fd_of(listener),
        }
    });
    Some(found.collect())
}

/// The same address, an IPv4-mapped IPv6 one as the IPv4 it carries.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// A listener on `line` accepts connections to `local` (its address, or any).
fn accepts(line: &TableLine, local: SocketAddr) -> bool {
    line.local.port() == local.port()
        && (line.local.ip().is_unspecified() || line.local.ip().to_canonical() == local.ip().to_canonical())
}
