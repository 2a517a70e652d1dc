//! Finding the program as a shell does, so that a mistake gets a shell's answer before
//! anything starts: a name without a slash is searched in PATH (an empty entry is the current
//! directory); the first executable regular file wins; a match that is not executable is
//! "Permission denied" (126) only if no executable one follows, and no match at all is
//! "command not found" (127).

use crate::LaunchError;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// PATH when the variable is unset: what glibc's execvp uses (`confstr(_CS_PATH)`).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

pub fn find_program(program: &OsStr, path_variable: Option<&OsStr>) -> Result<PathBuf, LaunchError> {
    if program.is_empty() {
        return Err(LaunchError::NotFound { program: program.into(), message: "command not found".into() });
    }
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return match check_executable(&path) {
            Ok(()) => Ok(path),
            Err(e) => Err(LaunchError::from_exec(program, &e)),
        };
    }
    let search = path_variable.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut denied = None;
    for directory in search.as_bytes().split(|&b| b == b':') {
        let directory =
            if directory.is_empty() { Path::new(".") } else { Path::new(OsStr::from_bytes(directory)) };
        let candidate = directory.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && candidate.is_file() => {
                denied.get_or_insert(e);
            }
            Err(_) => {}
        }
    }
    Err(match denied {
        Some(e) => LaunchError::from_exec(program, &e),
        None => LaunchError::NotFound { program: program.into(), message: "command not found".into() },
    })
}

/// Whether execve could run `path`: it exists, is not a directory, and we may execute it.
fn check_executable(path: &Path) -> io::Result<()> {
    let metadata = std::fs::metadata(path)?;
    if metadata.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: c_path is a valid NUL-terminated string for the duration of the call.
    if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nodelay-resolve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    fn file(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn message(result: Result<PathBuf, LaunchError>) -> String {
        result.expect_err("an error").to_string()
    }

    #[test]
    fn searches_path_in_order_and_skips_what_cannot_run() {
        let dir = scratch("order");
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        file(&a.join("tool"), 0o644);
        std::fs::create_dir_all(a.join("dir-tool")).unwrap();
        file(&b.join("tool"), 0o755);
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(find_program(OsStr::new("tool"), Some(&path)).unwrap(), b.join("tool"));
        assert_eq!(message(find_program(OsStr::new("dir-tool"), Some(&path))), "dir-tool: command not found");
        assert_eq!(message(find_program(OsStr::new("nothing"), Some(&path))), "nothing: command not found");
        let only_a = a.as_os_str();
        assert_eq!(message(find_program(OsStr::new("tool"), Some(only_a))), "tool: Permission denied");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_with_a_slash_is_not_searched() {
        let dir = scratch("slash");
        file(&dir.join("plain"), 0o644);
        let plain = dir.join("plain");
        let err = find_program(plain.as_os_str(), None).expect_err("not executable");
        assert!(matches!(err, LaunchError::NotExecutable { .. }), "{err}");
        assert!(err.to_string().ends_with("plain: Permission denied"), "{err}");
        let err = find_program(dir.as_os_str(), None).expect_err("a directory");
        assert!(err.to_string().ends_with(": Is a directory"), "{err}");
        let missing = dir.join("missing");
        let err = find_program(missing.as_os_str(), None).expect_err("missing");
        assert!(matches!(err, LaunchError::NotFound { .. }), "{err}");
        assert!(err.to_string().ends_with("missing: No such file or directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn empty_names_and_path_entries() {
        // An empty entry is the current directory (the crate's, which has no `sh`).
        assert_eq!(
            find_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent::/bin"))).unwrap(),
            Path::new("/bin/sh")
        );
        assert!(find_program(OsStr::new(""), None).is_err());
    }
}
