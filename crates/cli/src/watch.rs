//! `nodelay watch`: the library's events rendered on stdout as they come.

use crate::exit::{Outcome, usage};
use nodelay_watch::{Console, WatchError};
use std::io::IsTerminal;

pub fn watch(args: &nodelay_watch::WatchArgs) -> anyhow::Result<Outcome> {
    crate::interrupt::install();
    // Not a terminal: whole lines, so that grep gets a finding and its next command.
    let width = || if std::io::stdout().is_terminal() { crate::runner::text_width() } else { usize::MAX };
    let mut console = Console::new(args.json_lines, std::io::stdout(), width, nodelay_report::text_rows);
    match nodelay_watch::run(args, &nodelay_load::stop::requested, &mut |event| console.write(event)) {
        Ok(end) => Ok(if end.findings { Outcome::Findings } else { Outcome::Success }),
        Err(WatchError::Usage(message)) => Err(usage(message)),
        Err(error) => Err(error.into()),
    }
}
