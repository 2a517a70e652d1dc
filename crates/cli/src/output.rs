//! Writing to stdout and stderr like a Unix tool: when the reader goes away (`| head -c 10`)
//! the rest of the output is dropped quietly and the command still ends with its own status;
//! `println!` panicked there ("failed printing to stdout: Broken pipe", exit 101). Any other
//! write error on stdout (a full disk) is reported.

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};
use std::path::Path;

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
    let file = std::fs::File::create(path)
        .map_err(|e| crate::exit::usage(format!("{option}: cannot write {}: {e}", path.display())))?;
    Ok(Some(OutputFile { path: path.to_path_buf(), file }))
}

/// Refuses two of `files` (an option or input's name and its path) that name one regular file:
/// the later write would replace the earlier (or a page its own input). Devices such as
/// /dev/null may be named twice.
pub fn distinct_files(files: &[(&str, Option<&Path>)]) -> Result<()> {
    let named: Vec<(&str, &Path)> =
        files.iter().filter_map(|(option, path)| Some((*option, (*path)?))).collect();
    for (index, (option, path)) in named.iter().enumerate() {
        for (other_option, other) in &named[index + 1..] {
            if same_regular_file(path, other) {
                return Err(crate::exit::usage(format!(
                    "{option} and {other_option} both name {}: one would overwrite the other",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// The same file: one inode when both exist, else the same absolute path; never a device.
fn same_regular_file(one: &Path, other: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(one), std::fs::metadata(other)) {
        (Ok(a), Ok(b)) => a.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino()),
        (Err(_), Err(_)) => match (std::path::absolute(one), std::path::absolute(other)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
        _ => false,
    }
}

impl OutputFile {
    pub fn write(mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_outputs_on_one_file_are_refused_and_devices_are_not() {
        let dir = std::env::temp_dir().join(format!("nodelay-outputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (new, existing) = (dir.join("new.json"), dir.join("run.json"));
        std::fs::write(&existing, "{}").unwrap();
        let same_new = dir.join(".").join("new.json");
        let refused = distinct_files(&[
            ("--export-json", Some(&new)),
            ("--html", None),
            ("--hdr-log", Some(&same_new)),
        ]);
        let message = refused.unwrap_err().to_string();
        assert!(message.starts_with("--export-json and --hdr-log both name "), "{message}");
        assert!(distinct_files(&[("a saved run", Some(&existing)), ("--html", Some(&existing))]).is_err());
        assert!(distinct_files(&[("--html", Some(&new)), ("--export-json", Some(&existing))]).is_ok());
        let null = Path::new("/dev/null");
        assert!(distinct_files(&[("--html", Some(null)), ("--export-json", Some(null))]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
