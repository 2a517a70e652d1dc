//! This machine's processes and their TCP sockets, for `nodelay inspect`, `nodelay fix`,
//! `exec`'s fallback and `doctor --try-fix`: which process owns a local port (the socket's
//! inode in the TCP socket table, found again in /proc/PID/fd), copies of its socket descriptors
//! (`pidfd_open` + `pidfd_getfd`, Linux ≥ 5.6), and their TCP_NODELAY, TCP_CORK and TCP_INFO.
//!
//! A copy taken with `pidfd_getfd` is the same socket as the process's own descriptor, so an
//! option set on it is set for the process, and connections a listening socket accepts later
//! inherit TCP_NODELAY from it. Copies are closed as soon as they have been read or set: a
//! copy held open would keep a connection alive after the process closed it.
//! [`check_new_connection`] tells whether a fix holds: a program may turn TCP_NODELAY off
//! again on each connection it accepts, which no listener's setting can prevent.
//!
//! [`ServerWatch`] reads the server's side of a run from /proc: CPU, threads on and off a
//! CPU, the upstream connections it opened, and the machine's CPU pressure.
//!
//! Linux only: elsewhere every call returns [`HostError::Unsupported`].

#![warn(missing_docs)]

mod error;
mod local_ports;
mod maps;
mod server_view;
mod target;
mod types;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod local_peer;
#[cfg(target_os = "linux")]
mod new_connection;
#[cfg(target_os = "linux")]
mod other_namespace;
#[cfg(target_os = "linux")]
mod pidfd;
#[cfg(target_os = "linux")]
mod process_socket;
#[cfg(target_os = "linux")]
mod sock_diag;
#[cfg(target_os = "linux")]
mod socket_fds;
#[cfg(target_os = "linux")]
pub mod socket_owner;
#[cfg(target_os = "linux")]
pub mod socket_survey;
#[cfg(target_os = "linux")]
mod table_line;
#[cfg(target_os = "linux")]
mod tcp_table;
#[cfg(target_os = "linux")]
mod watch;

pub use error::HostError;
pub use local_ports::{LocalPorts, local_ports, port_range as local_port_range};
pub use maps::linked_libraries;
pub use server_view::{CpuPressure, ListenQueueView, ServerView, ThreadLoad, Upstream};
pub use target::Target;
pub use types::{
    Inspection, NewConnection, NodelayChange, ProcessInfo, Restored, SamplerPace, SocketState, SocketView,
    WithNewConnection,
};

#[cfg(target_os = "linux")]
pub use linux::{force_nodelay, inspect, restore, set_nodelay};
#[cfg(target_os = "linux")]
pub use local_peer::{LocalPeer, PeerQuery, local_peers};
#[cfg(target_os = "linux")]
pub use new_connection::{check_new_connection, listens_on};
#[cfg(target_os = "linux")]
pub use process_socket::{ProcessSocket, process_sockets};
#[cfg(target_os = "linux")]
pub use watch::ServerWatch;

/// Entry points for the fuzz targets (`fuzz/fuzz_targets/socket_table.rs`), not an API: the
/// two parsers of the kernel's socket table, over bytes the kernel would never send.
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing {
    /// One receive of a sock_diag dump answering request `sequence`: how many sockets it
    /// lists and whether the dump ended, or the error that names what was malformed.
    pub fn sock_diag_receive(bytes: &[u8], sequence: u32) -> std::io::Result<(usize, bool)> {
        let mut lines = Vec::new();
        let ended = crate::sock_diag::parse_messages(bytes, sequence, &mut lines)?;
        Ok((lines.len(), ended))
    }

    /// The `Tcp:` ActiveOpens and PassiveOpens of a /proc/net/snmp text, when it has both.
    pub fn snmp_tcp_opens(text: &[u8]) -> Option<(u64, u64)> {
        crate::watch::tcp_opens::opens(text).map(|opens| (opens.active, opens.passive))
    }

    /// One line of /proc/net/tcp or tcp6: (local, remote, inode) when it reads as one.
    pub fn proc_tcp_line(line: &str) -> Option<(std::net::SocketAddr, std::net::SocketAddr, u64)> {
        crate::tcp_table::parse_line(line, 100).map(|line| (line.local, line.remote, line.inode))
    }
}

#[cfg(not(target_os = "linux"))]
mod elsewhere;
#[cfg(not(target_os = "linux"))]
pub use elsewhere::{
    ServerWatch, check_new_connection, force_nodelay, inspect, listens_on, restore, set_nodelay,
};
