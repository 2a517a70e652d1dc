//! The one trait every renderer implements: a report in, its text (of some format) out.

/// A report format.
pub trait Render<Report: ?Sized> {
    /// `report` in this format.
    fn render(&self, report: &Report) -> String;
}
