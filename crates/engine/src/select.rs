//! Picks the request each connection sends next: in sequence, or weighted at random with a
//! generator seeded by the connection slot (repeatable runs, no shared state).

use crate::config::Selection;

#[derive(Debug, Clone)]
pub(crate) struct RequestPicker {
    /// Running sums of the weights; empty for sequence mode.
    cumulative: Vec<u64>,
    count: usize,
    rng: fastrand::Rng,
    next_in_sequence: usize,
}

impl RequestPicker {
    pub fn new(selection: &Selection, count: usize, slot: u32) -> Self {
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
        RequestPicker {
            cumulative,
            count: count.max(1),
            rng: fastrand::Rng::with_seed(0x6e6f_6465_6c61_7900 ^ u64::from(slot)),
            next_in_sequence: slot as usize % count.max(1),
        }
    }

    pub fn next(&mut self) -> usize {
        match self.cumulative.last() {
            Some(&total) if total > 0 => {
                let ticket = self.rng.u64(0..total);
                self.cumulative.partition_point(|&sum| sum <= ticket)
            }
            _ => {
                let index = self.next_in_sequence;
                self.next_in_sequence = (index + 1) % self.count;
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
        let mut picker = RequestPicker::new(&Selection::Sequence, 3, 1);
        let picks: Vec<usize> = (0..5).map(|_| picker.next()).collect();
        assert_eq!(picks, vec![1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_are_respected_and_zero_weight_never_picked() {
        let mut picker = RequestPicker::new(&Selection::Weighted(vec![3, 0, 1]), 3, 0);
        let mut counts = [0; 3];
        for _ in 0..4000 {
            counts[picker.next()] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((2700..3300).contains(&counts[0]), "{counts:?}");
    }
}
