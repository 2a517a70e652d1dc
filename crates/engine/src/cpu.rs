//! The CPU this process has used (user + system, every thread): how busy the generator
//! itself was over a run, so that a saturated generator is said, not mistaken for the server.

use std::time::Duration;

/// User plus system CPU time of the whole process so far (`getrusage(RUSAGE_SELF)`);
/// zero if the kernel refuses.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given and reads nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let of =
        |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.clamp(0, 999_999) * 1000) as u32);
    of(usage.ru_utime) + of(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu_time();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        assert!(process_cpu_time() > before);
    }
}
