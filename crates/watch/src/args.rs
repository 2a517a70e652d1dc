//! What `nodelay watch` is asked to do, as plain values ([`WatchOptions`], which the CLI's
//! arguments convert to), and the parsers that check each value where it is read.

use crate::live::filter::MAX_PORTS;
use std::net::SocketAddr;
use std::time::Duration;

/// Where watch reads the host's TCP from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// The kernel's eBPF programs where allowed, else a packet capture, else sock_diag.
    #[default]
    Auto,
    /// The kernel's eBPF programs, or fail saying why.
    Ebpf,
    /// A packet capture (else sock_diag without capture rights).
    Capture,
}

/// What a watch is asked for: where to capture, what to follow, how long, how to report.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Where the host's TCP is read from.
    pub source: Source,
    /// The interface to capture on: `any` (all of them), `lo`, `eth0`...
    pub interface: String,
    /// Only TCP connections with one of these ports on either side; empty: every port.
    pub ports: Vec<u16>,
    /// Only the sockets of this process (its listening ports are captured).
    pub pid: Option<u32>,
    /// Stop after this long; `None`: until asked to stop.
    pub duration: Option<Duration>,
    /// Events as JSON lines (schema/watch.schema.json) instead of text.
    pub json_lines: bool,
    /// Serve Prometheus metrics on this address.
    pub prometheus: Option<SocketAddr>,
}

/// A TCP port, 1-65535.
pub fn parse_port(text: &str) -> Result<u16, String> {
    match text.trim().parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("'{text}' is not a TCP port (1-65535)")),
    }
}

/// A duration: a number and a unit (ms, s, m, h), or a bare number of seconds; longer than
/// zero, at most 365 days.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let seconds_per = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    let not_a_duration = || {
        format!(
            "'{text}' is not a duration: a number and a unit, as 10s, 500ms, 1m or 1h (a bare number is seconds)"
        )
    };
    if trimmed.starts_with('-') {
        return Err(format!("'{text}' is negative: a duration is longer than zero"));
    }
    if !(value * seconds_per).is_finite() {
        return Err(not_a_duration());
    }
    let duration = Duration::try_from_secs_f64(value * seconds_per).map_err(|_| not_a_duration())?;
    if duration.is_zero() {
        return Err("must be longer than zero".into());
    }
    if duration > Duration::from_secs(365 * 24 * 3600) {
        return Err(format!("'{text}' is too long: at most 365 days"));
    }
    Ok(duration)
}

/// The ports given, checked: at most [`MAX_PORTS`] (the kernel filter's reach).
pub fn check_ports(ports: &[u16]) -> Result<(), String> {
    if ports.len() > MAX_PORTS {
        return Err(format!("at most {MAX_PORTS} ports, {} given", ports.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_their_units_and_bad_ones_in_one_line() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "x", "10 parsecs", "-1", "0", "1e400", "400d"] {
            let error = parse_duration(bad).unwrap_err();
            assert!(!error.contains('\n'), "{bad}: {error}");
        }
        assert!(parse_duration("-1").unwrap_err().contains("negative"));
        assert!(parse_duration("9000h").unwrap_err().contains("at most 365 days"));
    }

    #[test]
    fn ports_are_one_to_65535() {
        assert_eq!(parse_port("8080"), Ok(8080));
        assert!(parse_port("0").is_err());
        assert!(parse_port("65536").is_err());
        assert!(check_ports(&[1; MAX_PORTS + 1]).is_err());
    }
}
