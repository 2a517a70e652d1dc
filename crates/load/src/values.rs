//! Values as users type them on a command line or in a file, validated where they are
//! parsed: durations, rates, header lines, socket addresses. Each parser returns the value
//! or one line saying why not, which a front end shows as a usage error.

use std::net::SocketAddr;
use std::time::Duration;

/// HOST:PORT as an address: an IP literal (`[::1]:80` for IPv6) or a name, resolved now.
pub fn parse_socket_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let example = "e.g. 127.0.0.1:8080, [::1]:8080 or localhost:8080";
    if text.rsplit_once(':').is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err()) {
        return Err(format!("'{text}' is not HOST:PORT ({example})"));
    }
    match std::net::ToSocketAddrs::to_socket_addrs(text).map(|mut addresses| addresses.next()) {
        Ok(Some(address)) => Ok(address),
        Ok(None) => Err(format!("'{text}' resolves to no address")),
        Err(e) => Err(format!("cannot resolve '{text}': {e}")),
    }
}

/// A HOST:PORT to connect to: port 0 (any free port, when binding) is none.
pub fn parse_upstream_address(text: &str) -> Result<SocketAddr, String> {
    let address = parse_socket_address(text)?;
    crate::target::no_port_zero(text, address)?;
    Ok(address)
}

/// Longest duration any option takes: long enough for any soak test, short enough that no
/// deadline computed from it can overflow the clock.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Slowest `--rate`: one request every 1000 s.
pub const MIN_RATE: f64 = 0.001;
/// Fastest `--rate`: far beyond any loopback server, still a whole-nanosecond interval.
pub const MAX_RATE: f64 = 1e9;

/// The shortest `--budget`.
pub const MIN_BUDGET: Duration = Duration::from_millis(100);

/// A duration as users write it: `10s`, `500ms`, `1h30m`, or a bare number of seconds; longer
/// than zero and at most 365 days.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("'{text}' is negative: a duration is longer than zero"));
    }
    // A bare number is seconds, as wrk's -d 10 means; 1.5 too.
    let bare = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1
        && text.bytes().any(|b| b.is_ascii_digit());
    let duration = if bare {
        let seconds: f64 = text.parse().map_err(|_| format!("'{text}' is not a number of seconds"))?;
        Duration::try_from_secs_f64(seconds).map_err(|_| format!("'{text}' is too long: at most 365 days"))?
    } else {
        humantime::parse_duration(text).map_err(|_| {
            format!("'{text}' is not a duration: a number and a unit, as 10s, 500ms, 1m or 1h30m (a bare number is seconds)")
        })?
    };
    if duration.is_zero() {
        return Err("must be longer than zero".into());
    }
    if duration > MAX_DURATION {
        return Err(format!("'{text}' is too long: at most 365 days"));
    }
    Ok(duration)
}

/// The doctor's `--budget`: a duration of 100 ms or more, so that its phases have a time to
/// share (and messages naming it never round it to "0 s").
pub fn parse_budget(text: &str) -> Result<Duration, String> {
    let budget = parse_duration(text)?;
    if budget < MIN_BUDGET {
        return Err(format!("'{text}' is too short for a diagnosis: at least 100ms"));
    }
    Ok(budget)
}

/// `--busy-poll[=TIME]`: `always`, or a spin after each event of 1 µs to 1 s.
pub fn parse_busy_poll(text: &str) -> Result<nodelay_engine::BusyPoll, String> {
    if text == "always" {
        return Ok(nodelay_engine::BusyPoll::Always);
    }
    let window =
        humantime::parse_duration(text).map_err(|e| format!("{e} (examples: always, 10us, 50us)"))?;
    if window < Duration::from_micros(1) || window > Duration::from_secs(1) {
        return Err(format!("'{text}' is out of range: use 1us to 1s, or always"));
    }
    Ok(nodelay_engine::BusyPoll::After(window))
}

