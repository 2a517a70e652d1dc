//! How a diagnosis tells its caller which step runs: a trait the front end implements (the
//! CLI draws a line on stderr from it); nothing here draws.

/// Told the step a diagnosis starts, in words ("baseline: keep-alive, one connection").
pub trait Progress {
    /// A new step starts.
    fn phase(&mut self, what: &str);
}

/// Told nothing.
impl Progress for () {
    fn phase(&mut self, _what: &str) {}
}

/// One named request of a scenario: its steps after its name.
pub(crate) struct Named<'a> {
    pub(crate) progress: &'a mut dyn Progress,
    pub(crate) request: &'a str,
}

impl Progress for Named<'_> {
    fn phase(&mut self, what: &str) {
        self.progress.phase(&format!("'{}', {what}", self.request));
    }
}
