//! `--fail-if` thresholds as written: a metric, an operator and a value with its unit
//! (`p99 > 50ms`, `errors > 1%`, `rps < 2000`), or a finding alone (`stall`,
//! `server-nagle-delayed-ack`). Parsed where the flag is; a mistake names what is known.

use nodelay_diagnose::FindingId;
use std::fmt;
use std::str::FromStr;

/// A summary statistic of a distribution of times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// The median.
    P50,
    /// The 90th percentile.
    P90,
    /// The 95th percentile.
    P95,
    /// The 99th percentile.
    P99,
    /// The 99.9th percentile.
    P999,
    /// The largest.
    Max,
    /// The mean.
    Mean,
}

impl Stat {
    const ALL: [(Stat, &'static str); 7] = [
        (Stat::P50, "p50"),
        (Stat::P90, "p90"),
        (Stat::P95, "p95"),
        (Stat::P99, "p99"),
        (Stat::P999, "p99.9"),
        (Stat::Max, "max"),
        (Stat::Mean, "mean"),
    ];

    fn parse(text: &str) -> Option<Stat> {
        Stat::ALL.iter().find(|(_, name)| *name == text).map(|(stat, _)| *stat)
    }

    /// As written in a threshold: `p50`, `p99.9`, `max`.
    pub fn name(self) -> &'static str {
        Stat::ALL.iter().find(|(stat, _)| *stat == self).map_or("", |(_, name)| name)
    }
}

/// A measured figure a threshold holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Total time (request start to the response's last byte), in ms.
    Total(Stat),
    /// Time to the first byte, in ms.
    FirstByte(Stat),
    /// The longest pause within a response, in ms.
    ReadGap(Stat),
    /// Completed responses per second.
    Rps,
    /// Failed requests and non-success responses (gRPC status included), as a share of all
    /// requests that ended, in %.
    ErrorShare,
    /// The same, counted.
    ErrorCount,
}

impl Metric {
    /// The unit of its value: `ms`, `req/s`, `%` or `count`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Total(_) | Metric::FirstByte(_) | Metric::ReadGap(_) => "ms",
            Metric::Rps => "req/s",
            Metric::ErrorShare => "%",
            Metric::ErrorCount => "count",
        }
    }

    /// Its name as written in a threshold.
    pub fn name(self) -> String {
        match self {
            Metric::Total(stat) => stat.name().to_string(),
            Metric::FirstByte(stat) => format!("first_byte.{}", stat.name()),
            Metric::ReadGap(stat) => format!("read_gap.{}", stat.name()),
            Metric::Rps => "rps".into(),
            Metric::ErrorShare | Metric::ErrorCount => "errors".into(),
        }
    }
}

/// How a measured value is held against the limit: the threshold is crossed when it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Above,
    /// `>=`
    AtLeast,
    /// `<`
    Below,
    /// `<=`
    AtMost,
}

impl Op {
    /// `measured` is on the crossing side of `limit`.
    pub fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Above => measured > limit,
            Op::AtLeast => measured >= limit,
            Op::Below => measured < limit,
            Op::AtMost => measured <= limit,
        }
    }

    /// As written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Above => ">",
            Op::AtLeast => ">=",
            Op::Below => "<",
            Op::AtMost => "<=",
        }
    }
}

/// What crosses a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Condition {
    /// A figure against a limit in the metric's unit.
    Figure {
        /// The figure held.
        metric: Metric,
        /// Crossed when `measured op limit` holds.
        op: Op,
        /// In the metric's unit.
        limit: f64,
    },
    /// This finding (the doctor's) or suggestion (bench's) is reported.
    Finding(FindingId),
    /// Any Nagle hold meeting a delayed ACK or a round trip ([`FindingId::is_stall`]).
    Stall,
    /// compare: a target slower than the first (the baseline) by more than `percent` on
    /// `figure` (`p50_ms`, `p99_ms` or `requests_per_second`, as compare's comparisons name
    /// them), significantly across rounds.
    Slower {
        /// The compared figure.
        figure: &'static str,
        /// The slowdown allowed, in %.
        percent: f64,
    },
}

/// One `--fail-if` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As the user wrote it.
    pub text: String,
    /// What crosses it.
    pub condition: Condition,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What the grammar knows, for the error of a threshold it does not.
pub const KNOWN: &str = "metrics p50, p90, p95, p99, p99.9, max, mean (total time), first_byte.STAT, \
    read_gap.STAT, rps, errors (a share with %, or a count), slower, slower.p99, slower.rps (compare: % \
    against the first target); or alone: stall, or a finding id such as server-nagle-delayed-ack";

impl FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Threshold, String> {
        let trimmed = text.trim();
        let condition = parse_condition(trimmed).map_err(|why| format!("'{text}': {why}"))?;
        Ok(Threshold { text: trimmed.to_string(), condition })
    }
}

fn parse_condition(text: &str) -> Result<Condition, String> {
    let Some(at) = text.find(['<', '>']) else {
        return match text {
            "stall" => Ok(Condition::Stall),
            _ => FindingId::parse(text)
                .map(Condition::Finding)
                .ok_or_else(|| format!("no operator and no such finding; known: {KNOWN}")),
        };
    };
    let (name, rest) = (text[..at].trim(), &text[at..]);
    if let Some(figure) = slower_figure(name) {
        return parse_slower(figure, rest);
    }
    let (op, value) = match rest.as_bytes() {
        [b'>', b'=', ..] => (Op::AtLeast, &rest[2..]),
        [b'<', b'=', ..] => (Op::AtMost, &rest[2..]),
        [b'>', ..] => (Op::Above, &rest[1..]),
        _ => (Op::Below, &rest[1..]),
    };
    let value = value.trim();
    let metric = parse_metric(name)?;
    let (metric, limit) = match metric {
        Metric::Total(_) | Metric::FirstByte(_) | Metric::ReadGap(_) => (metric, parse_ms(value)?),
        Metric::ErrorShare | Metric::ErrorCount => match value.strip_suffix('%') {
            Some(share) => {
                let share = number(share.trim())?;
                if share > 100.0 {
                    return Err(format!("{value} is more than every request"));
                }
                (Metric::ErrorShare, share)
            }
            None => (Metric::ErrorCount, number(value)?),
        },
        Metric::Rps => (metric, number(value.strip_suffix("/s").unwrap_or(value).trim())?),
    };
    Ok(Condition::Figure { metric, op, limit })
}

