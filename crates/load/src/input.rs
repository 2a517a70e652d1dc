//! Files named on the command line (`-b @FILE`, `--send @FILE`, `--scenario FILE`, a
//! scenario's `body = "@FILE"`, and the saved runs and interval logs `report` and
//! `report merge` read): read once, through a cap, so `/dev/zero` or a huge file is a
//! clear error instead of a process that reads until memory runs out.

use crate::usage::usage;
use anyhow::Result;
use std::io::Read;
use std::path::Path;

/// Largest request body (`-b @FILE`, `--send @FILE`, scenario bodies).
pub const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// Largest scenario file: a TOML list of requests, not a data file.
pub const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;
/// Largest saved run (`--json`) or interval log (`--hdr-log`): a day-long run with an interval
/// a second writes a few MiB of either.
pub const MAX_SAVED_RUN_BYTES: u64 = 256 * 1024 * 1024;

/// Reads at most `limit` bytes of `path`; `what` names the file in errors ("body file").
pub fn read_capped(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| usage(format!("cannot read {what} '{shown}': {e}")))?;
    let expected = file.metadata().map(|m| m.len()).unwrap_or(0);
    if expected > limit {
        return Err(usage(too_large(what, &shown.to_string(), limit)));
    }
    // Sized from metadata for regular files, so the bytes are read into one buffer, once;
    // devices and pipes report 0 and are stopped by the cap.
    let mut bytes = Vec::with_capacity(expected as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| usage(format!("cannot read {what} '{shown}': {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(usage(too_large(what, &shown.to_string(), limit)));
    }
    Ok(bytes)
}

fn too_large(what: &str, shown: &str, limit: u64) -> String {
    format!("{what} '{shown}' is larger than {} MiB, the most nodelay reads", limit / (1024 * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_and_missing_files_are_clear_errors() {
        let endless = read_capped(Path::new("/dev/zero"), "body file", 1024).unwrap_err().to_string();
        assert_eq!(endless, "body file '/dev/zero' is larger than 0 MiB, the most nodelay reads");
        let missing = read_capped(Path::new("/no/such/file"), "body file", 1024).unwrap_err().to_string();
        assert!(missing.starts_with("cannot read body file '/no/such/file'"), "{missing}");
        let small = read_capped(Path::new("/proc/self/cmdline"), "file", MAX_BODY_BYTES).unwrap();
        assert!(!small.is_empty());
    }
}
