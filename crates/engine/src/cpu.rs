//! The CPU the generator has used: how busy it was over a run, so that a saturated generator
//! is said, not mistaken for the server.

use std::time::Duration;

/// User plus system CPU time of the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`): a
/// worker's own, without the sampler or the progress bar beside it; zero if refused.
pub fn thread_cpu_time() -> Duration {
    // SAFETY: clock_gettime writes into the zeroed struct it is given and reads nothing else.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec.max(0) as u64, now.tv_nsec.clamp(0, 999_999_999) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_counts_its_own_cpu_only() {
        // Spins until its own CPU time shows 30 ms, not for 30 ms of wall time: on a machine
        // whose cores are busy with other work, 30 ms of wall time gave less than 20 ms of CPU.
        let started = std::time::Instant::now();
        let sleeper = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(40));
            thread_cpu_time()
        });
        while thread_cpu_time() < Duration::from_millis(30) && started.elapsed() < Duration::from_secs(10) {
            std::hint::black_box(started.elapsed());
        }
        assert!(thread_cpu_time() >= Duration::from_millis(30), "spinning counted no CPU in 10 s");
        assert!(sleeper.join().unwrap() < Duration::from_millis(10), "sleeping costs no CPU");
    }
}
