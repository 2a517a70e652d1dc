//! `nodelay fix --cgroup PATH` and `--pid PID`: nodelay's eBPF programs on a cgroup for as
//! long as fix runs (crates/ebpf), composed with the in-place fix of the sockets its
//! processes have open already (crates/host), which the programs, seeing only new
//! connections, cannot reach. Both last while fix runs: at the end the programs are detached
//! and the open sockets set back.

use anyhow::Result;
use nodelay_ebpf::{Cgroup, CgroupFix, EbpfError};
use nodelay_host::{NodelayChange, Target};
use nodelay_load::usage;
use nodelay_report::{CgroupFixAttached, CgroupFixDetached, Detached};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Which cgroup to fix.
#[derive(Debug, Clone)]
pub enum CgroupTarget {
    /// A cgroup2 directory.
    Path(PathBuf),
    /// The cgroup a process is in.
    OfPid(u32),
}

/// The programs, attached; [`CgroupFixing::run`] keeps them so until the end.
pub struct CgroupFixing {
    fix: CgroupFix,
    attached_at: Instant,
    report: CgroupFixAttached,
    /// The open sockets set in place, to set back at the end.
    changes: Vec<NodelayChange>,
}

/// How often the wait looks for Ctrl-C; detaching waits at most this long after it.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Attaches the programs to the target's cgroup, then sets TCP_NODELAY on the sockets its
/// processes have open. A path that is not a cgroup2 directory, or a PID that is in no cgroup
/// of its own, is a usage error.
pub fn attach_cgroup_fix(target: &CgroupTarget) -> Result<CgroupFixing> {
    let cgroup = match target {
        CgroupTarget::Path(path) => Cgroup::at(path),
        CgroupTarget::OfPid(pid) => Cgroup::of_pid(*pid),
    }
    .map_err(|error| match error {
        EbpfError::NotCgroup2(_)
        | EbpfError::NoSuchProcess(_)
        | EbpfError::RootCgroup(_)
        | EbpfError::OutsideNamespace(_)
        | EbpfError::Io(..) => usage(error.to_string()),
        other => other.into(),
    })?;
    let fix = CgroupFix::attach(cgroup)?;
    let attached_at = Instant::now();
    let processes = fix.cgroup().processes();
    let mut report = CgroupFixAttached {
        cgroup: fix.cgroup().path().display().to_string(),
        processes: processes.len(),
        sockets_set: 0,
        sockets_already_on: 0,
        not_set: Vec::new(),
    };
    let mut changes = Vec::new();
    for pid in processes {
        let Ok(target_pid) = i32::try_from(pid) else { continue };
        match nodelay_host::set_nodelay(Target::Pid(target_pid), false) {
            Ok(change) => {
                report.sockets_set += change.changed.len();
                report.sockets_already_on += change.already_on;
                changes.push(change);
            }
            // Gone since the cgroup was read: nothing of it to set.
            Err(nodelay_host::HostError::NoSuchProcess(_) | nodelay_host::HostError::Exited(_)) => {}
            Err(error) => report.not_set.push(error.to_string()),
        }
    }
    Ok(CgroupFixing { fix, attached_at, report, changes })
}

impl CgroupFixing {
    /// What attaching did.
    pub fn attached(&self) -> &CgroupFixAttached {
        &self.report
    }

    /// Keeps the programs attached for `duration`, or until Ctrl-C
    /// (`nodelay_load::stop`), then detaches them, sets the open sockets back, and says what
    /// the programs counted. A second Ctrl-C, which exits at once, sets the sockets back
    /// first; the programs go with the process.
    pub fn run(self, duration: Option<Duration>) -> Result<CgroupFixDetached> {
        let to_restore = self.changes.clone();
        let restore_all = move || to_restore.iter().for_each(|change| drop(nodelay_host::restore(change)));
        let ended_by = nodelay_load::stop::undoing(restore_all, || wait(self.attached_at, duration));
        let attached_s = self.attached_at.elapsed().as_secs_f64();
        // Detached first: no connection opened from here on gets TCP_NODELAY from the programs.
        let counts = self.fix.detach()?;
        let (mut sockets_restored, mut restore_failed) = (0, Vec::new());
        for change in &self.changes {
            let restored = nodelay_host::restore(change);
            sockets_restored += restored.restored;
            restore_failed.extend(restored.failed);
        }
        Ok(CgroupFixDetached {
            cgroup: self.report.cgroup,
            attached_s,
            ended_by,
            connections_set: counts.connections_set,
            set_refused: counts.set_refused,
            turn_offs_kept: counts.turn_offs_kept,
            sockets_restored,
            restore_failed,
        })
    }
}

/// Waits until `duration` after `since`, or a stop request; says which ended it.
fn wait(since: Instant, duration: Option<Duration>) -> Detached {
    loop {
        if nodelay_load::stop::requested() {
            return Detached::Interrupted;
        }
        let elapsed = since.elapsed();
        match duration {
            Some(limit) if elapsed >= limit => return Detached::DurationRanOut,
            Some(limit) => std::thread::sleep(STOP_POLL.min(limit - elapsed)),
            None => std::thread::sleep(STOP_POLL),
        }
    }
}
