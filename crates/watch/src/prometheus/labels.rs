//! Bounded label values: which (process, port) pairs and finding ids get labels of their own,
//! and label values made safe to write into the text format (prometheus-client writes them
//! as given, without escaping).

use std::collections::HashSet;
use std::sync::Mutex;

/// Distinct (process, port) pairs that get labels of their own; stalls of any later pair are
/// counted under [`OVERFLOW_LABEL`]. A thousand pairs times a few findings stays well within
/// what one Prometheus target should expose.
pub const LABEL_SETS_MAX: usize = 1000;

/// Distinct finding ids that get a label of their own (the analyzer has a handful).
pub const FINDINGS_MAX: usize = 32;

/// The process and port label values of the stalls past the cap.
pub const OVERFLOW_LABEL: &str = "(other)";

/// The process label value of a stall whose socket no process could be found for.
pub const UNKNOWN_PROCESS: &str = "(unknown)";

/// Longest label value kept, in bytes: a command line is cut, a 15-byte `comm` never is.
const LABEL_VALUE_MAX_BYTES: usize = 64;

/// The label values one stall is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// Finding id, or the overflow label.
    pub finding: String,
    /// Process name, or the overflow label.
    pub process: String,
    /// Server port in decimal, or the overflow label.
    pub port: String,
    /// The process's PID in decimal; the unknown label when unknown, the overflow label past
    /// the cap.
    pub pid: String,
}

/// The label values admitted so far, capped.
#[derive(Debug)]
pub(crate) struct LabelCap {
    pairs_max: usize,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// (process, PID, port): a PID is part of the key, so a client restarted in a loop takes
    /// new label sets only up to the cap.
    pairs: HashSet<(String, String, u16)>,
    findings: HashSet<String>,
}

impl LabelCap {
    /// A cap of `pairs_max` distinct (process, port) pairs.
    pub fn new(pairs_max: usize) -> Self {
        LabelCap { pairs_max, seen: Mutex::new(Seen::default()) }
    }

    /// The label values to count a stall of `process` on `port` with `finding` under: its
    /// own while there is room, else the overflow label in place of the pair (or finding).
    /// Without a finding (`None`: exchanges), `finding` comes back empty.
    pub fn admit(&self, finding: Option<&str>, process: &str, pid: Option<u32>, port: u16) -> Admitted {
        let pid = pid.map_or(UNKNOWN_PROCESS.to_owned(), |pid| pid.to_string());
        let process = label_value(process, UNKNOWN_PROCESS);
        // A poisoned lock only means another thread panicked mid-insert: the set is still a set.
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let finding = match finding {
            Some(finding) => {
                admit_one(&mut seen.findings, label_value(finding, OVERFLOW_LABEL), FINDINGS_MAX)
            }
            None => String::new(),
        };
        let pair = (process, pid, port);
        let pair_admitted = seen.pairs.contains(&pair) || seen.pairs.len() < self.pairs_max;
        if !pair_admitted {
            let overflow = || OVERFLOW_LABEL.to_owned();
            return Admitted { finding, process: overflow(), port: overflow(), pid: overflow() };
        }
        seen.pairs.insert(pair.clone());
        Admitted { finding, process: pair.0, pid: pair.1, port: pair.2.to_string() }
    }
}

fn admit_one(set: &mut HashSet<String>, value: String, max: usize) -> String {
    if set.contains(&value) || set.len() < max {
        set.insert(value.clone());
        value
    } else {
        OVERFLOW_LABEL.to_owned()
    }
}

/// `raw` cut to [`LABEL_VALUE_MAX_BYTES`] and escaped for the text format (`\`, `"` and line
/// feeds escaped, other control characters replaced by `?`); `empty` if `raw` is empty.
pub(crate) fn label_value(raw: &str, empty: &str) -> String {
    if raw.is_empty() {
        return empty.to_owned();
    }
    let mut end = raw.len().min(LABEL_VALUE_MAX_BYTES);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let mut value = String::with_capacity(end + 2);
    for c in raw[..end].chars() {
        match c {
            '\\' => value.push_str("\\\\"),
            '"' => value.push_str("\\\""),
            '\n' => value.push_str("\\n"),
            c if c.is_control() => value.push('?'),
            c => value.push(c),
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_past_the_cap_share_the_overflow_label() {
        let cap = LabelCap::new(2);
        assert_eq!(cap.admit(Some("f"), "a", Some(7), 1).process, "a");
        assert_eq!(cap.admit(Some("f"), "b", None, 2).port, "2");
        let third = cap.admit(Some("f"), "c", Some(9), 3);
        assert_eq!((third.process.as_str(), third.port.as_str()), (OVERFLOW_LABEL, OVERFLOW_LABEL));
        // A pair admitted before the cap keeps its labels.
        assert_eq!(cap.admit(Some("g"), "a", Some(7), 1).process, "a");
    }

    #[test]
    fn label_values_are_escaped_cut_and_never_empty() {
        assert_eq!(label_value(r#"a"b\c"#, "x"), r#"a\"b\\c"#);
        assert_eq!(label_value("a\nb\tc", "x"), "a\\nb?c");
        assert_eq!(label_value("", UNKNOWN_PROCESS), UNKNOWN_PROCESS);
        let long = "é".repeat(100);
        assert!(label_value(&long, "x").len() <= LABEL_VALUE_MAX_BYTES);
    }
}
