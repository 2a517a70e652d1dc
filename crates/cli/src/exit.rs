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
    /// `doctor` found something other than `healthy`: CI can gate on it.
    Findings,
    /// A `--fail-if` threshold was crossed (or could not be checked).
    ThresholdCrossed,
    /// `exec`: the program exists but cannot be executed (a shell's 126).
    CannotExecute,
    /// `exec`: no such program (a shell's 127).
    NotFound,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Failed => 1,
            Outcome::Usage => 2,
            Outcome::Findings => 3,
            Outcome::ThresholdCrossed => 4,
            Outcome::CannotExecute => 126,
            Outcome::NotFound => 127,
        }
    }
}

impl Outcome {
    /// Once `--fail-if` is held, the thresholds decide: a crossed one fails the gate, and when
    /// all hold a finding nobody gated on passes; a run that measured nothing says more.
    pub fn gated(self, results: &[nodelay_report::gate::ThresholdResult]) -> Outcome {
        match self {
            Outcome::Failed | Outcome::Usage => self,
            _ if nodelay_report::gate::any_crossed(results) => Outcome::ThresholdCrossed,
            _ if !results.is_empty() => Outcome::Success,
            _ => self,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(outcome.code())
    }
}

/// Why `exec` could not run the program, as a shell's status; otherwise the program's own.
impl From<&nodelay_launch::LaunchError> for Outcome {
    fn from(error: &nodelay_launch::LaunchError) -> Self {
        use nodelay_launch::LaunchError;
        match error {
            LaunchError::NotFound { .. } => Outcome::NotFound,
            LaunchError::NotExecutable { .. } => Outcome::CannotExecute,
            LaunchError::Watcher(_) | LaunchError::Unsupported => Outcome::Failed,
        }
    }
}

pub use nodelay_load::{UsageError, usage};

/// The exit status for an error that ended a command.
pub fn outcome_of(error: &anyhow::Error) -> Outcome {
    if nodelay_load::is_usage(error) { Outcome::Usage } else { Outcome::Failed }
}
