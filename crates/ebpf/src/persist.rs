//! `nodelay fix --cgroup --persist` and `--undo`: the fix's two links and its counters pinned
//! in bpffs, under `/sys/fs/bpf/nodelay/cgroup-INODE`, so the programs stay attached after fix
//! ends, until `--undo` removes the pins (the kernel then releases the links, which detaches
//! the programs) and reads the counters one last time. aya 0.14 turns a sock_ops link into a
//! pinnable one but not a setsockopt link, so both are found among the kernel's links by
//! their program and pinned by two raw bpf(2) calls.
#![allow(unsafe_code)]

use crate::fix::read_counts;
use crate::query::{SETSOCKOPT_NAME, SOCK_OPS_NAME};
use crate::refused::{Attach, refused};
use crate::{Cgroup, CgroupFix, EbpfError, FixCounts};
use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where bpffs is mounted on systemd hosts and Kubernetes nodes.
pub const BPFFS: &str = "/sys/fs/bpf";
/// statfs(2)'s f_type of a bpffs.
const BPF_FS_MAGIC: i64 = 0xcafe4a11;
const BPF_OBJ_PIN: libc::c_long = 6;
const BPF_LINK_GET_FD_BY_ID: libc::c_long = 30;
/// The pins' names in a cgroup's directory.
const PINS: [&str; 2] = [SOCK_OPS_NAME, SETSOCKOPT_NAME];
const COUNTS_PIN: &str = "counts";

/// `union bpf_attr` for BPF_OBJ_PIN.
#[repr(C)]
#[derive(Default)]
struct ObjPin {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    _padding: u32,
}

/// `union bpf_attr` for BPF_LINK_GET_FD_BY_ID.
#[repr(C)]
#[derive(Default)]
struct GetFdById {
    link_id: u32,
    next_id: u32,
    open_flags: u32,
}

/// The directory a cgroup's persisted fix is pinned in: named by the cgroup's inode (its id),
/// which no other cgroup has while this one exists.
pub fn pin_directory(cgroup: &Cgroup) -> Result<PathBuf, EbpfError> {
    let inode =
        std::fs::metadata(cgroup.path()).map_err(|e| EbpfError::Io(cgroup.path().to_path_buf(), e))?.ino();
    Ok(Path::new(BPFFS).join("nodelay").join(format!("cgroup-{inode}")))
}

/// Whether bpffs is mounted at [`BPFFS`].
fn bpffs_mounted() -> bool {
    let Ok(path) = CString::new(BPFFS) else { return false };
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: statfs writes one struct statfs into the buffer it is given, which lives here.
    let result = unsafe { libc::statfs(path.as_ptr(), stat.as_mut_ptr()) };
    // SAFETY: zeroed is a valid statfs, and statfs filled it on success.
    #[allow(clippy::unnecessary_cast)] // f_type is i64 here, another integer elsewhere
    let matched = result == 0 && unsafe { stat.assume_init() }.f_type as i64 == BPF_FS_MAGIC;
    matched
}

/// The kernel's own errno, as an io::Error.
fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A descriptor of link `id`.
fn link_fd(id: u32) -> Result<OwnedFd, EbpfError> {
    let mut attr = GetFdById { link_id: id, ..GetFdById::default() };
    // SAFETY: bpf(2) reads `attr`, a live struct of the size passed, and returns a new
    // descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_LINK_GET_FD_BY_ID,
            &mut attr as *mut GetFdById,
            size_of::<GetFdById>(),
        )
    };
    if fd < 0 {
        return Err(EbpfError::Kernel(format!("opening link {id}: {}", last_error())));
    }
    // SAFETY: the kernel just returned this descriptor, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Pins the object of `fd` at `path` (on bpffs).
