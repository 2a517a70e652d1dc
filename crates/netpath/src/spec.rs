//! What a path is: round trip, jitter, loss, rate, MTU and name, parsed from the text a user
//! or a test gives and validated there, so the forwarder never sees a value it cannot honour.

use std::time::Duration;

/// One path between the namespaces `NAME-c` (client) and `NAME-s` (server).
#[derive(Debug, Clone, PartialEq)]
pub struct PathSpec {
    /// Round trip the link adds: half of it each way.
    pub rtt: Duration,
    /// Each packet's one-way delay varies uniformly by up to this much either side, without
    /// reordering (a packet never leaves before the one before it).
    pub jitter: Duration,
    /// Share of packets dropped in each direction, in percent (0 to 100).
    pub loss_percent: f64,
    /// Link rate in bits per second: packets are serialised one after another at this rate.
    /// `None` is unlimited.
    pub rate_bits_per_s: Option<u64>,
    /// MTU of both TUN devices, in bytes.
    pub mtu_bytes: u32,
    /// Names the namespaces (`NAME-c`, `NAME-s`) and the devices (`NAMEc0`, `NAMEs0`).
    pub name: String,
    /// Seed of the loss and jitter draws, so a lossy run can be repeated exactly.
    pub seed: u64,
}

/// A value that cannot describe a path.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// A duration that does not parse or is out of range.
    #[error("{0:?} is not a duration: give a number with a unit, as 40ms, 500us or 1s")]
    Duration(String),
    /// A rate that does not parse or is zero.
    #[error("{0:?} is not a link rate: give bits per second with a unit, as 100mbit, 250kbit or 1gbit")]
    Rate(String),
    /// A loss that is not a percentage.
    #[error("{0:?} is not a loss: give a percentage from 0 to 100, as 2 or 0.5")]
    Loss(String),
    /// A name the devices cannot carry.
    #[error("{0:?} cannot name a path: use 1 to 12 letters or digits (it names the TUN devices)")]
    Name(String),
    /// An MTU IPv4 over TUN cannot use.
    #[error("MTU {0} is out of range: use 576 to 65535 bytes")]
    Mtu(u32),
}

/// Longest delay a path may add each way: one minute is already far beyond any real path.
const LONGEST_DELAY: Duration = Duration::from_secs(60);

/// `40ms`, `500us`, `1.5s`; a bare number is milliseconds (as `wan.py` took it).
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let invalid = || SpecError::Duration(text.to_string());
    let trimmed = text.trim();
    let (number, seconds_per_unit) = if let Some(number) = trimmed.strip_suffix("ms") {
        (number, 1e-3)
    } else if let Some(number) = trimmed.strip_suffix("us").or_else(|| trimmed.strip_suffix("µs")) {
        (number, 1e-6)
    } else if let Some(number) = trimmed.strip_suffix('s') {
        (number, 1.0)
    } else {
        (trimmed, 1e-3)
    };
    let value: f64 = number.trim().parse().map_err(|_| invalid())?;
    if !value.is_finite() || value < 0.0 {
        return Err(invalid());
    }
    let duration = Duration::try_from_secs_f64(value * seconds_per_unit).map_err(|_| invalid())?;
    if duration > LONGEST_DELAY { Err(invalid()) } else { Ok(duration) }
}

/// `100mbit`, `250kbit`, `1gbit`, or bare bits per second.
pub fn parse_rate(text: &str) -> Result<u64, SpecError> {
    let invalid = || SpecError::Rate(text.to_string());
    let lower = text.trim().to_ascii_lowercase();
    let (number, multiplier) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(suffix, multiplier)| lower.strip_suffix(suffix).map(|number| (number, *multiplier)))
        .unwrap_or((lower.as_str(), 1.0));
    let value: f64 = number.trim().parse().map_err(|_| invalid())?;
    let bits_per_s = value * multiplier;
    // Below 1 kbit/s a full-sized packet takes 12 s to serialise: not a path, a mistake.
    if !bits_per_s.is_finite() || !(1e3..=1e12).contains(&bits_per_s) {
        return Err(invalid());
    }
    Ok(bits_per_s as u64)
}

/// A percentage from 0 to 100.
pub fn parse_loss_percent(text: &str) -> Result<f64, SpecError> {
    let value: f64 =
        text.trim().trim_end_matches('%').parse().map_err(|_| SpecError::Loss(text.to_string()))?;
    if (0.0..=100.0).contains(&value) { Ok(value) } else { Err(SpecError::Loss(text.to_string())) }
}

/// 1 to 12 ASCII letters or digits: `NAMEc0` must fit a 15-byte interface name.
pub fn parse_name(text: &str) -> Result<String, SpecError> {
    let fits = (1..=12).contains(&text.len()) && text.bytes().all(|byte| byte.is_ascii_alphanumeric());
    if fits { Ok(text.to_string()) } else { Err(SpecError::Name(text.to_string())) }
}

impl PathSpec {
    /// A path of round trip `rtt` and nothing else: no jitter, no loss, unlimited rate.
    pub fn new(name: &str, rtt: Duration) -> Result<PathSpec, SpecError> {
        Ok(PathSpec {
            rtt,
            jitter: Duration::ZERO,
            loss_percent: 0.0,
            rate_bits_per_s: None,
            mtu_bytes: 1500,
            name: parse_name(name)?,
            seed: 1,
        })
    }

    /// Checks the values that parsing alone does not bound.
    pub fn validate(&self) -> Result<(), SpecError> {
        parse_name(&self.name)?;
        if !(576..=65535).contains(&self.mtu_bytes) {
            return Err(SpecError::Mtu(self.mtu_bytes));
        }
        if !(0.0..=100.0).contains(&self.loss_percent) {
            return Err(SpecError::Loss(self.loss_percent.to_string()));
        }
        Ok(())
    }

    /// Half the round trip: the delay each direction adds.
    pub fn one_way_delay(&self) -> Duration {
        self.rtt / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_bare_milliseconds() {
        assert_eq!(parse_duration("40ms"), Ok(Duration::from_millis(40)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
    }

    #[test]
    fn durations_that_are_not_refuse() {
        for text in ["", "ms", "-1ms", "fast", "nanms", "inf", "2h", "61s"] {
            assert!(parse_duration(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn rates_take_units() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("250kbit"), Ok(250_000));
        assert_eq!(parse_rate("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("64000"), Ok(64_000));
        for text in ["", "0", "fast", "-5mbit", "10bit"] {
            assert!(parse_rate(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn loss_is_a_percentage() {
        assert_eq!(parse_loss_percent("2"), Ok(2.0));
        assert_eq!(parse_loss_percent("0.5%"), Ok(0.5));
        for text in ["-1", "101", "some", "NaN"] {
            assert!(parse_loss_percent(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn names_fit_an_interface_name() {
        assert!(parse_name("wan").is_ok());
        assert!(parse_name("abcdefghijkl").is_ok());
        for text in ["", "abcdefghijklm", "a-b", "a b", "wän"] {
            assert!(parse_name(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn a_spec_checks_its_mtu() {
        let mut spec = PathSpec::new("wan", Duration::from_millis(10)).unwrap();
        assert_eq!(spec.validate(), Ok(()));
        spec.mtu_bytes = 100;
        assert_eq!(spec.validate(), Err(SpecError::Mtu(100)));
    }
}
