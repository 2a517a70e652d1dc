//! `nodelay watch`: the library's events rendered on stdout as they come.

use crate::exit::{Outcome, usage};
use nodelay_watch::render::Renderer;
use nodelay_watch::{Event, WatchError};
use std::io::{self, IsTerminal, Write};

pub fn watch(args: &crate::args::WatchArgs) -> anyhow::Result<Outcome> {
    args.check().map_err(usage)?;
    let options = nodelay_watch::WatchOptions::from(args);
    crate::interrupt::install();
    // Not a terminal: whole lines, so that grep gets a finding and its next command.
    let width = || if std::io::stdout().is_terminal() { crate::runner::text_width() } else { usize::MAX };
    let mut console = Console::new(options.json_lines, std::io::stdout(), width, crate::terminal::text_rows);
    match nodelay_watch::run(&options, &nodelay_load::stop::requested, &mut |event| console.write(event)) {
        Ok(end) => Ok(if end.findings { Outcome::Findings } else { Outcome::Success }),
        Err(WatchError::Usage(message)) => Err(usage(message)),
        Err(WatchError::BadOption { option, value, message }) => {
            let given = if value.is_empty() { option.to_string() } else { format!("{option} {value}") };
            Err(usage(format!("{given}: {message}")))
        }
        Err(error) => Err(error.into()),
    }
}

/// Each event rendered and written to stdout (or any terminal or pipe) as it comes: the view
/// when it is a terminal, unless JSON lines are asked for.
struct Console<W> {
    out: W,
    renderer: Renderer,
    width: fn() -> usize,
    rows: fn() -> usize,
}

impl<W: Write + IsTerminal> Console<W> {
    /// A console on `out`, whose text is `width()` columns wide and whose view is `rows()` high.
    fn new(json_lines: bool, out: W, width: fn() -> usize, rows: fn() -> usize) -> Self {
        let renderer = Renderer::new(json_lines, out.is_terminal());
        Console { out, renderer, width, rows }
    }

    /// Renders `event` and writes it (flushed: a pipe's reader sees each line at once).
    fn write(&mut self, event: &Event) -> io::Result<()> {
        let text = self.renderer.render(event, (self.width)(), (self.rows)());
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}
