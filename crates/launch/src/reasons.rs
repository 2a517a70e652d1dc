//! Why a preload cannot work for a program, and why a program could not be started: the
//! answers [`prepare`](crate::prepare) and [`Launch::exec`](crate::Launch::exec) give besides
//! a launch. Apart from `lib.rs` so that the modules that find and inspect the program use
//! them without importing the file that uses those modules.

#[cfg(target_os = "linux")]
use std::ffi::OsStr;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a preload cannot work for this program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoPreload {
    /// `file` (the program, or the interpreter of its `#!` line) has no ELF interpreter
    /// (PT_INTERP): no dynamic loader runs, so nothing reads `LD_PRELOAD`.
    StaticallyLinked {
        /// The file judged: the program, or the interpreter its `#!` line runs.
        file: PathBuf,
    },
    /// `file` is set-user-ID or set-group-ID to someone else: the loader runs it in secure
    /// mode and ignores a preload path with a slash.
    SetId {
        /// The file judged: the program, or the interpreter its `#!` line runs.
        file: PathBuf,
    },
    /// `file` carries file capabilities: secure mode again.
    Capabilities {
        /// The file judged: the program, or the interpreter its `#!` line runs.
        file: PathBuf,
    },
    /// `file` is a Go program: its runtime makes its own system calls, past any libc wrapper.
    Go {
        /// The file judged: the program, or the interpreter its `#!` line runs.
        file: PathBuf,
    },
    /// `file` is built for another architecture or word size than the embedded shim.
    OtherArchitecture {
        /// The file judged: the program, or the interpreter its `#!` line runs.
        file: PathBuf,
    },
    /// No directory could hold the library (each candidate's reason, joined).
    NoLibraryDirectory {
        /// Each candidate directory's reason, joined.
        why: String,
    },
}

impl fmt::Display for NoPreload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoPreload::StaticallyLinked { file } => write!(f, "{} is statically linked", file.display()),
            NoPreload::SetId { file } => {
                write!(
                    f,
                    "{} is set-user-ID or set-group-ID, and the loader ignores LD_PRELOAD for it",
                    file.display()
                )
            }
            NoPreload::Capabilities { file } => {
                write!(
                    f,
                    "{} has file capabilities, and the loader ignores LD_PRELOAD for it",
                    file.display()
                )
            }
            NoPreload::Go { file } => {
                write!(
                    f,
                    "{} is a Go program, whose runtime makes its own system calls, past LD_PRELOAD",
                    file.display()
                )
            }
            NoPreload::OtherArchitecture { file } => {
                write!(
                    f,
                    "{} is built for another architecture than nodelay's LD_PRELOAD library",
                    file.display()
                )
            }
            NoPreload::NoLibraryDirectory { why } => {
                write!(f, "no directory can hold the LD_PRELOAD library ({why})")
            }
        }
    }
}

/// Why the program could not be started. The shell's exit statuses apply: 127 for
/// [`NotFound`](LaunchError::NotFound), 126 for [`NotExecutable`](LaunchError::NotExecutable).
#[derive(Debug)]
pub enum LaunchError {
    /// No such program: `message` is the shell's wording ("command not found" for a name
    /// searched in PATH, "No such file or directory" for a path).
    NotFound {
        /// The program as the user named it.
        program: OsString,
        /// The shell's wording of the failure.
        message: String,
    },
    /// The program exists but cannot be executed (permission, a directory, a bad format).
    NotExecutable {
        /// The program as the user named it.
        program: OsString,
        /// The shell's wording of the failure ("Permission denied", "Is a directory", ...).
        message: String,
    },
    /// The fallback could not start its watcher: the program was not started.
    Watcher(io::Error),
    /// Not on Linux.
    Unsupported,
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::NotFound { program, message } | LaunchError::NotExecutable { program, message } => {
                write!(f, "{}: {message}", program.to_string_lossy())
            }
            LaunchError::Watcher(e) => write!(
                f,
                "cannot start the watcher that sets TCP_NODELAY from outside ({e}); the program was not started"
            ),
            LaunchError::Unsupported => f.write_str("exec needs Linux (LD_PRELOAD and pidfd_getfd)"),
        }
    }
}

impl std::error::Error for LaunchError {}

#[cfg(target_os = "linux")]
impl LaunchError {
    /// The error `execve` (or a look-up before it) gave for `program`, as a shell words it.
    pub(crate) fn from_exec(program: &OsStr, error: &io::Error) -> LaunchError {
        let message = match error.raw_os_error() {
            Some(libc::EACCES) => "Permission denied".to_string(),
            Some(libc::EISDIR) => "Is a directory".to_string(),
            Some(libc::ENOENT) => "No such file or directory".to_string(),
            _ => strip_os_error_code(error),
        };
        let program = program.to_os_string();
        if error.raw_os_error() == Some(libc::ENOENT) {
            LaunchError::NotFound { program, message }
        } else {
            LaunchError::NotExecutable { program, message }
        }
    }
}

/// "Exec format error (os error 8)" → "Exec format error".
#[cfg(target_os = "linux")]
fn strip_os_error_code(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
