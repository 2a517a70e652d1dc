//! A run's time series: per interval (`EngineConfig::interval`, 1 s by default) the responses
//! that completed in it, the requests that failed in it, and their latency histogram.
//!
//! Memory stays bounded however long the run: only the last [`LIVE_INTERVALS`] intervals keep
//! a live histogram (16 KiB and up each); older ones are stored encoded (HdrHistogram's V2
//! format, with its run-length zeros: tens to a few hundred bytes for an interval whose
//! latencies cluster). A record that arrives for an interval already stored (a late one) is
//! still counted: that interval is decoded, added to and encoded again. What grows is one
//! small entry per interval of the run, never anything per request.
//!
//! An interval holds what *completed* in it: a response by the time its last byte was read
//! (`start_offset + total`), a failure by when it failed. The per-interval histograms add up
//! exactly to the run-wide one: same resolution, same values.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use nodelay_tcp::quantile::{SIGNIFICANT_DIGITS, histogram};
use std::time::{Duration, SystemTime};

/// The default interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// Intervals kept live behind the newest: records arrive roughly in time order per thread,
/// so the one before the newest still gets a few; older ones almost never.
const LIVE_INTERVALS: usize = 2;

/// Intervals at most: a record further out is counted in the last one (a week of 1 s
/// intervals; a run is never that long, this only keeps a bogus offset from allocating).
const MAX_INTERVALS: usize = 7 * 24 * 3600;

/// What one interval's latencies are kept as.
#[derive(Debug, Clone)]
enum Latency {
    /// Nothing completed in it (yet).
    Empty,
    /// One of the last intervals: recorded into directly.
    Live(Box<Histogram<u64>>),
    /// An older one: V2-encoded.
    Stored(Box<[u8]>),
}

#[derive(Debug, Clone)]
struct Slot {
    responses: u64,
    errors: u64,
    latency: Latency,
}

impl Slot {
    const EMPTY: Slot = Slot { responses: 0, errors: 0, latency: Latency::Empty };
}

/// The per-interval figures of a run (one thread's, or merged).
#[derive(Debug, Clone)]
pub struct Timeline {
    interval: Duration,
    /// The wall-clock time the run started, when known (for interval logs).
    started_at: Option<SystemTime>,
    /// How long the run lasted, when it has ended: the last interval ends there.
    elapsed: Option<Duration>,
    slots: Vec<Slot>,
    /// Slots before this one are `Empty` or `Stored`.
    live_from: usize,
}

/// One interval, decoded.
#[derive(Debug, Clone)]
pub struct IntervalFigures {
    /// From the start of the run to the start of the interval.
    pub start_offset: Duration,
    /// The interval's length: the run's interval, the last one cut at the run's end.
    pub duration: Duration,
    /// Responses that completed in the interval.
    pub responses: u64,
    /// Attempts that failed in the interval.
    pub errors: u64,
    /// The latencies of the interval's responses, in nanoseconds (empty when none).
    pub latency_ns: Histogram<u64>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(DEFAULT_INTERVAL)
    }
}

impl Timeline {
    /// An empty timeline of intervals this long (1 ns at least).
    pub fn new(interval: Duration) -> Self {
        Timeline {
            interval: interval.max(Duration::from_nanos(1)),
            started_at: None,
            elapsed: None,
            slots: Vec::new(),
            live_from: 0,
        }
    }

    /// Length of one interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The wall-clock time the run started, when known.
    pub fn started_at(&self) -> Option<SystemTime> {
        self.started_at
    }

    /// How long the run lasted, once it has ended.
    pub fn elapsed(&self) -> Option<Duration> {
        self.elapsed
    }

    /// Intervals from the start of the run to the last one anything happened in (or, once the
    /// run has ended, to its end).
    pub fn len(&self) -> usize {
        let until_end = self.elapsed.map_or(0, |elapsed| self.index_of_end(elapsed));
        self.slots.len().max(until_end)
    }

    /// Whether there are no intervals yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the interval and the wall-clock start of a run about to start; what was recorded
    /// before (nothing, normally) is dropped.
    pub fn start(&mut self, interval: Duration, started_at: SystemTime) {
        *self = Timeline { started_at: Some(started_at), ..Timeline::new(interval) };
    }

    /// The run ended `elapsed` after its start.
    pub fn end(&mut self, elapsed: Duration) {
        self.elapsed = Some(elapsed);
    }

