//! The models of `nodelay inspect` and `nodelay fix` (a running program's TCP sockets and
//! what setting TCP_NODELAY on them changed). The serde forms are the JSON
//! contract of `schema/inspect.schema.json`: rename nothing, only add.

use nodelay_host::{Inspection, NodelayChange, ProcessInfo, SocketView};
use serde::Serialize;

pub const INSPECT_SCHEMA_ID: &str = "nodelay-inspect/1";
pub const FIX_SCHEMA_ID: &str = "nodelay-fix/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectReport {
    pub schema: &'static str,
    /// What the user named: `PID 4242` or `port 8080`.
    pub target: String,
    pub processes: Vec<ProcessInfo>,
    pub sockets: Vec<SocketView>,
}

impl InspectReport {
    pub fn new(target: String, inspection: Inspection) -> Self {
        InspectReport {
            schema: INSPECT_SCHEMA_ID,
            target,
            processes: inspection.processes,
            sockets: inspection.sockets,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixReport {
    pub schema: &'static str,
    pub target: String,
    pub processes: Vec<ProcessInfo>,
    /// Nothing was changed: `changed` lists what would have been.
    pub dry_run: bool,
    /// The sockets whose TCP_NODELAY was off, as they were before the fix.
    pub changed: Vec<SocketView>,
    pub listening_changed: usize,
    pub already_on: usize,
}

impl FixReport {
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
