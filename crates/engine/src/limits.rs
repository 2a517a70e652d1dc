//! File-descriptor budget: every connection is a descriptor, so a run's `-c` is checked
//! against RLIMIT_NOFILE before it starts, and the soft limit is raised to the hard one first
//! (as most servers do), so that a default `ulimit -n` of 1024 is no ceiling.

use thiserror::Error;

/// Descriptors a run needs besides its sockets: stdio, one epoll per thread, the runtime's own.
const OVERHEAD_DESCRIPTORS: u64 = 16;

/// The process's limit on open descriptors after raising it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorLimit {
    /// The limit the kernel enforces now, in descriptors.
    pub soft: u64,
    /// The ceiling the soft limit may be raised to without privilege, in descriptors.
    pub hard: u64,
}

/// A run that could never open all its connections.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "-c {connections} needs about {needed} file descriptors, but this process may open at most {limit} \
     (ulimit -n, hard limit {limit}): lower -c, or raise the hard limit (ulimit -Hn as root, or LimitNOFILE)"
)]
pub struct DescriptorShortage {
    /// Connections the run asked for (`-c`).
    pub connections: u64,
    /// Descriptors the run would need (`descriptors_needed`).
    pub needed: u64,
    /// Descriptors this process may open.
    pub limit: u64,
}

/// Descriptors a run with this many connections and threads opens at most.
pub fn descriptors_needed(connections: u64, threads: u64) -> u64 {
    connections.saturating_add(threads).saturating_add(OVERHEAD_DESCRIPTORS)
}

/// The current limit, without changing it.
pub fn descriptor_limit() -> DescriptorLimit {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct through a valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return DescriptorLimit { soft: u64::MAX, hard: u64::MAX };
    }
    // rlim_t is u64 on Linux; `as` keeps other targets building.
    #[allow(clippy::unnecessary_cast)]
    DescriptorLimit { soft: limit.rlim_cur as u64, hard: limit.rlim_max as u64 }
}

/// Raises the soft limit to the hard one, then checks that `connections` fit.
pub fn reserve_descriptors(connections: u64, threads: u64) -> Result<DescriptorLimit, DescriptorShortage> {
    let mut limit = descriptor_limit();
    if limit.soft < limit.hard {
        let raised =
            libc::rlimit { rlim_cur: limit.hard as libc::rlim_t, rlim_max: limit.hard as libc::rlim_t };
        // SAFETY: setrlimit reads one rlimit struct through a valid pointer. Raising the soft
        // limit up to the hard one needs no privilege; if it fails we check the old limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.soft = limit.hard;
        }
    }
    let needed = descriptors_needed(connections, threads);
    if needed > limit.soft {
        return Err(DescriptorShortage { connections, needed, limit: limit.soft });
    }
    Ok(limit)
}

/// The one-line message for running out of descriptors in the middle of a run (something else
/// in the process or on the system used them up).
pub fn out_of_descriptors_message(connections: u64, threads: u64, error: &std::io::Error) -> String {
    format!(
        "out of file descriptors ({error}): -c {connections} needs ~{}, the limit is {}; raise it with ulimit -n",
        descriptors_needed(connections, threads),
        descriptor_limit().soft
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_more_connections_than_the_hard_limit_allows() {
        let hard = descriptor_limit().hard;
        if hard >= u64::MAX - OVERHEAD_DESCRIPTORS {
            return; // unlimited: nothing to refuse
        }
        let too_many = hard.saturating_sub(OVERHEAD_DESCRIPTORS);
        let error = reserve_descriptors(too_many, 4).unwrap_err();
        assert_eq!(error.limit, hard);
        assert!(error.to_string().contains(&format!("-c {too_many} needs about")), "{error}");
        let granted = reserve_descriptors(10, 1).expect("ten connections fit any limit");
        assert_eq!(granted.soft, granted.hard, "the soft limit is raised to the hard one");
    }

    #[test]
    fn needed_never_overflows() {
        assert_eq!(descriptors_needed(u64::MAX, 8), u64::MAX);
    }
}
