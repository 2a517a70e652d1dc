//! Off Linux there is no eBPF: every mode says so.

use crate::{CarriedPrograms, Cgroup, EbpfError, FixCounts};

/// Never attached: [`CgroupFix::attach`] fails with [`EbpfError::Unsupported`].
pub struct CgroupFix {
    cgroup: Cgroup,
}

impl CgroupFix {
    /// Fails: eBPF needs Linux.
    pub fn attach(_cgroup: Cgroup) -> Result<CgroupFix, EbpfError> {
        Err(EbpfError::Unsupported)
    }

    /// The cgroup.
    pub fn cgroup(&self) -> &Cgroup {
        &self.cgroup
    }

    /// Nothing was ever counted.
    pub fn counts(&self) -> Result<FixCounts, EbpfError> {
        Ok(FixCounts::default())
    }

    /// Nothing to detach.
    pub fn detach(self) -> Result<FixCounts, EbpfError> {
        Ok(FixCounts::default())
    }
}

impl Cgroup {
    /// Unknown: eBPF needs Linux.
    pub fn nodelay_programs(&self) -> Result<CarriedPrograms, EbpfError> {
        Err(EbpfError::Unsupported)
    }
}
