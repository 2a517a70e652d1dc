//! Why an eBPF mode cannot run, each in one line a user can act on.

use std::path::{Path, PathBuf};

/// An eBPF mode that could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum EbpfError {
    /// The build had no clang, so it carries no programs.
    #[error(
        "this nodelay was built without its eBPF programs (clang or libbpf's headers were missing): run scripts/setup.sh, then rebuild"
    )]
    NotBuilt,
    /// eBPF needs Linux.
    #[error("eBPF programs need Linux")]
    Unsupported,
    /// The path is not a directory of a cgroup2 hierarchy.
    #[error(
        "{}: not a cgroup2 directory (it has no cgroup.controllers; cgroup v1 cannot carry these programs)",
        shown(.0)
    )]
    NotCgroup2(PathBuf),
    /// No cgroup2 hierarchy is mounted, so no process's cgroup can be found.
    #[error("no cgroup2 hierarchy is mounted (mount -t cgroup2 none DIR mounts one)")]
    NoCgroup2Mount,
    /// The process does not exist (or its cgroup cannot be read).
    #[error("PID {0}: no such process")]
    NoSuchProcess(u32),
    /// The process sits in the root cgroup: its cgroup is the whole machine.
    #[error(
        "PID {0} is in the root cgroup: that would change every process on this machine; give the root's path to mean that"
    )]
    RootCgroup(u32),
    /// The process's cgroup is outside this process's cgroup namespace.
    #[error(
        "PID {0}'s cgroup is outside this process's cgroup namespace: give the cgroup's path as the host sees it"
    )]
    OutsideNamespace(u32),
    /// The kernel is older than the programs need.
    #[error("this kernel ({0}) is too old: setting TCP_NODELAY from eBPF needs Linux 6.1 or later")]
    KernelTooOld(String),
    /// Loading or attaching was refused for want of privilege.
    #[error("loading eBPF programs needs root, or CAP_BPF with {needs} ({reason})")]
    Permission {
        /// The capability needed besides CAP_BPF: CAP_NET_ADMIN for a cgroup's programs,
        /// CAP_PERFMON for tracepoints'.
        needs: &'static str,
        /// What the kernel said.
        reason: String,
    },
    /// `--persist` and `--undo` need bpffs.
    #[error(
        "bpffs is not mounted at /sys/fs/bpf, where a persisted fix is pinned (mount -t bpf bpf /sys/fs/bpf)"
    )]
    NoBpffs,
    /// The cgroup's programs are pinned already.
    #[error("{}: a persisted fix is pinned here already; undo it first", shown(.0))]
    AlreadyPersisted(PathBuf),
    /// The kernel refused something else.
    #[error("the kernel refused the eBPF programs: {0}")]
    Kernel(String),
    /// Reading a file of /proc or the cgroup failed.
    #[error("{}: {}", shown(.0), .1)]
    Io(PathBuf, std::io::Error),
}

/// A path as the user can read it in one line: control characters (a newline, an escape
/// sequence) escaped, not echoed to the terminal.
fn shown(path: &Path) -> String {
    path.to_string_lossy().escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_control_characters_is_one_line_escaped() {
        let error = EbpfError::NotCgroup2(PathBuf::from("/sys/fs/cgroup/a\nb\u{1b}[31m"));
        let line = error.to_string();
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.starts_with("/sys/fs/cgroup/a\\nb\\u{1b}[31m: not a cgroup2"), "{line}");
    }
}
