//! Which of nodelay's programs a cgroup carries: the kernel's list of the programs in effect
//! there (BPF_PROG_QUERY with BPF_F_QUERY_EFFECTIVE, so those attached to a cgroup above it
//! count too), matched by name to `fix --cgroup`'s two. aya 0.14 has no public query for
//! these attach types, so this is the one raw bpf(2) call of the crate.
#![allow(unsafe_code)]

use crate::{CarriedPrograms, Cgroup, EbpfError};
use std::os::fd::AsRawFd;

/// The program names bpf/fix_nodelay.bpf.c gives, as the kernel keeps them (15 bytes at most).
pub(crate) const SOCK_OPS_NAME: &str = "nodelay_sockops";
pub(crate) const SETSOCKOPT_NAME: &str = "nodelay_keep";

const BPF_PROG_QUERY: libc::c_long = 16;
const BPF_F_QUERY_EFFECTIVE: u32 = 1;
const BPF_CGROUP_SOCK_OPS: u32 = 3;
const BPF_CGROUP_SETSOCKOPT: u32 = 22;
/// More programs of one type on one cgroup than anyone attaches.
const MOST_PROGRAMS: usize = 64;

/// The query part of `union bpf_attr` (include/uapi/linux/bpf.h), up to `revision`.
#[repr(C)]
#[derive(Default)]
struct ProgQuery {
    target_fd: u32,
    attach_type: u32,
    query_flags: u32,
    attach_flags: u32,
    prog_ids: u64,
    prog_count: u32,
    _padding: u32,
    prog_attach_flags: u64,
    link_ids: u64,
    link_attach_flags: u64,
    revision: u64,
}

impl Cgroup {
    /// Which of nodelay's programs are in effect on this cgroup, attached to it or above it.
    pub fn nodelay_programs(&self) -> Result<CarriedPrograms, EbpfError> {
        let directory =
            std::fs::File::open(self.path()).map_err(|e| EbpfError::Io(self.path().to_path_buf(), e))?;
        let sock_ops = query(&directory, BPF_CGROUP_SOCK_OPS)?;
        let setsockopt = query(&directory, BPF_CGROUP_SETSOCKOPT)?;
        if sock_ops.is_empty() && setsockopt.is_empty() {
            return Ok(CarriedPrograms::default());
        }
        let mut carried = CarriedPrograms::default();
        for program in aya::programs::loaded_programs() {
            // Walking the loaded programs needs CAP_SYS_ADMIN: without it, unknown, not "none".
            let program = program.map_err(|e| crate::refused::refused(&e, crate::refused::Attach::Cgroup))?;
            let name = program.name_as_str().unwrap_or_default();
            carried.sock_ops |= name == SOCK_OPS_NAME && sock_ops.contains(&program.id());
            carried.setsockopt |= name == SETSOCKOPT_NAME && setsockopt.contains(&program.id());
        }
        Ok(carried)
    }
}

/// The IDs of the programs in effect on the cgroup `directory` for `attach_type`.
fn query(directory: &std::fs::File, attach_type: u32) -> Result<Vec<u32>, EbpfError> {
    let mut ids = [0u32; MOST_PROGRAMS];
    let mut attr = ProgQuery {
        target_fd: directory.as_raw_fd() as u32,
        attach_type,
        query_flags: BPF_F_QUERY_EFFECTIVE,
        prog_ids: ids.as_mut_ptr() as u64,
        prog_count: MOST_PROGRAMS as u32,
        ..ProgQuery::default()
    };
    // SAFETY: bpf(2) reads `attr` (a live, initialised struct of the size passed) and writes at
    // most `prog_count` IDs into `ids`, which outlives the call, and the count back into `attr`.
    let result = unsafe {
        libc::syscall(libc::SYS_bpf, BPF_PROG_QUERY, &mut attr as *mut ProgQuery, size_of::<ProgQuery>())
    };
    if result < 0 {
        let error = std::io::Error::last_os_error();
        return Err(match error.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => {
                EbpfError::Permission { needs: "CAP_NET_ADMIN", reason: error.to_string() }
            }
            _ => EbpfError::Kernel(format!("querying {}: {error}", directory_name(directory))),
        });
    }
    Ok(ids[..(attr.prog_count as usize).min(MOST_PROGRAMS)].to_vec())
}

fn directory_name(directory: &std::fs::File) -> String {
    std::fs::read_link(format!("/proc/self/fd/{}", directory.as_raw_fd()))
        .map_or_else(|_| "the cgroup".into(), |path| path.display().to_string())
}
