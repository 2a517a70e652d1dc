//! A real network path on one machine, for tests, benchmarks and anyone reproducing a slow
//! service: two network namespaces, each with a TUN device, joined by this process, which
//! moves every IP packet from one to the other after a one-way delay, maybe dropping it, at a
//! chosen link rate. Both kernels run real TCP over it, so delayed ACK, Nagle, slow start
//! and retransmission behave as across a WAN. (Kernels without the netem qdisc, as here,
//! cannot do this in the kernel.)
//!
//! [`PathSpec`] is what the path is (parsed and validated from text), [`schedule`] decides
//! when each packet leaves (pure, tested), [`Path`] builds the namespaces and forwards.
#![warn(missing_docs)]

mod forward;
mod namespaces;
mod path;
pub mod schedule;
mod spec;
mod tun;

pub use path::{CLIENT_IP, Path, SERVER_IP};
pub use spec::{PathSpec, SpecError, parse_duration, parse_loss_percent, parse_name, parse_rate};

/// Blocks until this process is asked to stop (SIGTERM, SIGINT or SIGHUP), without letting
/// those signals kill it, so the caller can take its path down first. Call it before
/// starting any thread: threads inherit the blocked mask.
pub fn block_termination_signals() -> TerminationSignals {
    // SAFETY: the set is initialised by sigemptyset before use; pthread_sigmask reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        TerminationSignals { set }
    }
}

/// The signals [`block_termination_signals`] blocked, to wait for.
pub struct TerminationSignals {
    set: libc::sigset_t,
}

impl TerminationSignals {
    /// Waits for one of the signals; returns its number.
    pub fn wait(&self) -> i32 {
        let mut signal = 0;
        // SAFETY: the set was initialised; `signal` is written by the call.
        unsafe { libc::sigwait(&self.set, &mut signal) };
        signal
    }
}

/// Asks the kernel to send this process SIGTERM when the thread that started it exits, so
/// a path started by a test that is killed does not outlive it.
pub fn end_with_parent() {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) };
}

/// Whether this process runs as root, which making namespaces and TUN devices needs.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
