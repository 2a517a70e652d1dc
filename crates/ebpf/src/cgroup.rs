//! Which cgroup: a cgroup2 directory given by its path, or the one a process is in (its
//! `0::` line of /proc/PID/cgroup, under a cgroup2 mount point from /proc/self/mountinfo).

use crate::EbpfError;
use std::path::{Path, PathBuf};

/// A directory of a cgroup2 hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
    /// The hierarchy's root: every process of the machine.
    is_root: bool,
}

impl Cgroup {
    /// The cgroup at `path`, which must be a cgroup2 directory: only cgroup2 carries sock_ops
    /// and setsockopt programs.
    pub fn at(path: &Path) -> Result<Cgroup, EbpfError> {
        let path = path.canonicalize().map_err(|e| EbpfError::Io(path.to_path_buf(), e))?;
        // cgroup.controllers exists in every cgroup2 directory and in no v1 one.
        if !path.join("cgroup.controllers").is_file() {
            return Err(EbpfError::NotCgroup2(path));
        }
        Ok(Cgroup { path, is_root: false })
    }

    /// The cgroup2 directory process `pid` is in. Refused for the root cgroup, which is the
    /// whole machine: [`Cgroup::at`] takes the root's path for whoever means that.
    pub fn of_pid(pid: u32) -> Result<Cgroup, EbpfError> {
        let cgroup = Cgroup::containing(pid)?;
        if cgroup.is_root {
            return Err(EbpfError::RootCgroup(pid));
        }
        Ok(cgroup)
    }

    /// The cgroup2 directory process `pid` is in, the root included.
    pub fn containing(pid: u32) -> Result<Cgroup, EbpfError> {
        let lines = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .map_err(|_| EbpfError::NoSuchProcess(pid))?;
        let relative =
            lines.lines().find_map(|line| line.strip_prefix("0::")).ok_or(EbpfError::NoCgroup2Mount)?;
        // A process in a cgroup namespace of its own sees others' cgroups above its root as /..
        if relative.split('/').any(|part| part == "..") {
            return Err(EbpfError::OutsideNamespace(pid));
        }
        cgroup2_mount_points()?
            .iter()
            .map(|mount| mount.join(relative.trim_start_matches('/')))
            .find(|path| path.is_dir())
            .ok_or(EbpfError::NoCgroup2Mount)
            .and_then(|path| Cgroup::at(&path))
            .map(|cgroup| Cgroup { is_root: relative == "/", ..cgroup })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The processes in this cgroup and every cgroup below it (the programs reach them all),
    /// lowest PID first. A cgroup removed while it is read counts as empty.
    pub fn processes(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        let mut pending = vec![self.path.clone()];
        while let Some(dir) = pending.pop() {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            pids.extend(procs.lines().filter_map(|line| line.trim().parse::<u32>().ok()));
            let children = std::fs::read_dir(&dir).into_iter().flatten().flatten();
            pending.extend(children.filter(|entry| entry.path().is_dir()).map(|entry| entry.path()));
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }
}

/// Where this process sees cgroup2 hierarchies mounted (/proc/self/mountinfo).
pub fn cgroup2_mount_points() -> Result<Vec<PathBuf>, EbpfError> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| EbpfError::Io(PathBuf::from("/proc/self/mountinfo"), e))?;
    Ok(cgroup2_mounts(&mountinfo))
}

/// The mount points of cgroup2 hierarchies in a mountinfo text (fields: ID, parent, dev, root,
/// mount point, options, optional fields, `-`, type, ...), octal escapes undone.
fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            (after.split_whitespace().next()? == "cgroup2")
                .then(|| unescape(before.split_whitespace().nth(4)?))?
        })
        .map(PathBuf::from)
        .collect()
}

/// `\040` and its kind (mountinfo escapes space, tab, newline and backslash) as the byte.
fn unescape(field: &str) -> Option<String> {
    let mut out = Vec::with_capacity(field.len());
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            out.push(u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 4]).ok()?, 8).ok()?);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup2_mount_points_are_read_from_mountinfo() {
        let mountinfo = "\
35 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
41 1 0:36 / /mnt/my\\040cgroups rw shared:5 - cgroup2 none rw
";
        assert_eq!(
            cgroup2_mounts(mountinfo),
            [PathBuf::from("/sys/fs/cgroup/unified"), PathBuf::from("/mnt/my cgroups")]
        );
        assert!(cgroup2_mounts("garbage\n1 2 3\n").is_empty());
    }

    #[test]
    fn a_directory_that_is_not_a_cgroup2_one_is_refused() {
        let error = Cgroup::at(Path::new("/tmp")).unwrap_err();
        assert!(error.to_string().contains("not a cgroup2 directory"), "{error}");
        assert!(matches!(Cgroup::at(Path::new("/no/such/dir")), Err(EbpfError::Io(..))));
        assert!(matches!(Cgroup::of_pid(u32::MAX), Err(EbpfError::NoSuchProcess(_))));
    }
}
