//! What `nodelay fix --cgroup` did: the programs attached and the sockets open then set, and
//! at the end what the programs counted while attached; or, persisted, where they are pinned,
//! and once undone what they counted meanwhile.

/// The moment the programs are attached, and the in-place fix of the sockets already open.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupFixAttached {
    /// The cgroup2 directory.
    pub cgroup: String,
    /// The processes in it (and below it) when attached.
    pub processes: usize,
    /// Their open sockets given TCP_NODELAY now (the programs only see new connections).
    pub sockets_set: usize,
    /// Their open sockets that had it already.
    pub sockets_already_on: usize,
    /// Processes whose sockets could not be set, one reason each.
    pub not_set: Vec<String>,
}

/// What the programs counted, once detached.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupFixDetached {
    /// The cgroup2 directory.
    pub cgroup: String,
    /// How long the programs were attached.
    pub attached_s: f64,
    /// Why they were detached.
    pub ended_by: Detached,
    /// New connections given TCP_NODELAY.
    pub connections_set: u64,
    /// New connections on which the kernel refused it.
    pub set_refused: u64,
    /// The programs' own `setsockopt(TCP_NODELAY, 0)` calls kept from turning it off.
    pub turn_offs_kept: u64,
    /// Open sockets set at attach, set back to TCP_NODELAY off.
    pub sockets_restored: usize,
    /// Those that could not be set back, one reason each.
    pub restore_failed: Vec<String>,
}

/// What ended `fix --cgroup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detached {
    /// The duration asked for ran out.
    DurationRanOut,
    /// Ctrl-C, SIGTERM or SIGHUP.
    Interrupted,
}

/// The programs pinned, to stay attached after fix ends.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupFixPersisted {
    /// The cgroup2 directory.
    pub cgroup: String,
    /// The bpffs directory they are pinned in.
    pub pinned_in: String,
}

/// A persisted fix undone: the pins removed, the programs detached.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupFixUndone {
    /// The cgroup2 directory.
    pub cgroup: String,
    /// The bpffs directory the pins were removed from.
    pub pinned_in: String,
    /// New connections given TCP_NODELAY while persisted.
    pub connections_set: u64,
    /// New connections on which the kernel refused it.
    pub set_refused: u64,
    /// The programs' own `setsockopt(TCP_NODELAY, 0)` calls kept from turning it off.
    pub turn_offs_kept: u64,
}
