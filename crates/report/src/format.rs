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
    fn bytes_use_binary_prefixes() {
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(25.0 * 1024.0), "25.0 KiB");
        assert_eq!(format_bytes(1.2 * 1024.0 * 1024.0), "1.20 MiB");
    }
}