/// An interval of the time series: from 10 ms (finer costs memory for nothing a plot shows) to
/// an hour.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < Duration::from_millis(10) || interval > Duration::from_secs(3600) {
        return Err(format!("'{text}' is out of range: use 10ms to 1h"));
    }
    Ok(interval)
}

/// `--rate`: requests per second in total, from 0.001 to 1e9.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (MIN_RATE..=MAX_RATE).contains(&rate) => Ok(rate),
        Ok(rate) if rate > 0.0 && rate.is_finite() => {
            Err(format!("'{text}' is out of range: use {MIN_RATE} to {MAX_RATE:e} requests per second"))
        }
        _ => Err(format!("'{text}' is not a positive number of requests per second")),
    }
}

/// `-H 'Name: value'`: an HTTP token as the name, a value without line breaks.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    // Echoed escaped: a line break in a message would break its one line.
    let (name, value) =
        text.split_once(':').ok_or_else(|| format!("'{}' is not 'Name: value'", text.escape_debug()))?;
    // HTTP allows no space around a name (RFC 9112 5.1: a server must refuse one before the
    // colon): 'X : a' or 'X\n: a' is refused, not sent as 'X: a'.
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(format!(
            "'{}' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only: no space, not even before the colon)",
            name.escape_debug()
        ));
    }
    if value.contains(['\r', '\n']) {
        return Err("header values cannot contain line breaks".into());
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// A byte of an HTTP token (RFC 9110 5.6.2), which a header name is.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers_durations_and_rates() {
        assert_eq!(parse_header("X-A: b c"), Ok(("X-A".into(), "b c".into())));
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": v").is_err());
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(
            parse_duration("ten").unwrap_err().starts_with("'ten' is not a duration: a number and a unit")
        );
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("-1").unwrap_err().contains("is negative"));
        assert!(parse_duration("1.5.5").is_err() && parse_duration(".").is_err());
        for spaced in ["X : a", "X\n: a", " X: a", "X\r: a"] {
            assert!(parse_header(spaced).unwrap_err().contains("is not a valid header name"), "{spaced:?}");
        }
        assert!(!parse_header("X\n: a").unwrap_err().contains('\n'), "echoed escaped");
        assert_eq!(parse_rate("1000"), Ok(1000.0));
        assert!(parse_rate("-1").is_err());
        assert!(parse_rate("inf").is_err());
        assert!(parse_rate("1e-20").unwrap_err().contains("out of range"));
        assert!(parse_rate("nan").is_err());
        for absurd in ["18446744073709551615s", "300000000000y", "366days"] {
            assert!(parse_duration(absurd).is_err(), "{absurd}");
        }
        assert_eq!(parse_duration("365days"), Ok(MAX_DURATION));
    }

    #[test]
    fn socket_addresses_are_literals_or_resolved_names() {
        assert_eq!(parse_socket_address("127.0.0.1:0"), Ok("127.0.0.1:0".parse().unwrap()));
        assert_eq!(parse_socket_address("[::1]:8080"), Ok("[::1]:8080".parse().unwrap()));
        assert!(parse_socket_address("localhost:8080").unwrap().ip().is_loopback());
        for bad in ["8080", "127.0.0.1", ":80", "127.0.0.1:99999", "host:port"] {
            assert!(parse_socket_address(bad).unwrap_err().contains("HOST:PORT"), "{bad}");
        }
        assert!(parse_upstream_address("127.0.0.1:0").unwrap_err().contains("port 0"));
        assert!(parse_upstream_address("127.0.0.1:80").is_ok());
    }

    #[test]
    fn a_budget_is_at_least_100ms() {
        assert!(parse_budget("1ns").unwrap_err().contains("too short for a diagnosis"));
        assert!(parse_budget("99ms").is_err());
        assert_eq!(parse_budget("100ms"), Ok(MIN_BUDGET));
    }
}