    /// A response whose last byte was read `completed_at` after the run's start.
    pub fn response(&mut self, completed_at: Duration, latency_ns: u64) {
        let index = self.index_of(completed_at);
        self.slot(index).responses += 1;
        self.with_histogram(index, |histogram| record_ns(histogram, latency_ns));
    }

    /// A request that failed `failed_at` after the run's start.
    pub fn error(&mut self, failed_at: Duration) {
        let index = self.index_of(failed_at);
        self.slot(index).errors += 1;
    }

    /// Adds another timeline of the same run (another thread: same clock, same interval)
    /// interval by interval.
    pub fn merge(&mut self, other: &Timeline) {
        self.adopt_if_blank(other);
        self.started_at = earliest(self.started_at, other.started_at);
        self.elapsed = self.elapsed.max(other.elapsed);
        self.add_shifted(other, 0);
    }

    /// Adds another timeline after this one: its first interval follows this one's last (a
    /// next round of the same load). The elapsed times add up.
    pub fn append(&mut self, other: &Timeline) {
        self.adopt_if_blank(other);
        let shift = self.len();
        self.started_at = self.started_at.or(other.started_at);
        self.elapsed = match (self.elapsed, other.elapsed) {
            (None, None) => None,
            // This one's last interval is counted whole: the other starts after it.
            (mine, theirs) => Some(self.interval * shift as u32 + theirs.unwrap_or_default()).max(mine),
        };
        self.add_shifted(other, shift);
    }

    /// Every interval from the first to the last, the empty ones included. A last interval
    /// shorter than a hundredth of one is folded into the one before: a run ends a fraction
    /// of a millisecond past its duration with its last loop turn's responses, and 10 of them
    /// in 0.5 ms read as 20 k req/s at the end of a run of 78 k. One interval is decoded at a
    /// time.
    pub fn intervals(&self) -> impl Iterator<Item = IntervalFigures> + '_ {
        let count = self.len();
        let sliver = count >= 2 && self.duration_of(count - 1, count) < self.interval / 100;
        let shown = if sliver { count - 1 } else { count };
        (0..shown).map(move |index| {
            let mut figures = self.figures(index, count);
            if sliver && index + 1 == shown {
                let folded = self.figures(count - 1, count);
                figures.duration += folded.duration;
                figures.responses += folded.responses;
                figures.errors += folded.errors;
                figures.latency_ns.add(&folded.latency_ns).expect("auto-resizing histograms add");
            }
            figures
        })
    }

    /// Interval `index` of `count`.
    fn figures(&self, index: usize, count: usize) -> IntervalFigures {
        let slot = self.slots.get(index).unwrap_or(&Slot::EMPTY);
        IntervalFigures {
            start_offset: self.interval * index as u32,
            duration: self.duration_of(index, count),
            responses: slot.responses,
            errors: slot.errors,
            latency_ns: decode(&slot.latency),
        }
    }

    /// The length of interval `index` of `count`: the last one is cut at the run's end.
    fn duration_of(&self, index: usize, count: usize) -> Duration {
        let start_offset = self.interval * index as u32;
        match self.elapsed {
            Some(elapsed) if index + 1 == count && elapsed > start_offset => {
                self.interval.min(elapsed - start_offset)
            }
            _ => self.interval,
        }
    }

    fn adopt_if_blank(&mut self, other: &Timeline) {
        if self.slots.is_empty() && self.started_at.is_none() && self.elapsed.is_none() {
            self.interval = other.interval;
        }
    }

    /// Adds `other`'s intervals to this one's, `shift` intervals later.
    fn add_shifted(&mut self, other: &Timeline, shift: usize) {
        for (index, theirs) in other.slots.iter().enumerate() {
            let index = (index + shift).min(MAX_INTERVALS - 1);
            let slot = self.slot(index);
            slot.responses += theirs.responses;
            slot.errors += theirs.errors;
            if !matches!(theirs.latency, Latency::Empty) {
                let histogram = decode(&theirs.latency);
                self.with_histogram(index, |mine| {
                    mine.add(&histogram).expect("auto-resizing histograms add")
                });
            }
        }
    }

    fn index_of(&self, offset: Duration) -> usize {
        let index = offset.as_nanos() / self.interval.as_nanos();
        usize::try_from(index).unwrap_or(usize::MAX).min(MAX_INTERVALS - 1)
    }

    /// Intervals up to the end of a run that lasted `elapsed`: the one it ended in included.
    fn index_of_end(&self, elapsed: Duration) -> usize {
        let nanos = elapsed.as_nanos();
        let interval = self.interval.as_nanos();
        usize::try_from(nanos.div_ceil(interval)).unwrap_or(usize::MAX).min(MAX_INTERVALS)
    }

    /// The slot of interval `index`, made (with any before it) when new; slots that fall out
    /// of the live window are encoded.
    fn slot(&mut self, index: usize) -> &mut Slot {
        if index >= self.slots.len() {
            self.slots.resize(index + 1, Slot::EMPTY);
            let live_from = (index + 1).saturating_sub(LIVE_INTERVALS);
            for slot in self.slots.iter_mut().take(live_from).skip(self.live_from) {
                if let Latency::Live(histogram) = &slot.latency {
                    slot.latency = Latency::Stored(encode(histogram));
                }
            }
            self.live_from = self.live_from.max(live_from);
        }
        &mut self.slots[index]
    }

    /// Runs `change` on interval `index`'s histogram: live ones directly, a stored one (a late
    /// record) decoded and encoded again.
    fn with_histogram(&mut self, index: usize, change: impl FnOnce(&mut Histogram<u64>)) {
        let live = index >= self.live_from;
        let slot = self.slot(index);
        let mut histogram = match std::mem::replace(&mut slot.latency, Latency::Empty) {
            Latency::Live(histogram) => histogram,
            stored => Box::new(decode(&stored)),
        };
        change(&mut histogram);
        slot.latency = if live { Latency::Live(histogram) } else { Latency::Stored(encode(&histogram)) };
    }
}

