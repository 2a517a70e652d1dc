//! The models of `nodelay inspect` and `nodelay fix` (a running program's TCP sockets and
//! what setting TCP_NODELAY on them changed). The serde forms are the JSON
//! contract of `schema/inspect.schema.json`: rename nothing, only add.

use nodelay_diagnose::{SocketNodelay, socket_nodelay};
use nodelay_host::{Inspection, NodelayChange, ProcessInfo, SocketView};
use serde::Serialize;

/// The `schema` of an inspect report (`schema/inspect.schema.json`).
pub const INSPECT_SCHEMA_ID: &str = "nodelay-inspect/1";
/// The `schema` of a fix report (`schema/inspect.schema.json`).
pub const FIX_SCHEMA_ID: &str = "nodelay-fix/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
/// The model of `nodelay inspect`: a program's TCP sockets and their options.
pub struct InspectReport {
    /// The schema id, [`INSPECT_SCHEMA_ID`].
    pub schema: &'static str,
    /// What the user named: `PID 4242` or `port 8080`.
    pub target: String,
    /// The processes of the target.
    pub processes: Vec<ProcessInfo>,
    /// One entry per socket (one shared by several processes appears once, under the first).
    pub sockets: Vec<SocketView>,
    /// What the sockets that carry traffic say of TCP_NODELAY, and whether a fix is advised.
    pub nodelay: SocketNodelay,
    /// The processes' cgroups and whether `fix --cgroup`'s programs are in effect there;
    /// empty where no cgroup2 hierarchy could be read.
    pub cgroups: Vec<CgroupPrograms>,
}

/// A cgroup of the inspected processes, and which of nodelay's eBPF programs are in effect on
/// it (attached to it or to a cgroup above it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupPrograms {
    /// The cgroup2 directory.
    pub path: String,
    /// The inspected processes in it.
    pub pids: Vec<i32>,
    /// The sock_ops program that sets TCP_NODELAY on each new connection.
    pub sock_ops: bool,
    /// The setsockopt program that keeps a program from turning it off.
    pub setsockopt: bool,
}

impl InspectReport {
    /// The report of an inspection of `target`, with the processes' cgroups.
    pub fn new(target: String, inspection: Inspection, cgroups: Vec<CgroupPrograms>) -> Self {
        InspectReport {
            schema: INSPECT_SCHEMA_ID,
            target,
            processes: inspection.processes,
            nodelay: socket_nodelay(&inspection.sockets),
            sockets: inspection.sockets,
            cgroups,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
/// The model of `nodelay fix`: the sockets whose TCP_NODELAY was turned on.
pub struct FixReport {
    /// The schema id, [`FIX_SCHEMA_ID`].
    pub schema: &'static str,
    /// What the user named: `PID 4242` or `port 8080`.
    pub target: String,
    /// The processes of the target.
    pub processes: Vec<ProcessInfo>,
    /// Nothing was changed: `changed` lists what would have been.
    pub dry_run: bool,
    /// The sockets whose TCP_NODELAY was off, as they were before the fix.
    pub changed: Vec<SocketView>,
    /// Of the sockets changed, listening sockets: connections they accept afterwards inherit
    /// TCP_NODELAY.
    pub listening_changed: usize,
    /// Sockets that had TCP_NODELAY on already.
    pub already_on: usize,
}

impl FixReport {
    /// The report of a change made (or, dry, planned) on `target`.
    pub fn new(target: String, change: NodelayChange) -> Self {
        FixReport {
            schema: FIX_SCHEMA_ID,
            target,
            listening_changed: change.listening_changed(),
            processes: change.processes,
            dry_run: change.dry_run,
            changed: change.changed,
            already_on: change.already_on,
        }
    }
}
