//! How wide and high the terminal is that text goes to: read here, the one place nodelay
//! asks the terminal, and handed to the renderers, which fit their lines to it.

use nodelay_report::DEFAULT_WIDTH;
use std::io::IsTerminal;

/// Columns the text report may use: the terminal's when stdout is one, else `COLUMNS` when
/// set (a pipe to a pager the user sized), else 80.
pub fn text_width() -> usize {
    width_of(&std::io::stdout())
}

/// Rows of the terminal stdout is, for a view that redraws in place; 24 when it is none.
pub fn text_rows() -> usize {
    rows_of(&std::io::stdout())
}

/// Rows of the terminal stderr is (the progress lines'); 24 when it is none.
pub fn stderr_rows() -> usize {
    rows_of(&std::io::stderr())
}

fn rows_of(stream: &(impl IsTerminal + std::os::fd::AsFd)) -> usize {
    match terminal_size::terminal_size_of(stream) {
        Some((_, terminal_size::Height(rows))) if stream.is_terminal() && rows > 0 => usize::from(rows),
        _ => 24,
    }
}

/// [`text_width`] for text written to stderr (exec's lines, which stdout may not be near).
pub fn stderr_width() -> usize {
    width_of(&std::io::stderr())
}

fn width_of(stream: &(impl IsTerminal + std::os::fd::AsFd)) -> usize {
    let columns = || std::env::var("COLUMNS").ok()?.trim().parse::<usize>().ok().filter(|&c| c > 0);
    if stream.is_terminal()
        && let Some((terminal_size::Width(width), _)) = terminal_size::terminal_size_of(stream)
        && width > 0
    {
        return usize::from(width);
    }
    columns().unwrap_or(DEFAULT_WIDTH)
}
