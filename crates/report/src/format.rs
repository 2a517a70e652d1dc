//! Number formatting for people: every figure carries its unit.

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

/// Lays `atoms` out on lines of at most `width` columns, one space between atoms, the first
/// line starting with `first` and the others with `rest`. An atom is a word, or a group that
/// should stay whole (`&& tcp.port==80`); one longer than a line is cut where it must be.
pub fn wrap_atoms<'a>(
    atoms: impl IntoIterator<Item = &'a str>,
    width: usize,
    first: &str,
    rest: &str,
) -> Vec<String> {
    let mut lines = vec![first.to_string()];
    let mut empty = true;
    for atom in atoms {
        let line = lines.last_mut().expect("never empty");
        let used = display_width(line);
        if !empty && used + 1 + display_width(atom) <= width {
            line.push(' ');
            line.push_str(atom);
            continue;
        }
        if !empty {
            lines.push(rest.to_string());
        }
        empty = false;
        // A new line: cut the atom if even a line of its own is too short for it.
        let mut left = atom;
        loop {
            let line = lines.last_mut().expect("never empty");
            let room = width.saturating_sub(display_width(line)).max(1);
            let (head, tail) = split_at_width(left, room);
            line.push_str(head);
            if tail.is_empty() {
                break;
            }
            lines.push(rest.to_string());
            left = tail;
        }
    }
    lines
}

/// `text` wrapped at spaces with a hanging indent, a unit kept with its number.
pub fn wrap_words(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    crate::layout::wrap_lines(text, width, first, rest)
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

/// The space that keeps a number with its unit in [`glue_units`].
pub const NO_BREAK: char = '\u{a0}';

/// A command or code in backticks up to this many columns is kept on one line.
const CODE_KEPT_WHOLE: usize = 40;

/// `text` with its words one space apart, but joined by [`NO_BREAK`] where a line break would
/// part what reads as one: a number and its unit (`40\u{a0}ms)`), an `=` and both its sides
/// (`p = 0.007`, `protocol_version = "HTTP/1.1"`), and a short command in backticks. For text
/// that something else wraps at spaces, such as a table cell; replace it with a space once
/// laid out.
pub fn glue_units(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    // Whether the space before each word is inside a short backticked span.
    let mut glued_in_code = vec![false; words.len()];
    let mut index = 0;
    while index < words.len() {
        if words[index].matches('`').count() % 2 == 1 {
            let end = (index + 1..words.len()).find(|&j| words[j].matches('`').count() % 2 == 1);
            if let Some(end) = end {
                let span: usize = words[index..=end].iter().map(|w| display_width(w) + 1).sum();
                if span <= CODE_KEPT_WHOLE + 1 {
                    glued_in_code[index + 1..=end].iter_mut().for_each(|glued| *glued = true);
                }
                index = end;
            }
        }
        index += 1;
    }
    let mut glued = String::with_capacity(text.len());
    for (index, word) in words.iter().enumerate() {
        if index > 0 {
            let after_number = glued.ends_with(|c: char| c.is_ascii_digit());
            // An assignment short enough to keep whole: `name = value` around the `=` at `at`.
            let short_assignment = |at: usize| {
                let side = |i: Option<usize>| i.and_then(|i| words.get(i)).map_or(0, |w| display_width(w));
                side(at.checked_sub(1)) + side(Some(at + 1)) + 3 <= CODE_KEPT_WHOLE
            };
            let around_equals = (*word == "=" && short_assignment(index))
                || (words[index - 1] == "=" && short_assignment(index - 1));
            let keep = glued_in_code[index] || around_equals || (after_number && is_unit(word));
            glued.push(if keep { NO_BREAK } else { ' ' });
        }
        glued.push_str(word);
    }
    glued
}

/// A unit word as the reports write them, punctuation after it allowed (`ms),`).
fn is_unit(word: &str) -> bool {
    const UNITS: [&str; 19] = [
        "ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "TiB", "B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s",
        "req/s", "%", "bytes", "packets", "count",
    ];
    UNITS.contains(&word.trim_end_matches([')', ',', '.', ';', ':']))
}

/// `text` cut after at most `width` columns, at least one character.
fn split_at_width(text: &str, width: usize) -> (&str, &str) {
    let mut used = 0;
    for (index, c) in text.char_indices() {
        used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used > width && index > 0 {
            return text.split_at(index);
        }
    }
    (text, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_reads_as_one_is_glued_and_the_rest_is_not() {
        let nb = NO_BREAK;
        assert_eq!(glue_units("waits  40 ms, then"), format!("waits 40{nb}ms, then"));
        assert_eq!(glue_units("agrees; p = 0.007)"), format!("agrees; p{nb}={nb}0.007)"));
        assert_eq!(
            glue_units("start it with `nodelay exec -- PROGRAM ARGS`, or run"),
            format!("start it with `nodelay{nb}exec{nb}--{nb}PROGRAM{nb}ARGS`, or run")
        );
        // Code longer than a line may be, or a backtick never closed, wraps as words.
        let long = format!("`{}`", ["word"; 12].join(" "));
        assert!(!glue_units(&long).contains(nb));
        assert_eq!(glue_units("a ` b c"), "a ` b c");
        // An assignment too long to keep whole breaks at its spaces, not inside a name.
        let long = "set the_quite_long_configuration_option_name = some_value_that_is_long_too";
        assert_eq!(glue_units(long), long);
    }

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
    fn wrapping_keeps_lines_within_the_width() {
        let text = "capture rule: a partial segment from the server, the client's pure ACK after its delay";
        let lines = wrap_words(text, 30, "    ", "      ");
        assert_eq!(lines[0], "    capture rule: a partial");
        assert!(lines[1..].iter().all(|l| l.starts_with("      ") && !l.starts_with("       ")));
        assert!(lines.iter().all(|l| display_width(l) <= 30), "{lines:#?}");
        assert_eq!(lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" "), text);
        // Atoms stay whole; one longer than a line is cut.
        let atoms = ["tcp.stream eq 1", "&& ip.addr==10.0.0.1", "&& tcp.port==40000"];
        assert_eq!(
            wrap_atoms(atoms, 40, "", "  "),
            ["tcp.stream eq 1 && ip.addr==10.0.0.1", "  && tcp.port==40000"]
        );
        let long = "[fd12:3456:789a:bcde:f012:3456:789a:bcd1]:40002";
        let lines = wrap_atoms([long], 20, "> ", "  ");
        assert!(lines.iter().all(|l| display_width(l) <= 20), "{lines:#?}");
        assert_eq!(lines.iter().map(|l| &l[2..]).collect::<String>(), long);
        assert_eq!(wrap_words("", 10, "x", "y"), ["x"]);
        // A number keeps its unit on its line.
        assert_eq!(
            wrap_words("captured 4.65 KiB, delay (40 ms): lost", 14, "", ""),
            ["captured", "4.65 KiB,", "delay (40 ms):", "lost"]
        );
        assert_eq!(display_width("20.0 µs"), 7);
        assert_eq!(glue_units("timer (40 ms)  of 3 packets"), "timer (40\u{a0}ms) of 3\u{a0}packets");
    }

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(25.0 * 1024.0), "25.0 KiB");
        assert_eq!(format_bytes(1.2 * 1024.0 * 1024.0), "1.20 MiB");
    }
}
