//! The two namespaces of a path, made and removed with iproute2's `ip`, as a person would.

use std::io;
use std::process::{Command, Stdio};

/// Runs `ip ARGS`, failing with what it said on stderr.
pub(crate) fn ip(args: &[&str]) -> io::Result<()> {
    let output = Command::new("ip").args(args).stdin(Stdio::null()).output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// Deletes namespace `name` if it exists; a missing one is not an error.
pub(crate) fn delete(name: &str) {
    let _ = Command::new("ip")
        .args(["netns", "del", name])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
