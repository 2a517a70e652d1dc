//! Exit statuses, in one place. Documented in the README; scripts gate on them.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The run measured what it was asked to.
    Success,
    /// Nothing could be measured: unreachable target, no request succeeded, I/O failure.
    Failed,
    /// Bad arguments (clap uses the same code for its own usage errors).
    Usage,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Failed => 1,
            Outcome::Usage => 2,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(outcome.code())
    }
}
