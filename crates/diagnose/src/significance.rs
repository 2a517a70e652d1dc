//! Whether two sets of rounds differ: the Mann-Whitney U test (as benchstat uses) over the
//! rounds' figures, and the Hodges-Lehmann estimate of their ratio with its confidence
//! interval from the same test. Rounds, not single requests, are the samples: the requests of
//! one round share its moment of the machine (another process's burst, a frequency change),
//! so they are not independent, and a test over thousands of them would call noise real.

use nodelay_tcp::quantile::nearest_rank;

/// Below this p-value a difference is called real (benchstat's default alpha).
pub const ALPHA: f64 = 0.05;
/// A ratio whose whole confidence interval lies within this of 1 is no difference that
/// matters: the same server measured against itself in interleaved rounds on a busy
/// machine moves this much.
pub const SMALLEST_DIFFERENCE: f64 = 0.05;
/// Exact distributions are counted up to this many pairs of rounds (20 against 20); beyond,
/// the normal approximation is close.
const MAX_EXACT_PAIRS: usize = 400;

/// How a target's rounds compare with the first target's on one figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// The Hodges-Lehmann estimate of other / first: the median of the ratios of every round
    /// of the other to every round of the first.
    pub ratio: f64,
    /// The ratio's confidence interval (about 95 %); `None` with too few rounds for one.
    pub interval: Option<(f64, f64)>,
    /// Two-sided p-value of the Mann-Whitney U test.
    pub p_value: f64,
    /// Every round of one is above every round of the other.
    pub every_round_agrees: bool,
    /// The significance level the difference was judged at, and the interval drawn at
    /// (1 - alpha).
    pub alpha: f64,
}

impl Difference {
    /// A difference beyond round-to-round noise: the test is significant and the whole
    /// interval is further than [`SMALLEST_DIFFERENCE`] from 1 (the estimate when there is no
    /// interval).
    pub fn is_real(&self) -> bool {
        let beyond = |ratio: f64| (ratio - 1.0).abs() > SMALLEST_DIFFERENCE;
        let (low, high) = self.interval.unwrap_or((self.ratio, self.ratio));
        self.p_value < self.alpha && ((low > 1.0 && beyond(low)) || (high < 1.0 && beyond(high)))
    }
}

/// The smallest two-sided p-value the test can give `n` rounds against `m`: when every round
/// of one lies beyond every round of the other, 2 / C(n + m, n). Below [`ALPHA`] only from
/// 4 rounds against 4 (3 against 3 reach 0.1 at best).
pub fn least_p_value(n: usize, m: usize) -> f64 {
    // Built up as a product to stay finite.
    let ways = (1..=n).fold(1.0, |ways, i| ways * (m + i) as f64 / i as f64);
    (2.0 / ways).min(1.0)
}

/// Compares `other`'s rounds with `first`'s at [`ALPHA`]. Figures must be positive
/// (latencies, rates); `None` when either side has no round or a figure is not positive and
/// finite.
pub fn compare_rounds(first: &[f64], other: &[f64]) -> Option<Difference> {
    compare_rounds_at(first, other, ALPHA)
}

/// [`compare_rounds`] at the significance level `alpha` (benchstat's `-alpha`): the
/// interval is then the (1 - alpha) one.
pub fn compare_rounds_at(first: &[f64], other: &[f64], alpha: f64) -> Option<Difference> {
    let valid = |values: &[f64]| !values.is_empty() && values.iter().all(|v| v.is_finite() && *v > 0.0);
    if !valid(first) || !valid(other) {
        return None;
    }
    let (n, m) = (first.len(), other.len());
    // U counts the pairs in which the other's round is the larger (ties count half).
    let u: f64 = first
        .iter()
        .flat_map(|x| {
            other.iter().map(move |y| {
                if y > x {
                    1.0
                } else if y == x {
                    0.5
                } else {
                    0.0
                }
            })
        })
        .sum();
    let ties = has_ties(first, other);
    let exact = (!ties && n * m <= MAX_EXACT_PAIRS).then(|| UDistribution::new(n, m));
    let p_value = match &exact {
        Some(distribution) => distribution.two_sided_p(u as usize),
        None => normal_two_sided_p(u, first, other),
    };
    let mut log_ratios: Vec<f64> =
        first.iter().flat_map(|x| other.iter().map(move |y| (y / x).ln())).collect();
    log_ratios.sort_by(f64::total_cmp);
    // The median by nodelay's one definition (the nearest rank; `nodelay_tcp::quantile`).
    let ratio = nearest_rank(&log_ratios, 0.5).unwrap_or(0.0).exp();
    // The interval runs from the k-th smallest to the k-th largest ratio, k the largest count
    // of pairs U falls short of with probability at most alpha/2 (Hollander & Wolfe).
    let k = match &exact {
        Some(distribution) => distribution.lower_critical(alpha / 2.0),
        None => normal_lower_critical(n, m, alpha),
    };
    let interval = (k >= 1 && k <= log_ratios.len())
        .then(|| (log_ratios[k - 1].exp(), log_ratios[log_ratios.len() - k].exp()));
    let (first_min, first_max) = min_max(first);
    let (other_min, other_max) = min_max(other);
    Some(Difference {
        ratio,
        interval,
        p_value,
        every_round_agrees: other_min > first_max || other_max < first_min,
        alpha,
    })
}