/// The `slower` metrics and the figures of compare's comparisons they hold.
const SLOWER: [(&str, &str); 3] =
    [("slower", "p50_ms"), ("slower.p99", "p99_ms"), ("slower.rps", "requests_per_second")];

/// The figure `slower`, `slower.p99` or `slower.rps` compares.
fn slower_figure(name: &str) -> Option<&'static str> {
    let name = if name == "slower.p50" { "slower" } else { name };
    SLOWER.iter().find(|(metric, _)| *metric == name).map(|(_, figure)| *figure)
}

/// The metric's name of a compared figure, as a threshold writes it.
pub(crate) fn slower_name(figure: &str) -> &'static str {
    SLOWER.iter().find(|(_, f)| *f == figure).map_or("slower", |(metric, _)| metric)
}

/// `> 5%`: a regression gate allows a slowdown, so only `>` and a share make sense.
fn parse_slower(figure: &'static str, rest: &str) -> Result<Condition, String> {
    let value = rest
        .strip_prefix('>')
        .filter(|v| !v.starts_with('='))
        .ok_or("slower takes '>' and a share: slower > 5%")?;
    let percent = value.trim().strip_suffix('%').ok_or("slower takes a share with %: slower > 5%")?;
    Ok(Condition::Slower { figure, percent: number(percent.trim())? })
}

fn parse_metric(name: &str) -> Result<Metric, String> {
    let stat = |text: &str| Stat::parse(text).ok_or_else(|| format!("no metric '{name}'; known: {KNOWN}"));
    match name {
        "rps" => Ok(Metric::Rps),
        "errors" => Ok(Metric::ErrorShare),
        "" => Err(format!("a metric comes before the operator; known: {KNOWN}")),
        _ => match name.split_once('.') {
            Some(("first_byte", rest)) => stat(rest).map(Metric::FirstByte),
            Some(("read_gap", rest)) => stat(rest).map(Metric::ReadGap),
            _ => stat(name).map(Metric::Total),
        },
    }
}

/// A non-negative finite number.
fn number(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("'{text}' is not a number (0 or more)")),
    }
}

/// A time with its unit, in ms: `50ms`, `0.5s`, `500us` (or `µs`).
fn parse_ms(text: &str) -> Result<f64, String> {
    let units = [("ms", 1.0), ("us", 1e-3), ("µs", 1e-3), ("s", 1e3)];
    for (unit, scale) in units {
        if let Some(value) = text.strip_suffix(unit) {
            return number(value.trim()).map(|v| v * scale);
        }
    }
    Err(format!("give the time with its unit: {text}ms, {text}s or {text}us"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(text: &str) -> Condition {
        text.parse::<Threshold>().unwrap_or_else(|e| panic!("{e}")).condition
    }

    #[test]
    fn figures_parse_with_their_units() {
        let figure = |metric, op, limit| Condition::Figure { metric, op, limit };
        assert_eq!(condition("p99 > 50ms"), figure(Metric::Total(Stat::P99), Op::Above, 50.0));
        assert_eq!(condition(" p99.9>=0.5s "), figure(Metric::Total(Stat::P999), Op::AtLeast, 500.0));
        assert_eq!(
            condition("first_byte.p50 < 250us"),
            figure(Metric::FirstByte(Stat::P50), Op::Below, 0.25)
        );
        assert_eq!(condition("read_gap.max <= 45 ms"), figure(Metric::ReadGap(Stat::Max), Op::AtMost, 45.0));
        assert_eq!(condition("rps < 2000"), figure(Metric::Rps, Op::Below, 2000.0));
        assert_eq!(condition("errors > 1%"), figure(Metric::ErrorShare, Op::Above, 1.0));
        assert_eq!(condition("errors > 10"), figure(Metric::ErrorCount, Op::Above, 10.0));
        assert_eq!(condition("stall"), Condition::Stall);
        assert_eq!(condition("slow-first-byte"), Condition::Finding(FindingId::SlowFirstByte));
        assert_eq!(condition("slower > 5%"), Condition::Slower { figure: "p50_ms", percent: 5.0 });
        assert_eq!(
            condition("slower.rps > 10%"),
            Condition::Slower { figure: "requests_per_second", percent: 10.0 }
        );
    }

    #[test]
    fn mistakes_say_what_is_known() {
        for (text, said) in [
            ("p98 > 5ms", "no metric 'p98'; known: metrics p50"),
            ("p99 > 50", "give the time with its unit: 50ms"),
            ("errors > 120%", "more than every request"),
            ("rps < fast", "'fast' is not a number"),
            ("> 5ms", "a metric comes before the operator"),
            ("nagle", "no operator and no such finding"),
            ("p99 > -1ms", "'-1' is not a number"),
            ("first_byte.p42 > 1ms", "no metric 'first_byte.p42'"),
            ("slower > 5ms", "slower takes a share with %"),
            ("slower < 5%", "slower takes '>' and a share"),
        ] {
            let error = text.parse::<Threshold>().unwrap_err();
            assert!(error.starts_with(&format!("'{text}': ")) && error.contains(said), "{text}: {error}");
        }
    }
}
