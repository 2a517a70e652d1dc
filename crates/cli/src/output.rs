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

/// A file an option asked for, created before the work it records, so that a bad path costs no
/// measurement.
pub struct OutputFile {
    path: std::path::PathBuf,
    file: std::fs::File,
}

/// Creates the file at `path` (named by `option` in the error), if one was asked for.
pub fn create_output(path: Option<&std::path::Path>, option: &str) -> Result<Option<OutputFile>> {
    let Some(path) = path else { return Ok(None) };
    let file = std::fs::File::create(path).map_err(|e| {
        anyhow::Error::new(crate::exit::UsageError(format!("{option}: cannot write {}: {e}", path.display())))
    })?;
    Ok(Some(OutputFile { path: path.to_path_buf(), file }))
}

impl OutputFile {
    pub fn write(mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}