fn earliest(a: Option<SystemTime>, b: Option<SystemTime>) -> Option<SystemTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn record_ns(histogram: &mut Histogram<u64>, value_ns: u64) {
    if histogram.record(value_ns).is_err() {
        histogram.saturating_record(value_ns);
    }
}

fn encode(histogram: &Histogram<u64>) -> Box<[u8]> {
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(histogram, &mut bytes).expect("a histogram encodes into memory");
    bytes.into_boxed_slice()
}

/// The histogram of an interval: a fresh one when it is empty.
fn decode(latency: &Latency) -> Histogram<u64> {
    match latency {
        Latency::Empty => histogram(SIGNIFICANT_DIGITS),
        Latency::Live(histogram) => (**histogram).clone(),
        Latency::Stored(bytes) => {
            let mut histogram: Histogram<u64> =
                Deserializer::new().deserialize(&mut &bytes[..]).expect("what was encoded here decodes");
            histogram.auto(true);
            histogram
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Whether two histograms hold the same counts at the same values.
    fn same_counts(a: &Histogram<u64>, b: &Histogram<u64>) -> bool {
        let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
        };
        a.len() == b.len() && counts(a) == counts(b)
    }

    #[test]
    fn records_land_in_the_interval_they_completed_in() {
        let mut timeline = Timeline::new(ms(100));
        timeline.response(ms(50), 3 * MS);
        timeline.response(ms(150), 5 * MS);
        timeline.response(ms(199), 7 * MS);
        timeline.error(ms(420));
        timeline.end(ms(430));
        let intervals: Vec<_> = timeline.intervals().collect();
        let counts: Vec<(u64, u64)> = intervals.iter().map(|i| (i.responses, i.errors)).collect();
        assert_eq!(counts, vec![(1, 0), (2, 0), (0, 0), (0, 0), (0, 1)]);
        assert_eq!(intervals[1].start_offset, ms(100));
        assert_eq!(intervals[1].latency_ns.len(), 2);
        assert!(intervals[2].latency_ns.is_empty());
        // The last interval is cut at the run's end.
        assert_eq!(intervals[4].duration, ms(30));
        assert_eq!(intervals[3].duration, ms(100));
    }

    #[test]
    fn a_sliver_past_the_end_is_folded_into_the_last_whole_interval() {
        let mut timeline = Timeline::new(Duration::from_secs(1));
        timeline.response(ms(500), 3 * MS);
        timeline.response(ms(1500), 5 * MS);
        // The run's last loop turn: a response 0.3 ms past its 2 s.
        timeline.response(Duration::from_micros(2_000_300), 7 * MS);
        timeline.end(Duration::from_micros(2_000_500));
        let intervals: Vec<_> = timeline.intervals().collect();
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[1].responses, 2);
        assert_eq!(intervals[1].latency_ns.len(), 2);
        assert_eq!(intervals[1].duration, Duration::from_micros(1_000_500));
        // A last interval of a hundredth or more stands alone, cut at the end.
        timeline.end(ms(2010));
        let intervals: Vec<_> = timeline.intervals().collect();
        assert_eq!((intervals.len(), intervals[2].responses, intervals[2].duration), (3, 1, ms(10)));
    }

    #[test]
    fn only_the_last_intervals_stay_live() {
        let mut timeline = Timeline::new(ms(10));
        for i in 0..100 {
            timeline.response(ms(i * 10), (i + 1) * MS);
        }
        let live = timeline.slots.iter().filter(|s| matches!(s.latency, Latency::Live(_))).count();
        assert_eq!(live, LIVE_INTERVALS);
        for slot in &timeline.slots[..98] {
            let Latency::Stored(bytes) = &slot.latency else { panic!("{:?}", slot.latency) };
            assert!(bytes.len() < 200, "{} bytes for one value", bytes.len());
        }
    }

    #[test]
    fn a_late_record_is_counted_in_its_own_interval() {
        let mut timeline = Timeline::new(ms(10));
        timeline.response(ms(5), MS);
        timeline.response(ms(95), 2 * MS);
        // Interval 0 is stored by now; this one completed in it, and arrives late.
        assert!(matches!(timeline.slots[0].latency, Latency::Stored(_)));
        timeline.response(ms(9), 40 * MS);
        let first = timeline.intervals().next().unwrap();
        assert_eq!(first.responses, 2);
        assert_eq!(first.latency_ns.len(), 2);
        assert!(first.latency_ns.max() >= 39 * MS);
        assert!(matches!(timeline.slots[0].latency, Latency::Stored(_)));
    }

    #[test]
    fn merge_adds_interval_by_interval_and_append_places_after() {
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut a = Timeline::default();
        a.start(ms(100), started + ms(1));
        a.response(ms(10), MS);
        a.response(ms(310), MS);
        a.end(ms(350));
        let mut b = Timeline::default();
        b.start(ms(100), started);
        b.response(ms(20), 2 * MS);
        b.error(ms(120));
        b.end(ms(360));

        let mut merged = Timeline::default();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.interval(), ms(100));
        assert_eq!(merged.started_at(), Some(started));
        let counts: Vec<(u64, u64)> = merged.intervals().map(|i| (i.responses, i.errors)).collect();
        assert_eq!(counts, vec![(2, 0), (0, 1), (0, 0), (1, 0)]);
        assert_eq!(merged.intervals().last().unwrap().duration, ms(60));

        let mut appended = a.clone();
        appended.append(&b);
        let counts: Vec<(u64, u64)> = appended.intervals().map(|i| (i.responses, i.errors)).collect();
        assert_eq!(counts, vec![(1, 0), (0, 0), (0, 0), (1, 0), (1, 0), (0, 1), (0, 0), (0, 0)]);
        assert_eq!(appended.elapsed(), Some(ms(760)));
        assert_eq!(appended.intervals().nth(4).unwrap().start_offset, ms(400));
    }

    #[test]
    fn interval_histograms_add_up_to_all_the_values() {
        let mut timeline = Timeline::new(ms(10));
        let mut all = histogram(SIGNIFICANT_DIGITS);
        for i in 0..2000u64 {
            let latency_ns = (i * 7919) % 50_000_000 + 1;
            // Mostly in order, with every 13th record late by up to 5 intervals.
            let at = ms(i / 4).saturating_sub(if i % 13 == 0 { ms(50) } else { Duration::ZERO });
            timeline.response(at, latency_ns);
            record_ns(&mut all, latency_ns);
        }
        let mut sum = histogram(SIGNIFICANT_DIGITS);
        for interval in timeline.intervals() {
            sum.add(&interval.latency_ns).unwrap();
        }
        assert!(same_counts(&sum, &all));
        assert_eq!(timeline.intervals().map(|i| i.responses).sum::<u64>(), 2000);
    }

    #[test]
    fn a_bogus_offset_does_not_allocate_forever() {
        let mut timeline = Timeline::new(ms(10));
        timeline.response(Duration::MAX, MS);
        assert_eq!(timeline.len(), MAX_INTERVALS);
    }
}
