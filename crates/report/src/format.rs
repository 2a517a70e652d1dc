//! Number formatting for people: every figure carries its unit. Shared by the models (their
//! one-line summaries), the text renderers and the HTML page.

/// Milliseconds in the unit that keeps 3-4 significant digits: `850 ns`, `12.3 µs`,
/// `44.01 ms`, `2.50 s`.
pub fn format_duration_ms(ms: f64) -> String {
    if ms < 0.001 {
        format!("{:.0} ns", ms * 1e6)
    } else if ms < 1.0 {
        format!("{:.1} µs", ms * 1e3)
    } else if ms < 1000.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// One unit and one number of decimals for a set of durations (a table's column), so that
/// its numbers line up and never mix `1700.6 ms` with `1.70 s`. The unit keeps the largest
/// value under 1000; the decimals are the unit's usual ones (ns 0, µs 1, ms and s 2), one
/// more when the smallest non-zero value is under 0.1 of the unit, so it does not read as 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DurationScale {
    unit: &'static str,
    /// Units per millisecond.
    per_ms: f64,
    decimals: usize,
}

impl DurationScale {
    /// The scale for these values, in milliseconds; milliseconds when there are none.
    pub fn for_ms(values: impl IntoIterator<Item = f64>) -> Self {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite() && *v >= 0.0).collect();
        let largest = values.iter().copied().fold(0.0, f64::max);
        let (unit, per_ms) = if largest == 0.0 || (1.0..1000.0).contains(&largest) {
            ("ms", 1.0)
        } else if largest >= 1000.0 {
            ("s", 1e-3)
        } else if largest >= 0.001 {
            ("µs", 1e3)
        } else {
            ("ns", 1e6)
        };
        let smallest = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let decimals = match unit {
            // Nanoseconds are the clocks' resolution: no fraction to show.
            "ns" => 0,
            "µs" if smallest * per_ms < 0.1 => 2,
            "µs" => 1,
            _ if smallest * per_ms < 0.1 => 3,
            _ => 2,
        };
        DurationScale { unit, per_ms, decimals }
    }

    /// Milliseconds whatever the values (decimals as [`DurationScale::for_ms`] picks them):
    /// for a block whose text already speaks in milliseconds.
    pub fn milliseconds(values: impl IntoIterator<Item = f64>) -> Self {
        let smallest = values.into_iter().filter(|v| v.is_finite() && *v > 0.0).fold(f64::INFINITY, f64::min);
        let decimals = if smallest < 0.1 {
            3
        } else if smallest >= 1000.0 {
            1
        } else {
            2
        };
        DurationScale { unit: "ms", per_ms: 1.0, decimals }
    }

    /// `44.01 ms`.
    pub fn format(&self, ms: f64) -> String {
        format!("{:.*} {}", self.decimals, ms * self.per_ms, self.unit)
    }
}

/// "1 socket", "3 sockets".
pub fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Bytes with a binary prefix: `512 B`, `24.4 KiB`, `1.20 MiB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024.0 {
        return format!("{bytes:.0} B");
    }
    let mut value = bytes / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let digits = if value < 10.0 { 2 } else { 1 };
    format!("{value:.digits$} {}", UNITS[unit])
}

/// Milliseconds always in ms, with `decimals` decimals: `0.020 ms`, `1700.60 ms`. A table's
/// durations all use it, with [`ms_decimals`] of the whole column, so they share one unit.
pub fn format_ms(ms: f64, decimals: usize) -> String {
    format!("{ms:.decimals$} ms")
}

/// Decimals for milliseconds such that the smallest nonzero value keeps two significant
/// digits, from 2 (`39.95 ms`) to 3 (`0.020 ms`: the microsecond is the finest shown).
pub fn ms_decimals(values: impl IntoIterator<Item = f64>) -> usize {
    let smallest = values.into_iter().filter(|v| v.is_finite() && *v > 0.0).fold(f64::INFINITY, f64::min);
    if smallest.is_finite() { (1.0 - smallest.log10().floor()).clamp(2.0, 3.0) as usize } else { 2 }
}

/// Columns `text` takes on a terminal (µ takes one, most CJK characters two).
pub fn display_width(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// A budget or a wait as the user wrote it, near enough: `10 s`, `2.5 s`, `0.67 s`.
pub fn format_seconds(seconds: f64) -> String {
    let text = format!("{seconds:.2}");
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Status counts as people read them: `404 ×40, 200 ×3` (empty for none).
pub fn format_status_counts(counts: &std::collections::BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = counts.iter().map(|(code, n)| format!("{code} ×{n}")).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration_ms(0.00085), "850 ns");
        assert_eq!(format_duration_ms(0.0123), "12.3 µs");
        assert_eq!(format_duration_ms(44.012), "44.01 ms");
        assert_eq!(format_duration_ms(2500.0), "2.50 s");
    }

    #[test]
    fn a_scale_takes_its_unit_from_the_largest_value_and_its_decimals_from_the_smallest() {
        let scale = DurationScale::for_ms([1700.6, 44.012, 0.0]);
        assert_eq!((scale.format(1700.6), scale.format(44.012)), ("1.701 s".into(), "0.044 s".into()));
        assert_eq!(scale.format(0.0), "0.000 s");
        let scale = DurationScale::for_ms([44.012, 0.4183]);
        assert_eq!((scale.format(44.012), scale.format(0.4183)), ("44.01 ms".into(), "0.42 ms".into()));
        let scale = DurationScale::for_ms([44.0, 0.007]);
        assert_eq!((scale.format(44.0), scale.format(0.007)), ("44.000 ms".into(), "0.007 ms".into()));
        let scale = DurationScale::for_ms([0.5, 0.0205]);
        assert_eq!((scale.format(0.5), scale.format(0.0205)), ("500.0 µs".into(), "20.5 µs".into()));
        let scale = DurationScale::for_ms([0.00085]);
        assert_eq!(scale.format(0.00085), "850 ns");
        assert_eq!(DurationScale::for_ms([]).format(1.0), "1.00 ms");
        assert_eq!(DurationScale::for_ms([0.0]).format(0.0), "0.00 ms");
    }

    #[test]
    fn seconds_are_written_as_typed() {
        assert_eq!(format_seconds(2.5), "2.5 s");
        assert_eq!(format_seconds(10.0), "10 s");
        assert_eq!(format_seconds(2.0 / 3.0), "0.67 s");
    }

    #[test]
    fn a_column_of_milliseconds_shares_its_unit_and_decimals() {
        assert_eq!(ms_decimals([119.91, 39.95]), 2);
        assert_eq!(ms_decimals([119.91, 0.02, 0.0]), 3);
        assert_eq!(ms_decimals([0.0004]), 3);
        assert_eq!(ms_decimals([]), 2);
        assert_eq!(format_ms(1700.6, 2), "1700.60 ms");
        assert_eq!(format_ms(0.02, 3), "0.020 ms");
    }

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(25.0 * 1024.0), "25.0 KiB");
        assert_eq!(format_bytes(1.2 * 1024.0 * 1024.0), "1.20 MiB");
    }
}
