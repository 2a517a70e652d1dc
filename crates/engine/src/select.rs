//! Picks the request each connection sends next: in sequence, or weighted at random with a
//! generator seeded by the connection slot (repeatable runs, no shared state). The weights are
//! held once per thread (`RequestMix`); a connection keeps only its position and generator, so
//! a large scenario costs nothing per connection.

use crate::config::Selection;

/// The run's request mix, shared by a thread's connections.
#[derive(Debug, Clone)]
pub(crate) struct RequestMix {
    /// Running sums of the weights; empty for sequence mode.
    cumulative: Vec<u64>,
    count: usize,
}

/// One connection's place in the mix.
#[derive(Debug, Clone)]
pub(crate) struct RequestPicker {
    rng: fastrand::Rng,
    next_in_sequence: usize,
}

impl RequestMix {
    pub fn new(selection: &Selection, count: usize) -> Self {
        let cumulative = match selection {
            Selection::Sequence => Vec::new(),
            Selection::Weighted(weights) => weights
                .iter()
                .scan(0u64, |sum, &w| {
                    *sum += u64::from(w);
                    Some(*sum)
                })
                .collect(),
        };
        RequestMix { cumulative, count: count.max(1) }
    }

    /// Where connection `slot` starts.
    pub fn picker(&self, slot: u32) -> RequestPicker {
        RequestPicker {
            rng: fastrand::Rng::with_seed(0x6e6f_6465_6c61_7900 ^ u64::from(slot)),
            next_in_sequence: slot as usize % self.count,
        }
    }

    /// The index of the request `picker`'s connection sends next.
    pub fn next(&self, picker: &mut RequestPicker) -> usize {
        match self.cumulative.last() {
            Some(&total) if total > 0 => {
                let ticket = picker.rng.u64(0..total);
                self.cumulative.partition_point(|&sum| sum <= ticket)
            }
            _ => {
                let index = picker.next_in_sequence;
                picker.next_in_sequence = (index + 1) % self.count;
                index
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_cycles_from_a_slot_offset() {
        let mix = RequestMix::new(&Selection::Sequence, 3);
        let mut picker = mix.picker(1);
        let picks: Vec<usize> = (0..5).map(|_| mix.next(&mut picker)).collect();
        assert_eq!(picks, vec![1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_are_respected_and_zero_weight_never_picked() {
        let mix = RequestMix::new(&Selection::Weighted(vec![3, 0, 1]), 3);
        let mut picker = mix.picker(0);
        let mut counts = [0; 3];
        for _ in 0..4000 {
            counts[mix.next(&mut picker)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((2700..3300).contains(&counts[0]), "{counts:?}");
    }
}
