//! What the processes and their threads spent between two readings, as pure functions.

use std::collections::HashMap;

/// The threads kept in a view: enough to see a hot one among a pool.
pub const MAX_THREADS: usize = 16;

/// A process's CPU time so far, in clock ticks (/proc/PID/stat `utime`, `stime`): all its
/// threads, exited ones included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub system: u64,
}

impl CpuTicks {
    /// Since `start`; a process that was not there at the start counts from zero.
    pub fn since(self, start: Option<CpuTicks>) -> CpuTicks {
        let start = start.unwrap_or_default();
        CpuTicks {
            user: self.user.saturating_sub(start.user),
            system: self.system.saturating_sub(start.system),
        }
    }
}

pub fn ticks_to_us(ticks: u64, ticks_per_second: u64) -> u64 {
    let us = u128::from(ticks) * 1_000_000 / u128::from(ticks_per_second.max(1));
    u64::try_from(us).unwrap_or(u64::MAX)
}

/// A thread's scheduler times so far (/proc/PID/task/TID/schedstat), or their increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadTimes {
    pub pid: i32,
    pub tid: i32,
    pub on_cpu_ns: u64,
    pub waiting_for_cpu_ns: u64,
}

/// The threads that ran between `start` and `end`, busiest first, at most [`MAX_THREADS`].
/// A thread missing at the start appeared during the run and counts from zero; one missing
/// at the end vanished (its time stays in its process's CPU, not here).
pub fn busiest_threads(start: &[ThreadTimes], end: &[ThreadTimes]) -> Vec<ThreadTimes> {
    let before: HashMap<(i32, i32), &ThreadTimes> = start.iter().map(|t| ((t.pid, t.tid), t)).collect();
    let mut ran: Vec<ThreadTimes> = end
        .iter()
        .map(|now| {
            let (on_cpu_ns, waiting_ns) = before
                .get(&(now.pid, now.tid))
                .map_or((0, 0), |then| (then.on_cpu_ns, then.waiting_for_cpu_ns));
            ThreadTimes {
                on_cpu_ns: now.on_cpu_ns.saturating_sub(on_cpu_ns),
                waiting_for_cpu_ns: now.waiting_for_cpu_ns.saturating_sub(waiting_ns),
                ..*now
            }
        })
        // Below a microsecond it would read as 0 µs on CPU.
        .filter(|t| t.on_cpu_ns >= 1_000)
        .collect();
    ran.sort_by(|a, b| b.on_cpu_ns.cmp(&a.on_cpu_ns).then(a.tid.cmp(&b.tid)));
    ran.truncate(MAX_THREADS);
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(tid: i32, on_cpu_ms: u64, waiting_ms: u64) -> ThreadTimes {
        ThreadTimes {
            pid: 7,
            tid,
            on_cpu_ns: on_cpu_ms * 1_000_000,
            waiting_for_cpu_ns: waiting_ms * 1_000_000,
        }
    }

    #[test]
    fn threads_are_deltas_busiest_first_new_ones_from_zero_idle_and_vanished_ones_left_out() {
        let start = [times(1, 100, 5), times(2, 50, 0), times(3, 10, 1)];
        let end = [times(1, 130, 6), times(2, 50, 0), times(4, 80, 2)];
        assert_eq!(busiest_threads(&start, &end), [times(4, 80, 2), times(1, 30, 1)]);
    }

    #[test]
    fn at_most_sixteen_threads_are_kept() {
        let end: Vec<_> = (1..=40).map(|tid| times(tid, tid as u64, 0)).collect();
        let kept = busiest_threads(&[], &end);
        assert_eq!(kept.len(), MAX_THREADS);
        assert_eq!((kept[0].tid, kept[15].tid), (40, 25));
    }

    #[test]
    fn cpu_ticks_become_microseconds_since_the_start() {
        let now = CpuTicks { user: 130, system: 12 };
        assert_eq!(now.since(Some(CpuTicks { user: 100, system: 2 })), CpuTicks { user: 30, system: 10 });
        assert_eq!(now.since(None), now);
        assert_eq!(ticks_to_us(30, 100), 300_000);
        assert_eq!(ticks_to_us(u64::MAX, 100), u64::MAX, "saturates");
    }
}
