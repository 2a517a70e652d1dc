//! `nodelay exec`: run an unmodified program with TCP_NODELAY forced on every TCP socket it
//! creates or accepts.
//!
//! The usual way is the shim (`shim/nodelay_shim.c`), compiled by the build and embedded in
//! the binary: [`prepare`] writes it once to a private, content-addressed file, and
//! [`Launch::exec`] adds it to `LD_PRELOAD` and *replaces* the current process with the
//! program, so the PID, stdio, signals and exit status are the program's own.
//!
//! Where a preload cannot work (a statically linked program, a set-ID one, a Go program that
//! makes its own system calls, another architecture), [`prepare`] says why before anything
//! starts, and [`Launch::exec`] starts a watcher process that sets TCP_NODELAY on the
//! program's sockets from outside (`nodelay_host::force_nodelay`) until it ends; the program
//! still replaces the current process. This crate never prints: its caller words the lines,
//! and the watcher, which has nobody to return to, reports through a function it is given.
//!
//! Linux only; elsewhere [`prepare`] answers [`LaunchError::Unsupported`].

#![warn(missing_docs)]

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

mod reasons;

pub use reasons::{LaunchError, NoPreload};

#[cfg(target_os = "linux")]
mod inspect;
#[cfg(target_os = "linux")]
pub use inspect::why_no_preload_in_elf;
#[cfg(target_os = "linux")]
mod library;
#[cfg(target_os = "linux")]
mod resolve;
#[cfg(target_os = "linux")]
mod watch;

/// How TCP_NODELAY will be forced on the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// The shim, through `LD_PRELOAD`: this library file.
    Preload {
        /// The shim's library file, as written by [`prepare`].
        library: PathBuf,
    },
    /// A watcher setting it on the program's sockets from outside, because of `reason`.
    FromOutside {
        /// Why the preload cannot work.
        reason: NoPreload,
    },
}

/// A program ready to be started: found, inspected, and the way to force TCP_NODELAY on it
/// chosen (the library written if it is the preload).
#[derive(Debug)]
// Elsewhere than Linux no Launch is ever made: its fields are read only by the Linux exec.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Launch {
    /// As the user typed it: the program's argv[0] and the name in messages.
    name: OsString,
    /// Where it was found.
    path: PathBuf,
    args: Vec<OsString>,
    method: Method,
}

impl Launch {
    /// How TCP_NODELAY will be forced on the program.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Replaces this process with the program; returns only if that failed. With
    /// [`Method::FromOutside`] a watcher is started first; it reports its one error (if any)
    /// through `on_watcher_error` and then stops.
    pub fn exec(self, on_watcher_error: impl FnOnce(&str)) -> LaunchError {
        #[cfg(target_os = "linux")]
        {
            exec_linux(self, on_watcher_error)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (self, on_watcher_error);
            LaunchError::Unsupported
        }
    }
}

/// Finds `program` as a shell would (PATH unless the name has a slash), inspects it, and
/// chooses how TCP_NODELAY will be forced: the preload when it can work, else from outside.
pub fn prepare(program: &OsStr, args: &[OsString]) -> Result<Launch, LaunchError> {
    #[cfg(target_os = "linux")]
    {
        let path = resolve::find_program(program, std::env::var_os("PATH").as_deref())?;
        let method = match inspect::why_no_preload(&path) {
            Some(reason) => Method::FromOutside { reason },
            None => match library::install() {
                Ok(library) => Method::Preload { library },
                Err(why) => Method::FromOutside { reason: NoPreload::NoLibraryDirectory { why } },
            },
        };
        Ok(Launch { name: program.to_os_string(), path, args: args.to_vec(), method })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (program, args);
        Err(LaunchError::Unsupported)
    }
}

#[cfg(target_os = "linux")]
fn exec_linux(launch: Launch, on_watcher_error: impl FnOnce(&str)) -> LaunchError {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(&launch.path);
    command.arg0(&launch.name).args(&launch.args);
    match &launch.method {
        Method::Preload { library } => {
            command.env(
                "LD_PRELOAD",
                library::preload_value(library, std::env::var_os("LD_PRELOAD").as_deref()),
            );
        }
        Method::FromOutside { .. } => {
            if let Err(e) = watch::start(launch.name.to_string_lossy().into_owned(), on_watcher_error) {
                return LaunchError::Watcher(e);
            }
        }
    }
    let error = command.exec();
    LaunchError::from_exec(&launch.name, &error)
}