fn pin(fd: &OwnedFd, path: &Path) -> Result<(), EbpfError> {
    use std::os::fd::AsRawFd;
    let name = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| EbpfError::Kernel(format!("{} has a NUL byte", path.display())))?;
    let mut attr =
        ObjPin { pathname: name.as_ptr() as u64, bpf_fd: fd.as_raw_fd() as u32, ..ObjPin::default() };
    // SAFETY: bpf(2) reads `attr` and the C string it points to, both live for the call.
    let result =
        unsafe { libc::syscall(libc::SYS_bpf, BPF_OBJ_PIN, &mut attr as *mut ObjPin, size_of::<ObjPin>()) };
    if result < 0 {
        return Err(EbpfError::Kernel(format!("pinning {}: {}", path.display(), last_error())));
    }
    Ok(())
}

/// Where a fix of `cgroup` would be pinned, if it can be: bpffs is mounted and nothing is
/// pinned for the cgroup yet. Checked before attaching, so that a refusal attaches nothing.
pub fn can_persist(cgroup: &Cgroup) -> Result<PathBuf, EbpfError> {
    if !bpffs_mounted() {
        return Err(EbpfError::NoBpffs);
    }
    let directory = pin_directory(cgroup)?;
    if directory.exists() {
        return Err(EbpfError::AlreadyPersisted(directory));
    }
    Ok(directory)
}

impl CgroupFix {
    /// Pins the links and the counters so the programs stay attached after this process ends;
    /// the directory they are pinned in.
    pub fn persist(self) -> Result<PathBuf, EbpfError> {
        let directory = can_persist(&self.cgroup)?;
        std::fs::create_dir_all(&directory).map_err(|e| EbpfError::Io(directory.clone(), e))?;
        let pinned = self.pin_all(&directory);
        if pinned.is_err() {
            // Half pinned is not persisted: take back what was pinned; dropping the fix then
            // detaches the programs.
            remove_pins(&directory);
        }
        pinned.map(|()| directory)
    }

    fn pin_all(&self, directory: &Path) -> Result<(), EbpfError> {
        let counts = self
            .ebpf
            .map("counts")
            .ok_or_else(|| EbpfError::Kernel("the object has no counts map".into()))?;
        counts.pin(directory.join(COUNTS_PIN)).map_err(|e| refused(&e, Attach::Cgroup))?;
        for name in PINS {
            let program = self
                .ebpf
                .program(name)
                .ok_or_else(|| EbpfError::Kernel(format!("the object has no program {name}")))?;
            let program_id = program.info().map_err(|e| refused(&e, Attach::Cgroup))?.id();
            let link = aya::programs::loaded_links()
                .filter_map(Result::ok)
                .find(|link| link.program_id() == program_id)
                .ok_or_else(|| EbpfError::Kernel(format!("no link of {name} found to pin")))?;
            pin(&link_fd(link.id())?, &directory.join(name))?;
        }
        Ok(())
    }
}

/// Removes a persisted fix's pins and directory, whatever is there.
fn remove_pins(directory: &Path) {
    for name in PINS.iter().chain(&[COUNTS_PIN]) {
        let _ = std::fs::remove_file(directory.join(name));
    }
    let _ = std::fs::remove_dir(directory);
}

/// Undoes `fix --persist` on `cgroup`: reads the counters, then removes the pins (the kernel
/// releases the links, and the programs are detached). `None` when nothing is pinned for it.
pub fn undo_persisted(cgroup: &Cgroup) -> Result<Option<FixCounts>, EbpfError> {
    if !bpffs_mounted() {
        return Err(EbpfError::NoBpffs);
    }
    let directory = pin_directory(cgroup)?;
    if !directory.exists() {
        return Ok(None);
    }
    let map =
        aya::maps::MapData::from_pin(directory.join(COUNTS_PIN)).map_err(|e| refused(&e, Attach::Cgroup));
    let counts = map.and_then(|map| read_counts(&aya::maps::Map::Array(map)));
    // Undone whether or not the counters could be read: the user asked for the programs gone.
    remove_pins(&directory);
    if directory.exists() {
        return Err(EbpfError::Kernel(format!("{} could not be removed", directory.display())));
    }
    // Never zeros in their place.
    counts.map(Some).map_err(|error| {
        EbpfError::Kernel(format!("the programs are detached, but their counters could not be read: {error}"))
    })
}
