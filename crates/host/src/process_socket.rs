//! One connection of a known process, found in that process's own network namespace: the
//! kernel names the process that sent (watch's eBPF source), and this finds its socket's
//! descriptor and whether the connection is one it serves (a listener of its namespace
//! accepts on the local port), wherever watch runs: a server in a container or at the far
//! end of a test path is not in watch's namespace, so its sockets are not in watch's table.

use crate::socket_fds::socket_fds;
use crate::socket_owner::canonical;
use crate::table_line::TableLine;
use procfs::net::TcpState;
use procfs::process::Process;
use std::collections::HashMap;
use std::net::SocketAddr;

/// A process's connection, as its namespace's table and its descriptors show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSocket {
    /// The process's name, as the owner index gives it (`comm`, or `argv[0]`'s file name when
    /// `comm` is that name cut short; control characters replaced).
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
    // As the owner index names processes: printable, argv[0]'s name when comm is cut short.
    let (command, _) = crate::socket_owner::command(&process)?;
    let table = crate::tcp_table::read_once(Some(&process)).unwrap_or_default();
    let fds = socket_fds(&process).unwrap_or_default();
    let fd_of = |line: Option<&TableLine>| {
        let inode = line.map(|line| line.inode).filter(|inode| *inode != 0)?;
        fds.iter().find(|(_, held)| *held == inode).map(|(fd, _)| *fd)
    };
    // Indexed once: a busy process's namespace lists thousands of sockets.
    let mut by_tuple: HashMap<(SocketAddr, SocketAddr), &TableLine> = HashMap::new();
    let mut listeners: HashMap<u16, Vec<&TableLine>> = HashMap::new();
    for line in &table {
        if line.state == TcpState::Listen {
            listeners.entry(line.local.port()).or_default().push(line);
        } else {
            // A 4-tuple listed twice (a TIME-WAIT beside the socket reusing it): the held one.
            let kept = by_tuple.entry((canonical(line.local), canonical(line.remote))).or_insert(line);
            if kept.inode == 0 {
                *kept = line;
            }
        }
    }
    let found = connections.iter().map(|&(local, remote)| {
        let connection = by_tuple.get(&(canonical(local), canonical(remote))).copied();
        let listener =
            listeners.get(&local.port()).and_then(|all| all.iter().copied().find(|l| accepts(l, local)));
        ProcessSocket {
            command: command.clone(),
            fd: fd_of(connection),
            serves: listener.is_some(),
            listener_fd: fd_of(listener),
        }
    });
    Some(found.collect())
}

/// A listener on `line` accepts connections to `local` (its address, or any).
fn accepts(line: &TableLine, local: SocketAddr) -> bool {
    line.local.port() == local.port()
        && (line.local.ip().is_unspecified() || canonical(line.local).ip() == canonical(local).ip())
}
