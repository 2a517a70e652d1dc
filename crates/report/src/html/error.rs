//! The one error of the HTML report: why runs could not be drawn.

use std::fmt;

/// Why runs could not be drawn.
#[derive(Debug)]
pub struct HtmlError(pub String);

impl fmt::Display for HtmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HtmlError {}
