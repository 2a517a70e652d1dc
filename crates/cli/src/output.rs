//! Writing to stdout and stderr like a Unix tool: when the reader goes away (`| head -c 10`)
//! the rest of the output is dropped quietly and the command still ends with its own status;
//! `println!` panicked there ("failed printing to stdout: Broken pipe", exit 101). Any other
//! write error on stdout (a full disk) is reported.

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout and flushes it.
pub fn stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write to standard output"),
    }
}

/// Writes one line to stdout.
pub fn line(text: &str) -> Result<()> {
    stdout(&format!("{text}\n"))
}

/// Writes one line to stderr; a closed stderr is nobody left to tell, so errors are ignored.
pub fn stderr_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
