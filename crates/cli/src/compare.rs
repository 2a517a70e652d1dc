//! `nodelay compare`: targets measured in interleaved rounds, side by side, with a verdict.

use crate::args::CompareArgs;
use crate::exit::Outcome;
use anyhow::{Result, bail};

pub fn compare(args: &CompareArgs) -> Result<Outcome> {
    let _ = args;
    bail!("compare is not built yet")
}
