//! Attribution: which local process and descriptor hold a stalled connection's socket,
//! through the host crate's [`OwnerIndex`] (sock_diag's 4-tuples to inodes, /proc/PID/fd's
//! inodes to processes). The index is a snapshot: it is scanned again at most once a
//! second ([`RESCAN_AFTER`]), when a connection is not in it; a connection still missing
//! then is one whose socket closed before the scan, or that lives in another network
//! namespace.

use crate::event::Process;
use nodelay_host::socket_owner::OwnerIndex;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The shortest time between two scans: a scan of 10 000 sockets takes ~25 ms.
pub const RESCAN_AFTER: Duration = Duration::from_secs(1);

/// Where attribution looks sockets up (the host's index, or a test's table).
pub trait Owners {
    /// The process holding the socket from `local` to `remote`; for a server's socket
    /// closed since, the process listening on `local` when `or_listener`.
    fn owner(&self, local: SocketAddr, remote: SocketAddr, or_listener: bool) -> Option<Process>;
    /// Scans again unless the last scan is less than [`RESCAN_AFTER`] old; whether it did.
    fn rescan(&mut self, now: Instant) -> bool;
}

/// The host's sockets and processes.
#[derive(Debug, Default)]
pub struct HostOwners {
    index: OwnerIndex,
    scanned_at: Option<Instant>,
    /// Why the last scan failed, if it did (the index is then the one before).
    pub last_error: Option<String>,
}

impl HostOwners {
    /// An index scanned now.
    pub fn scan_now() -> Self {
        let mut owners = HostOwners::default();
        owners.rescan(Instant::now());
        owners
    }

    /// The PIDs' local ports: every TCP port it listens on or is connected from.
    pub fn index(&self) -> &OwnerIndex {
        &self.index
    }
}

impl Owners for HostOwners {
    fn owner(&self, local: SocketAddr, remote: SocketAddr, or_listener: bool) -> Option<Process> {
        let owner = self.index.owner(local, remote);
        let owner = owner.or_else(|| or_listener.then(|| self.index.listener_for(local)).flatten())?;
        Some(Process { pid: owner.pid, command: owner.command.clone(), fd: owner.fd })
    }

    fn rescan(&mut self, now: Instant) -> bool {
        if self.scanned_at.is_some_and(|at| now.duration_since(at) < RESCAN_AFTER) {
            return false;
        }
        self.scanned_at = Some(now);
        match OwnerIndex::scan() {
            Ok(index) => {
                self.index = index;
                self.last_error = None;
            }
            Err(error) => self.last_error = Some(error.to_string()),
        }
        true
    }
}
