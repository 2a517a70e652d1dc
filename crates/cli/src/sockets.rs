//! `nodelay inspect` and `nodelay fix`: a running program's TCP sockets, read and changed
//! through copies of its descriptors (crates/host; fix's check of a new connection in
//! crates/doctor).

use crate::args::{FixArgs, SocketsArgs};
use crate::exit::Outcome;
use crate::output;
use crate::runner::text_width;
use anyhow::Result;
use nodelay_report::{FittedText, InspectReport, Json, Render};

pub fn inspect(args: &SocketsArgs) -> Result<Outcome> {
    let report = InspectReport::new(args.target.to_string(), nodelay_host::inspect(args.target)?);
    print(args.json, &report)
}

pub fn fix(args: &FixArgs) -> Result<Outcome> {
    let fixed = nodelay_doctor::fix(args.sockets.target, args.dry_run)?;
    output::stdout(&if args.sockets.json {
        Json.render(fixed.report())
    } else {
        FittedText::new(text_width()).render(fixed.report())
    })?;
    // 3, as a finding: set, but the program turns TCP_NODELAY off on each new connection.
    Ok(if fixed.holds() { Outcome::Success } else { Outcome::Findings })
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
