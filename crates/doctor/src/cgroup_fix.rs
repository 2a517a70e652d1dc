//! `nodelay fix --cgroup PATH` and `--pid PID`: nodelay's eBPF programs on a cgroup for as
//! long as fix runs (crates/ebpf), composed with the in-place fix of the sockets its
//! processes have open already (crates/host), which the programs, seeing only new
//! connections, cannot reach. Both last while fix runs: at the end, on every path out (the
//! duration, Ctrl-C, a second Ctrl-C that exits at once, an error), the programs are detached
//! first and then the open sockets set back; in that order, since the setsockopt program
//! would otherwise turn nodelay's own `setsockopt(TCP_NODELAY, 0)` back into 1.

use anyhow::Result;
use nodelay_ebpf::{Cgroup, CgroupFix, EbpfError, FixCounts};
use nodelay_host::{NodelayChange, Target};
use nodelay_load::usage;
use nodelay_report::{CgroupFixAttached, CgroupFixDetached, CgroupFixPersisted, CgroupFixUndone, Detached};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Which cgroup to fix.
#[derive(Debug, Clone)]
pub enum CgroupTarget {
    /// A cgroup2 directory.
    Path(PathBuf),
    /// The cgroup a process is in.
    OfPid(u32),
}

/// How often the wait looks for Ctrl-C; detaching waits at most this long after it.
const STOP_POLL: Duration = Duration::from_millis(50);

/// What is attached and changed, shared with the undo a second Ctrl-C runs.
#[derive(Default)]
struct Applied {
    fix: Option<CgroupFix>,
    changes: Vec<NodelayChange>,
}

/// What undoing did: the programs' counts, and the open sockets set back.
struct Undone {
    counts: Result<FixCounts, EbpfError>,
    sockets_restored: usize,
    restore_failed: Vec<String>,
}

impl Applied {
    /// Detaches the programs, then sets the open sockets back; a second call does nothing.
    fn undo(&mut self) -> Undone {
        let counts = self.fix.take().map_or(Ok(FixCounts::default()), CgroupFix::detach);
        let (mut sockets_restored, mut restore_failed) = (0, Vec::new());
        for change in self.changes.drain(..) {
            let restored = nodelay_host::restore(&change);
            sockets_restored += restored.restored;
            restore_failed.extend(restored.failed);
        }
        Undone { counts, sockets_restored, restore_failed }
    }
}

fn lock(applied: &Mutex<Applied>) -> MutexGuard<'_, Applied> {
    applied.lock().unwrap_or_else(|e| e.into_inner())
}

/// Attaches the programs to the target's cgroup, sets TCP_NODELAY on the sockets its
/// processes have open, tells `attached` what it did, keeps it so for `duration` or until
/// Ctrl-C (`nodelay_load::stop`), then undoes it all and says what the programs counted. A
/// path that is not a cgroup2 directory, or a PID in no cgroup of its own, is a usage error.
pub fn fix_cgroup(
    target: &CgroupTarget,
    duration: Option<Duration>,
    attached: &mut dyn FnMut(&CgroupFixAttached) -> Result<()>,
) -> Result<CgroupFixDetached> {
    let cgroup = cgroup_of(target)?;
    let fix = CgroupFix::attach(cgroup)?;
    let attached_at = Instant::now();
    let cgroup = fix.cgroup().clone();
    let applied = Arc::new(Mutex::new(Applied { fix: Some(fix), changes: Vec::new() }));
    let for_undo = applied.clone();
    let undo = move || drop(lock(&for_undo).undo());
    let outcome: Result<Detached> = nodelay_load::stop::undoing(undo, || {
        let report = set_open_sockets(&cgroup, &applied);
        attached(&report)?;
        Ok(wait(attached_at, duration))
    });
    let attached_s = attached_at.elapsed().as_secs_f64();
    // Undone whether the wait ended or an error (a closed stdout) cut it short.
    let undone = lock(&applied).undo();
    let ended_by = outcome?;
    let counts = undone.counts?;
    Ok(CgroupFixDetached {
        cgroup: cgroup.path().display().to_string(),
        attached_s,
        ended_by,
        connections_set: counts.connections_set,
        set_refused: counts.set_refused,
        turn_offs_kept: counts.turn_offs_kept,
        sockets_restored: undone.sockets_restored,
        restore_failed: undone.restore_failed,
    })
}

/// The target's cgroup; a path that is not a cgroup2 directory, or a PID in no cgroup of its
/// own, is a usage error.
fn cgroup_of(target: &CgroupTarget) -> Result<Cgroup> {
    match target {
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
    })
}

/// Attaches the programs to the target's cgroup and pins them, so they stay attached after
/// fix ends, then sets TCP_NODELAY on the sockets its processes have open (not set back:
/// the fix persists) and tells `attached`. A failed pin detaches the programs again.
pub fn persist_cgroup_fix(
    target: &CgroupTarget,
    attached: &mut dyn FnMut(&CgroupFixAttached) -> Result<()>,
) -> Result<CgroupFixPersisted> {
    let cgroup = cgroup_of(target)?;
    nodelay_ebpf::can_persist(&cgroup)?;
    let fix = CgroupFix::attach(cgroup.clone())?;
    let pinned_in = fix.persist()?;
    let report = set_open_sockets(&cgroup, &Mutex::new(Applied::default()));
    attached(&report)?;
    Ok(CgroupFixPersisted {
        cgroup: cgroup.path().display().to_string(),
        pinned_in: pinned_in.display().to_string(),
    })
}

/// Undoes a persisted fix of the target's cgroup: the pins removed (the kernel detaches the
/// programs), with what they counted meanwhile. Nothing pinned for it is an error that says
/// where it looked.
pub fn undo_cgroup_fix(target: &CgroupTarget) -> Result<CgroupFixUndone> {
    let cgroup = cgroup_of(target)?;
    let pinned_in = nodelay_ebpf::pin_directory(&cgroup)?;
    let counts = nodelay_ebpf::undo_persisted(&cgroup)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no persisted fix of {}: nothing is pinned in {}",
            cgroup.path().display(),
            pinned_in.display()
        )
    })?;
    Ok(CgroupFixUndone {
        cgroup: cgroup.path().display().to_string(),
        pinned_in: pinned_in.display().to_string(),
        connections_set: counts.connections_set,
        set_refused: counts.set_refused,
        turn_offs_kept: counts.turn_offs_kept,
    })
}

/// Sets TCP_NODELAY on the open sockets of every process of `cgroup`, each change kept in
/// `applied` as it is made (a second Ctrl-C meanwhile sets back what was set so far).
fn set_open_sockets(cgroup: &Cgroup, applied: &Mutex<Applied>) -> CgroupFixAttached {
    let processes = cgroup.processes();
    let mut report = CgroupFixAttached {
        cgroup: cgroup.path().display().to_string(),
        processes: processes.len(),
        sockets_set: 0,
        sockets_already_on: 0,
        not_set: Vec::new(),
    };
    for pid in processes {
        let Ok(target_pid) = i32::try_from(pid) else { continue };
        match nodelay_host::set_nodelay(Target::Pid(target_pid), false) {
            Ok(change) => {
                report.sockets_set += change.changed.len();
                report.sockets_already_on += change.already_on;
                lock(applied).changes.push(change);
            }
            // Gone since the cgroup was read: nothing of it to set.
            Err(nodelay_host::HostError::NoSuchProcess(_) | nodelay_host::HostError::Exited(_)) => {}
            Err(error) => report.not_set.push(error.to_string()),
        }
    }
    report
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
