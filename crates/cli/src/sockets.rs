//! `nodelay inspect` and `nodelay fix`: a running program's TCP sockets, read and changed
//! through copies of its descriptors (crates/host; fix's check of a new connection in
//! crates/doctor), and a cgroup's new connections through eBPF (crates/ebpf).

use crate::args::{FixArgs, SocketsArgs};
use crate::exit::Outcome;
use crate::output;
use crate::runner::text_width;
use anyhow::Result;
use nodelay_doctor::CgroupTarget;
use nodelay_report::{FittedText, Json, Render};

pub fn inspect(args: &SocketsArgs) -> Result<Outcome> {
    print(args.json, &nodelay_doctor::inspect(args.target)?)
}

pub fn fix(args: &FixArgs) -> Result<Outcome> {
    let Some(target) = args.target else { return fix_cgroup(args) };
    let fixed = nodelay_doctor::fix(target, args.dry_run)?;
    output::stdout(&if args.json {
        Json.render(fixed.report())
    } else {
        FittedText::new(text_width()).render(fixed.report())
    })?;
    // 3, as a finding: set, but the program turns TCP_NODELAY off on each new connection.
    Ok(if fixed.holds() { Outcome::Success } else { Outcome::Findings })
}

/// `fix --cgroup PATH` or `--pid PID`: attached, said so at once, kept until -d or Ctrl-C;
/// or pinned to stay (`--persist`), or a pinned fix undone (`--undo`).
fn fix_cgroup(args: &FixArgs) -> Result<Outcome> {
    let target = match (&args.cgroup, args.pid) {
        (Some(path), _) => CgroupTarget::Path(path.clone()),
        (None, Some(pid)) => CgroupTarget::OfPid(pid),
        // clap requires PID|:PORT, --cgroup or --pid: this is never reached.
        (None, None) => return Err(nodelay_load::usage("fix: PID|:PORT, --cgroup or --pid is needed")),
    };
    let text = FittedText::new(text_width());
    if args.undo {
        let undone = nodelay_doctor::undo_cgroup_fix(&target)?;
        output::stdout(&text.render(&undone))?;
        return Ok(Outcome::Success);
    }
    if args.persist {
        let persisted = nodelay_doctor::persist_cgroup_fix(&target, &mut |attached| {
            output::stdout(&text.render(attached))
        })?;
        output::stdout(&text.render(&persisted))?;
        output::stdout(&format!("undo: nodelay fix --undo --cgroup {}\n", persisted.cgroup))?;
        return Ok(Outcome::Success);
    }
    crate::interrupt::install();
    let detached = nodelay_doctor::fix_cgroup(&target, args.duration, &mut |attached| {
        output::stdout(&text.render(attached))
    })?;
    output::stdout(&text.render(&detached))?;
    if detached.set_refused > 0 {
        return Err(anyhow::anyhow!(
            "the kernel refused TCP_NODELAY on {} new connections of {}",
            detached.set_refused,
            detached.cgroup
        ));
    }
    Ok(Outcome::Success)
}

fn print<R>(json: bool, report: &R) -> Result<Outcome>
where
    Json: Render<R>,
    FittedText: Render<R>,
{
    let text = if json { Json.render(report) } else { FittedText::new(text_width()).render(report) };
    output::stdout(&text)?;
    Ok(Outcome::Success)
}
