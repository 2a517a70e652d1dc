//! nodelay's eBPF side: programs the kernel runs at the moment it decides, loaded from an
//! object clang compiled at build time (bpf/, build.rs) by aya.
//!
//! Today: [`CgroupFix`], TCP_NODELAY on every new connection of a cgroup and kept on
//! (`nodelay fix --cgroup`: root, or CAP_BPF with CAP_NET_ADMIN, and a cgroup2 hierarchy);
//! and `HoldWatch`, Nagle holds timed and classed in the kernel per process and ports
//! (`nodelay watch --source ebpf`: root, or CAP_BPF with CAP_PERFMON). The binary runs
//! without eBPF; only these modes need it.
// Only query.rs: one raw bpf(2) call aya does not offer.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cgroup;
#[cfg(not(target_os = "linux"))]
mod elsewhere;
mod error;
#[cfg(target_os = "linux")]
mod fix;
#[cfg(target_os = "linux")]
mod holds;
#[cfg(target_os = "linux")]
mod kfunc;
#[cfg(target_os = "linux")]
mod persist;
#[cfg(target_os = "linux")]
mod query;
#[cfg(target_os = "linux")]
mod refused;

pub use cgroup::{Cgroup, cgroup2_mount_points};
#[cfg(not(target_os = "linux"))]
pub use elsewhere::CgroupFix;
pub use error::EbpfError;
#[cfg(target_os = "linux")]
pub use fix::CgroupFix;
#[cfg(target_os = "linux")]
pub use holds::{HOLD_BUCKETS, HoldStats, HoldThresholds, HoldTotals, HoldWatch};
#[cfg(target_os = "linux")]
pub use persist::{BPFFS, can_persist, pin_directory, undo_persisted};

/// What the programs counted while attached: each a kernel-side counter, never sampled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixCounts {
    /// New connections of the cgroup (accepted or opened) given TCP_NODELAY.
    pub connections_set: u64,
    /// New connections on which the kernel refused the option.
    pub set_refused: u64,
    /// The program's own `setsockopt(TCP_NODELAY, 0)` calls, rewritten to 1.
    pub turn_offs_kept: u64,
}

/// Which of `fix --cgroup`'s programs are in effect on a cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CarriedPrograms {
    /// The sock_ops program that sets TCP_NODELAY on new connections.
    pub sock_ops: bool,
    /// The setsockopt program that keeps it set.
    pub setsockopt: bool,
}
