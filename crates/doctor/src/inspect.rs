//! `nodelay inspect`: a running program's TCP sockets (crates/host), and whether the cgroups
//! its processes are in carry `fix --cgroup`'s programs (crates/ebpf).

use anyhow::Result;
use nodelay_ebpf::Cgroup;
use nodelay_host::{ProcessInfo, Target};
use nodelay_report::{CgroupPrograms, InspectReport};

/// Reads the target's sockets and its processes' cgroups.
pub fn inspect(target: Target) -> Result<InspectReport> {
    let inspection = nodelay_host::inspect(target)?;
    let cgroups = cgroups_of(&inspection.processes);
    Ok(InspectReport::new(target.to_string(), inspection, cgroups))
}

/// Each cgroup of `processes` once, with which of nodelay's programs are in effect there. A
/// cgroup that cannot be read or queried (no cgroup2 hierarchy, no privilege to query) is
/// left out: unknown, not "none".
fn cgroups_of(processes: &[ProcessInfo]) -> Vec<CgroupPrograms> {
    let mut cgroups: Vec<(Cgroup, Vec<i32>)> = Vec::new();
    for process in processes {
        let Ok(cgroup) = u32::try_from(process.pid)
            .map_err(|_| ())
            .and_then(|pid| Cgroup::containing(pid).map_err(|_| ()))
        else {
            continue;
        };
        match cgroups.iter_mut().find(|(known, _)| *known == cgroup) {
            Some((_, pids)) => pids.push(process.pid),
            None => cgroups.push((cgroup, vec![process.pid])),
        }
    }
    cgroups
        .into_iter()
        .filter_map(|(cgroup, pids)| {
            let carried = cgroup.nodelay_programs().ok()?;
            Some(CgroupPrograms {
                path: cgroup.path().display().to_string(),
                pids,
                sock_ops: carried.sock_ops,
                setsockopt: carried.setsockopt,
            })
        })
        .collect()
}
