//! Which HTTP statuses count as success: `--success-status`, by default 2xx and 3xx, as wrk
//! reports "Non-2xx or 3xx responses". Everything else completed, but is not what the user
//! meant to measure (an error page), so it is counted apart.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatusPattern {
    /// `2xx`: the hundreds digit.
    Class(u16),
    /// `204`: one code.
    Code(u16),
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// The HTTP statuses counted as success (`--success-status`): classes and codes.
pub struct SuccessStatuses(Vec<StatusPattern>);

impl Default for SuccessStatuses {
    fn default() -> Self {
        SuccessStatuses(vec![StatusPattern::Class(2), StatusPattern::Class(3)])
    }
}

impl SuccessStatuses {
    /// Parses a comma-separated list of classes (`2xx`) and codes (`404`), each in 100-599.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut patterns = Vec::new();
        for part in text.split(',').map(str::trim) {
            let lower = part.to_ascii_lowercase();
            let pattern = match lower.strip_suffix("xx") {
                Some(class) => match class.parse::<u16>() {
                    Ok(class @ 1..=5) => StatusPattern::Class(class),
                    _ => return Err(format!("'{part}': a class is 1xx to 5xx")),
                },
                None => match part.parse::<u16>() {
                    Ok(code @ 100..=599) => StatusPattern::Code(code),
                    _ => return Err(format!("'{part}': use a status 100-599 or a class such as 2xx")),
                },
            };
            patterns.push(pattern);
        }
        Ok(SuccessStatuses(patterns))
    }

    /// Whether `status` is one of them.
    pub fn is_success(&self, status: u16) -> bool {
        self.0.iter().any(|pattern| match *pattern {
            StatusPattern::Class(class) => status / 100 == class,
            StatusPattern::Code(code) => status == code,
        })
    }
}

impl fmt::Display for SuccessStatuses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|pattern| match pattern {
                StatusPattern::Class(class) => format!("{class}xx"),
                StatusPattern::Code(code) => code.to_string(),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_2xx_and_3xx() {
        let success = SuccessStatuses::default();
        assert!(success.is_success(200) && success.is_success(304));
        assert!(!success.is_success(404) && !success.is_success(101) && !success.is_success(503));
        assert_eq!(success.to_string(), "2xx,3xx");
    }

    #[test]
    fn parses_classes_and_codes() {
        let success = SuccessStatuses::parse("2xx, 404").unwrap();
        assert!(success.is_success(404) && success.is_success(201) && !success.is_success(301));
        assert_eq!(success.to_string(), "2xx,404");
        for bad in ["", "6xx", "abc", "99", "600", "2x"] {
            assert!(SuccessStatuses::parse(bad).is_err(), "{bad}");
        }
    }
}