fn has_ties(first: &[f64], other: &[f64]) -> bool {
    let mut all: Vec<f64> = first.iter().chain(other).copied().collect();
    all.sort_by(f64::total_cmp);
    all.windows(2).any(|w| w[0] == w[1])
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)))
}

/// The exact null distribution of U for n against m rounds without ties.
struct UDistribution {
    /// P(U <= u) for u = 0..=n*m.
    cumulative: Vec<f64>,
}

impl UDistribution {
    fn new(n: usize, m: usize) -> Self {
        // counts[j][u]: orderings of i first-rounds and j other-rounds with U = u, built up
        // over i (the classic recurrence on the largest value's owner).
        let mut counts: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
        for i in 1..=n {
            let mut next: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
            next.push(vec![1.0]);
            for j in 1..=m {
                // The largest is a first-round (adds nothing) or an other-round (adds i).
                let without_first = &counts[j];
                let without_other = &next[j - 1];
                let mut row = vec![0.0; i * j + 1];
                for (u, count) in without_first.iter().enumerate() {
                    row[u] += count;
                }
                for (u, count) in without_other.iter().enumerate() {
                    row[u + i] += count;
                }
                next.push(row);
            }
            counts = next;
        }
        let row = &counts[m];
        let total: f64 = row.iter().sum();
        let mut running = 0.0;
        let cumulative = row
            .iter()
            .map(|count| {
                running += count / total;
                running
            })
            .collect();
        UDistribution { cumulative }
    }

    fn at_most(&self, u: usize) -> f64 {
        self.cumulative[u.min(self.cumulative.len() - 1)]
    }

    fn two_sided_p(&self, u: usize) -> f64 {
        let max = self.cumulative.len() - 1;
        let lower = self.at_most(u);
        // Symmetric: P(U >= u) = P(U <= max - u).
        let upper = self.at_most(max - u);
        (2.0 * lower.min(upper)).min(1.0)
    }

    /// The largest k with P(U <= k - 1) <= tail (0 when even U = 0 is likelier).
    fn lower_critical(&self, tail: f64) -> usize {
        self.cumulative.iter().take_while(|p| **p <= tail).count()
    }
}

/// The two-sided p-value from the normal approximation, with the tie correction and a
/// continuity correction.
fn normal_two_sided_p(u: f64, first: &[f64], other: &[f64]) -> f64 {
    let (n, m) = (first.len() as f64, other.len() as f64);
    let mean = n * m / 2.0;
    let mut all: Vec<f64> = first.iter().chain(other).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < all.len() {
        let end = all[start..].iter().take_while(|v| **v == all[start]).count() + start;
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    let total = n + m;
    let variance = n * m / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * (1.0 - standard_normal_cdf(z))).min(1.0)
}

fn normal_lower_critical(n: usize, m: usize, alpha: f64) -> usize {
    let (n, m) = (n as f64, m as f64);
    let z = standard_normal_quantile(1.0 - alpha / 2.0);
    let k = n * m / 2.0 - z * (n * m * (n + m + 1.0) / 12.0).sqrt();
    k.floor().max(0.0) as usize
}

