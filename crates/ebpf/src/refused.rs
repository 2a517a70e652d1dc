//! aya's errors as one line a user can act on (crate::EbpfError).

use crate::EbpfError;

/// An error of aya's as a one-line reason: the verifier's last line when it refused a
/// program; privilege when the kernel said EPERM or EACCES and this process lacks the
/// capabilities; the kernel's refusal otherwise.
pub(crate) fn refused(error: &(dyn std::error::Error + 'static), attach: Attach) -> EbpfError {
    if let Some(aya::programs::ProgramError::LoadError { io_error, verifier_log }) =
        error.downcast_ref::<aya::programs::ProgramError>()
    {
        let log = verifier_log.to_string();
        let last = log.lines().rev().find(|line| !line.trim().is_empty() && !line.starts_with("processed"));
        return EbpfError::Kernel(format!(
            "the verifier refused a program ({io_error}): {}",
            last.unwrap_or("no log")
        ));
    }
    let mut reasons = Vec::new();
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && matches!(io.raw_os_error(), Some(libc::EPERM | libc::EACCES))
            && !has_bpf_capabilities(attach)
        {
            return EbpfError::Permission { needs: attach.capability().1, reason: io.to_string() };
        }
        reasons.push(current.to_string());
        cause = current.source();
    }
    let reason = reasons.join(": ");
    EbpfError::Kernel(
        reason.lines().rfind(|line| !line.trim().is_empty()).unwrap_or("no reason given").into(),
    )
}

/// What the programs attach to, which names the capability they need besides CAP_BPF.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Attach {
    /// A cgroup's hooks: CAP_NET_ADMIN.
    Cgroup,
    /// Tracepoints: CAP_PERFMON.
    Tracing,
}

impl Attach {
    /// The capability's number and name.
    pub(crate) fn capability(self) -> (u32, &'static str) {
        match self {
            Attach::Cgroup => (12, "CAP_NET_ADMIN"),
            Attach::Tracing => (38, "CAP_PERFMON"),
        }
    }
}

/// Whether this process holds CAP_SYS_ADMIN, or CAP_BPF with the capability `attach` needs
/// (its effective set in /proc/self/status): without, EPERM means privilege; with, something
/// else.
fn has_bpf_capabilities(attach: Attach) -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_BPF: u32 = 39;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let has = |capability: u32| effective & (1 << capability) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(attach.capability().0))
}
