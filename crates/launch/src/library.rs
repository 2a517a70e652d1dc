//! The embedded shim, written where the loader can map it: a private directory
//! (`$XDG_RUNTIME_DIR/nodelay` when that is ours, else `/tmp/nodelay-<uid>`), created 0700 and
//! refused if anyone else owns it or can write to it, on a file system that allows execution.
//! The file is named by a hash of its bytes, so every nodelay build has its own and a file of
//! the same name is reused once its bytes are checked. It is written to a temporary name and
//! renamed, so no program ever maps a half-written library, and it is never deleted: the
//! program and its children may load it at any time.

use std::ffi::OsStr;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The shim, compiled by build.rs from shim/nodelay_shim.c.
const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libnodelay_shim.so"));

/// FNV-1a, 64 bits: names the file after its content. Not a defence against anyone (the
/// directory is private); the content is compared before a file is reused.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

const SHIM_HASH: u64 = fnv1a(SHIM);

/// Writes (or finds) the library and returns its path; else why no directory would do.
pub fn install() -> Result<PathBuf, String> {
    let mut refused = Vec::new();
    for directory in candidate_directories() {
        match install_in(&directory) {
            Ok(path) => return Ok(path),
            Err(e) => refused.push(format!("{}: {e}", directory.display())),
        }
    }
    Err(refused.join("; "))
}

fn candidate_directories() -> Vec<PathBuf> {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut candidates = Vec::new();
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
        && std::fs::metadata(&runtime).is_ok_and(|m| m.is_dir() && m.uid() == uid)
    {
        candidates.push(runtime.join("nodelay"));
    }
    candidates.push(PathBuf::from(format!("/tmp/nodelay-{uid}")));
    candidates
}

fn install_in(directory: &Path) -> io::Result<PathBuf> {
    // LD_PRELOAD separates paths with spaces and colons: a path with either cannot be given.
    if directory.as_os_str().as_bytes().iter().any(|&b| b == b':' || b.is_ascii_whitespace()) {
        return Err(io::Error::other("a space or colon in the path, which LD_PRELOAD cannot take"));
    }
    private_directory(directory)?;
    if mounted_noexec(directory)? {
        return Err(io::Error::other("on a file system mounted noexec, where no library can be mapped"));
    }
    let path = directory.join(format!("libnodelay-{SHIM_HASH:016x}.so"));
    if holds_the_shim(&path)? {
        return Ok(path);
    }
    let temporary = directory.join(format!(".libnodelay-{SHIM_HASH:016x}.so.{}.tmp", std::process::id()));
    // A leftover of a process that had our PID and died mid-write.
    let _ = std::fs::remove_file(&temporary);
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o644).open(&temporary)?;
    let written = file.write_all(SHIM).and_then(|()| std::fs::rename(&temporary, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map(|()| path)
}

/// Creates `directory` 0700 if needed; refuses it unless it is a real directory (not a
/// symlink), ours, and writable by nobody else.
fn private_directory(directory: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(directory) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let metadata = std::fs::symlink_metadata(directory)?;
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !metadata.is_dir() {
        return Err(io::Error::other("exists and is not a directory"));
    }
    if metadata.uid() != uid {
        return Err(io::Error::other(format!("owned by user {}, not by us ({uid})", metadata.uid())));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!("writable by others (mode {:o})", metadata.mode() & 0o7777)));
    }
    Ok(())
}

fn mounted_noexec(directory: &Path) -> io::Result<bool> {
    let c_path = std::ffi::CString::new(directory.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: statvfs fills the struct it is given; c_path is NUL-terminated.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stats) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stats.f_flag & libc::ST_NOEXEC != 0)
}

/// Whether `path` is a regular file of ours whose bytes are the shim's.
fn holds_the_shim(path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
        Ok(metadata) if metadata.is_file() && metadata.len() == SHIM.len() as u64 => {
            Ok(std::fs::read(path)? == SHIM)
        }
        Ok(_) => Ok(false),
    }
}

/// The LD_PRELOAD value: the library first, then whatever was there (space-separated, as the
/// loader reads it), without a second copy of the library.
pub fn preload_value(library: &Path, existing: Option<&OsStr>) -> std::ffi::OsString {
    let mut value = library.as_os_str().to_os_string();
    let others = existing.map(OsStr::as_bytes).unwrap_or_default();
    for entry in others.split(|&b| b == b' ' || b == b':').filter(|e| !e.is_empty()) {
        if entry != library.as_os_str().as_bytes() {
            value.push(" ");
            value.push(OsStr::from_bytes(entry));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nodelay-library-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_shim_is_a_shared_object() {
        assert!(SHIM.starts_with(b"\x7fELF"), "not ELF");
        assert!(SHIM.len() > 1000);
    }

    #[test]
    fn writes_once_then_reuses_and_repairs() {
        let dir = scratch("reuse");
        let path = install_in(&dir).expect("installed");
        assert_eq!(std::fs::read(&path).unwrap(), SHIM);
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(install_in(&dir).unwrap(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), written, "rewritten");
        // A damaged copy is replaced, not reused.
        std::fs::write(&path, b"garbage").unwrap();
        assert_eq!(install_in(&dir).unwrap(), path);
        assert_eq!(std::fs::read(&path).unwrap(), SHIM);
        let entries = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(entries, 1, "a temporary file was left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_directories_others_can_write_or_do_not_own() {
        let dir = scratch("open");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = install_in(&dir).expect_err("world-writable").to_string();
        assert!(error.contains("writable by others"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();

        let link = scratch("link");
        std::os::unix::fs::symlink("/", &link).unwrap();
        let error = install_in(&link).expect_err("a symlink").to_string();
        assert!(error.contains("not a directory") || error.contains("owned by"), "{error}");
        std::fs::remove_file(&link).unwrap();

        let error = install_in(Path::new("/tmp/with space")).expect_err("a space").to_string();
        assert!(error.contains("space"), "{error}");
    }

    #[test]
    fn preload_goes_first_and_only_once() {
        let library = Path::new("/run/user/1/nodelay/libnodelay-1.so");
        assert_eq!(preload_value(library, None), library.as_os_str());
        assert_eq!(preload_value(library, Some(OsStr::new(""))), library.as_os_str());
        assert_eq!(
            preload_value(library, Some(OsStr::new("/a.so:/b.so /run/user/1/nodelay/libnodelay-1.so"))),
            OsStr::new("/run/user/1/nodelay/libnodelay-1.so /a.so /b.so")
        );
    }
}