/// The z with Φ(z) = `probability` (0.5 to 1), by bisection: Φ rises, and 60 halvings of
/// [0, 40] leave an error far below Φ's own.
fn standard_normal_quantile(probability: f64) -> f64 {
    let (mut low, mut high) = (0.0_f64, 40.0_f64);
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if standard_normal_cdf(middle) < probability {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

/// Numerical Recipes' erfc polynomial in t, from the constant term up. (Written nested, as
/// Horner's rule reads, the expression took rustfmt 14 s: most of the suite's fmt phase.)
const ERFC_COEFFICIENTS: [f64; 10] = [
    -1.265_512_23,
    1.000_023_68,
    0.374_091_96,
    0.096_784_18,
    -0.186_288_06,
    0.278_868_07,
    -1.135_203_98,
    1.488_515_87,
    -0.822_152_23,
    0.170_872_77,
];

/// Φ(z), by the complementary error function (Numerical Recipes' erfc, |error| < 1.2e-7).
fn standard_normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    // Horner's rule over every term but the constant, added as the nested form adds it.
    let [constant, higher @ ..] = ERFC_COEFFICIENTS;
    let rest = higher.iter().rev().fold(0.0, |sum, &coefficient| coefficient + t * sum);
    let tau = t * (-x * x + constant + t * rest).exp();
    let erfc = if x >= 0.0 { tau } else { 2.0 - tau };
    1.0 - erfc / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_p_of_a_few_rounds_is_known() {
        assert!((least_p_value(3, 3) - 0.1).abs() < 1e-12);
        assert!((least_p_value(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((least_p_value(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(least_p_value(1, 1), 1.0);
    }

    #[test]
    fn five_rounds_all_apart_give_benchstats_p_value() {
        // Every one of 5 rounds above every one of 5: p = 2/252, the smallest 5+5 allow.
        let first = [1.0, 1.1, 1.2, 1.05, 1.15];
        let other = [4.0, 4.4, 4.2, 4.1, 4.3];
        let d = compare_rounds(&first, &other).unwrap();
        assert!((d.p_value - 2.0 / 252.0).abs() < 1e-12, "{d:?}");
        assert!(d.every_round_agrees);
        assert!(d.ratio > 3.4 && d.ratio < 4.2, "{d:?}");
        let (low, high) = d.interval.unwrap();
        assert!(low <= d.ratio && d.ratio <= high && low > 3.0, "{d:?}");
        assert!(d.is_real());
        // The other way round: the same p, the inverse ratio.
        let back = compare_rounds(&other, &first).unwrap();
        assert!((back.p_value - d.p_value).abs() < 1e-12);
        assert!((back.ratio * d.ratio - 1.0).abs() < 1e-9);
    }

    #[test]
    fn exact_distribution_matches_known_tables() {
        // n = m = 5: P(U <= 2) = 4/252, P(U <= 3) = 7/252; the 95 % interval uses k = 3.
        let distribution = UDistribution::new(5, 5);
        assert!((distribution.at_most(2) - 4.0 / 252.0).abs() < 1e-12);
        assert!((distribution.at_most(3) - 7.0 / 252.0).abs() < 1e-12);
        assert_eq!(distribution.lower_critical(0.025), 3);
        // n = 3, m = 4: 35 orderings, P(U <= 0) = 1/35.
        assert!((UDistribution::new(3, 4).at_most(0) - 1.0 / 35.0).abs() < 1e-12);
        assert!((UDistribution::new(3, 4).at_most(12) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn interleaved_rounds_are_no_difference() {
        let first = [1.00, 1.03, 0.98, 1.01, 0.99];
        let other = [1.02, 0.97, 1.00, 1.04, 0.995];
        let d = compare_rounds(&first, &other).unwrap();
        assert!(d.p_value > 0.5, "{d:?}");
        assert!(!d.every_round_agrees);
        assert!(!d.is_real());
    }

    #[test]
    fn a_small_difference_every_round_agrees_on_is_not_one_that_matters() {
        let first = [1.00, 1.001, 1.002, 1.003, 1.004];
        let other = [1.02, 1.021, 1.022, 1.023, 1.024];
        let d = compare_rounds(&first, &other).unwrap();
        assert!(d.p_value < ALPHA && d.every_round_agrees);
        assert!(!d.is_real(), "2 % is within the noise floor: {d:?}");
    }

    #[test]
    fn ties_and_many_rounds_use_the_normal_approximation() {
        let first: Vec<f64> = (0..30).map(|i| 1.0 + (i % 5) as f64 * 0.01).collect();
        let other: Vec<f64> = (0..30).map(|i| 2.0 + (i % 5) as f64 * 0.01).collect();
        let d = compare_rounds(&first, &other).unwrap();
        assert!(d.p_value < 1e-6, "{d:?}");
        assert!((d.ratio - 2.0).abs() < 0.05, "{d:?}");
        let same = compare_rounds(&first, &first).unwrap();
        assert!(same.p_value > 0.9, "{same:?}");
        assert!((standard_normal_cdf(1.959_963_985) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn a_stricter_alpha_needs_more_rounds_and_draws_a_wider_interval() {
        // 5 rounds all apart reach p = 0.008: real at 0.05, not at 0.001.
        let first = [1.0, 1.1, 1.2, 1.05, 1.15];
        let other = [4.0, 4.4, 4.2, 4.1, 4.3];
        let strict = compare_rounds_at(&first, &other, 0.001).unwrap();
        assert!(!strict.is_real() && compare_rounds(&first, &other).unwrap().is_real(), "{strict:?}");
        // Many rounds: the 99.9 % interval holds the 95 % one.
        let first: Vec<f64> = (0..30).map(|i| 1.0 + i as f64 * 0.013).collect();
        let other: Vec<f64> = (0..30).map(|i| 1.2 + i as f64 * 0.011).collect();
        let wide = compare_rounds_at(&first, &other, 0.001).unwrap().interval.unwrap();
        let usual = compare_rounds(&first, &other).unwrap().interval.unwrap();
        assert!(wide.0 < usual.0 && wide.1 > usual.1, "{wide:?} {usual:?}");
        assert!((standard_normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((standard_normal_quantile(0.9995) - 3.290_527).abs() < 1e-4);
    }

    #[test]
    fn nothing_to_compare_is_none() {
        assert!(compare_rounds(&[], &[1.0]).is_none());
        assert!(compare_rounds(&[1.0, 0.0], &[1.0]).is_none());
        assert!(compare_rounds(&[1.0, f64::NAN], &[1.0]).is_none());
    }

    #[test]
    fn two_rounds_each_have_no_interval() {
        let d = compare_rounds(&[1.0, 1.1], &[3.0, 3.1]).unwrap();
        assert!(d.interval.is_none(), "{d:?}");
        assert!(d.p_value > ALPHA, "2+2 rounds can never be significant: {d:?}");
        assert!(!d.is_real());
    }
}
