//! `nodelay inspect` and `nodelay fix`: a running program's TCP sockets, read and changed
//! through copies of its descriptors (crates/host).

use crate::args::{FixArgs, SocketsArgs};
use crate::exit::Outcome;
use crate::output;
use crate::runner::text_width;
use anyhow::Result;
use nodelay_report::{FittedText, FixReport, InspectReport, Json, Render};

pub fn inspect(args: &SocketsArgs) -> Result<Outcome> {
    let report = InspectReport::new(args.target.to_string(), nodelay_host::inspect(args.target)?);
    print(args.json, &report)
}

pub fn fix(args: &FixArgs) -> Result<Outcome> {
    let target = args.sockets.target;
    let report = FixReport::new(target.to_string(), nodelay_host::set_nodelay(target, args.dry_run)?);
    print(args.sockets.json, &report)
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
