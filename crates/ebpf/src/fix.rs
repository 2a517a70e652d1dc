//! `nodelay fix --cgroup`: the programs of bpf/fix_nodelay.bpf.c attached to one cgroup for
//! as long as the [`CgroupFix`] lives. The attachments are bpf links owned by this process:
//! dropping it, or the process ending however it ends, detaches them, so nothing is left
//! behind in the kernel.

use crate::query::{SETSOCKOPT_NAME, SOCK_OPS_NAME};
use crate::refused::{Attach, refused};
use crate::{Cgroup, EbpfError, FixCounts};
use aya::maps::Array;
use aya::programs::{CgroupAttachMode, CgroupSockopt, SockOps};

#[cfg(nodelay_bpf)]
static OBJECT: Option<&[u8]> =
    Some(aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/fix_nodelay.bpf.o")));
#[cfg(not(nodelay_bpf))]
static OBJECT: Option<&[u8]> = None;

/// The counters' slots, as bpf/fix_nodelay.bpf.c numbers them.
const CONNECTIONS_SET: u32 = 0;
const SET_REFUSED: u32 = 1;
const TURN_OFFS_KEPT: u32 = 2;

/// nodelay's programs, attached to a cgroup: every connection established there from now on
/// gets TCP_NODELAY, and the programs' own attempts to turn it off are kept from doing so.
pub struct CgroupFix {
    pub(crate) ebpf: aya::Ebpf,
    pub(crate) cgroup: Cgroup,
}

impl CgroupFix {
    /// Loads the programs and attaches them to `cgroup` (and so to every cgroup below it).
    pub fn attach(cgroup: Cgroup) -> Result<CgroupFix, EbpfError> {
        let object = OBJECT.ok_or(EbpfError::NotBuilt)?;
        // bpf_setsockopt takes TCP_NODELAY from 6.1 on; before, it refuses every connection.
        // (Before 5.7 aya would also attach without links, which outlive the process.)
        let kernel = aya::util::KernelVersion::current().map_err(|e| EbpfError::Kernel(e.to_string()))?;
        if kernel < aya::util::KernelVersion::new(6, 1, 0) {
            return Err(EbpfError::KernelTooOld(format!("{kernel:?}")));
        }
        let mut ebpf = aya::Ebpf::load(object).map_err(|e| refused(&e, Attach::Cgroup))?;
        let directory =
            std::fs::File::open(cgroup.path()).map_err(|e| EbpfError::Io(cgroup.path().to_path_buf(), e))?;
        let sock_ops: &mut SockOps = program(&mut ebpf, SOCK_OPS_NAME)?;
        sock_ops.load().map_err(|e| refused(&e, Attach::Cgroup))?;
        sock_ops.attach(&directory, CgroupAttachMode::Single).map_err(|e| refused(&e, Attach::Cgroup))?;
        let keep: &mut CgroupSockopt = program(&mut ebpf, SETSOCKOPT_NAME)?;
        keep.load().map_err(|e| refused(&e, Attach::Cgroup))?;
        keep.attach(&directory, CgroupAttachMode::Single).map_err(|e| refused(&e, Attach::Cgroup))?;
        Ok(CgroupFix { ebpf, cgroup })
    }

    /// The cgroup the programs are attached to.
    pub fn cgroup(&self) -> &Cgroup {
        &self.cgroup
    }

    /// What the programs have counted so far.
    pub fn counts(&self) -> Result<FixCounts, EbpfError> {
        let map = self
            .ebpf
            .map("counts")
            .ok_or_else(|| EbpfError::Kernel("the object has no counts map".into()))?;
        read_counts(map)
    }

    /// Detaches the programs and returns their final counts.
    pub fn detach(self) -> Result<FixCounts, EbpfError> {
        let counts = self.counts();
        drop(self.ebpf);
        counts
    }
}

/// The counters of the `counts` map (the fix's own, or one pinned by `--persist`).
pub(crate) fn read_counts(map: &aya::maps::Map) -> Result<FixCounts, EbpfError> {
    let counts: Array<_, u64> = Array::try_from(map).map_err(|e| refused(&e, Attach::Cgroup))?;
    let read = |slot| counts.get(&slot, 0).map_err(|e| refused(&e, Attach::Cgroup));
    Ok(FixCounts {
        connections_set: read(CONNECTIONS_SET)?,
        set_refused: read(SET_REFUSED)?,
        turn_offs_kept: read(TURN_OFFS_KEPT)?,
    })
}

/// The object's program `name` as type `P`.
fn program<'a, P>(ebpf: &'a mut aya::Ebpf, name: &str) -> Result<&'a mut P, EbpfError>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let found = ebpf
        .program_mut(name)
        .ok_or_else(|| EbpfError::Kernel(format!("the object has no program {name}")))?;
    found.try_into().map_err(|e: aya::programs::ProgramError| refused(&e, Attach::Cgroup))
}
