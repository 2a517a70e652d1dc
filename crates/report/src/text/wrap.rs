//! Prose wrapped to a width: a number kept with its unit, a short command whole, a hanging
//! indent after the first line. Tables ([`super::layout`]) wrap their cells with it too.

use crate::format::display_width;
use crate::text::MIN_WIDTH;

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

/// `text` wrapped at `width`, the first line after `first`, the others after `rest` (a
/// hanging indent); each line ends in a newline. A number stays on the line of its unit;
/// words longer than a line are broken.
pub(crate) fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for line in wrap_words(text, width.max(MIN_WIDTH), first, rest) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The lines of `text` wrapped at `width` columns (any width), the first after `first`, the
/// others after `rest` (a hanging indent): at spaces, a number kept with its unit, words
/// longer than a line broken.
pub fn wrap_words(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let options = textwrap::Options::new(width.max(1)).initial_indent(first).subsequent_indent(rest);
    textwrap::wrap(&glue_units(text), options)
        .iter()
        .map(|line| line.trim_end().replace(NO_BREAK, " "))
        .collect()
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
}
