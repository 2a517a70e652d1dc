//! Attribution: which local process and descriptor hold a stalled connection's socket,
//! through the host crate's [`OwnerIndex`] (sock_diag's 4-tuples to inodes, /proc/PID/fd's
//! inodes to processes). The index is a snapshot, scanned again when a stalled connection is
//! not in it: at most every [`RESCAN_AFTER`], and never more than 5 % of the time (a scan of
//! 10 000 sockets takes 66-100 ms, one readlink per descriptor: then every 1.3-2 s at most). A connection still missing from a
//! scan taken after its stall is one whose socket closed meanwhile, or that lives in another
//! network namespace.

use crate::event::Process;
use nodelay_host::socket_owner::OwnerIndex;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The shortest time between two scans: a short-lived client that stalled is still there.
pub const RESCAN_AFTER: Duration = Duration::from_millis(100);
/// Scans take at most 1/20 of the time: the next waits 20 times the last one's cost.
const SCAN_COST_SHARE: u32 = 20;

/// Where attribution looks sockets up (the host's index, or a test's table).
pub trait Owners {
    /// The process holding the socket from `local` to `remote`; for a server's socket
    /// closed since, the process listening on `local` when `or_listener`.
    fn owner(&self, local: SocketAddr, remote: SocketAddr, or_listener: bool) -> Option<Process>;
    /// Scans again unless the last scan is too recent ([`RESCAN_AFTER`], or 20 times its
    /// cost); whether it did.
    fn rescan(&mut self, now: Instant) -> bool;
    /// When the index was last scanned.
    fn scanned_at(&self) -> Option<Instant>;
    /// A local listening socket accepts connections to `end`: the end is a server's,
    /// whatever the capture saw first.
    fn serves(&self, end: SocketAddr) -> bool;
}

/// The host's sockets and processes.
#[derive(Debug, Default)]
pub struct HostOwners {
    index: OwnerIndex,
    scanned_at: Option<Instant>,
    scan_cost: Duration,
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
}

impl Owners for HostOwners {
    fn owner(&self, local: SocketAddr, remote: SocketAddr, or_listener: bool) -> Option<Process> {
        let owner = self.index.owner(local, remote);
        let owner = owner.or_else(|| or_listener.then(|| self.index.listener_for(local)).flatten())?;
        Some(Process { pid: owner.pid, command: owner.command.clone(), fd: Some(owner.fd) })
    }

    fn rescan(&mut self, now: Instant) -> bool {
        let wait = RESCAN_AFTER.max(self.scan_cost * SCAN_COST_SHARE);
        if self.scanned_at.is_some_and(|at| now.saturating_duration_since(at) < wait) {
            return false;
        }
        let started = Instant::now();
        self.scanned_at = Some(started.max(now));
        let scanned = OwnerIndex::scan();
        self.scan_cost = started.elapsed();
        match scanned {
            Ok(index) => {
                self.index = index;
                self.last_error = None;
            }
            Err(error) => self.last_error = Some(error.to_string()),
        }
        true
    }

    fn scanned_at(&self) -> Option<Instant> {
        self.scanned_at
    }

    fn serves(&self, end: SocketAddr) -> bool {
        self.index.listener_for(end).is_some()
    }
}
