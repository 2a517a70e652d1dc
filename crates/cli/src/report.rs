//! `nodelay report`: saved runs rendered together as one HTML page, or interval logs of many
//! load machines merged (`report merge`).

use crate::args::{ReportArgs, ReportCommand};
use crate::exit::Outcome;
use anyhow::{Result, bail};

pub fn report(args: &ReportArgs) -> Result<Outcome> {
    match &args.merge {
        Some(ReportCommand::Merge(merge)) => crate::merge::merge(merge),
        None => bail!("report is not built yet"),
    }
}
