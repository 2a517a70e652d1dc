//! Usage errors: a mistake in what the caller asked for (a bad URL, an option for another
//! kind of target, an unreadable file), told apart from a failure to measure. The CLI maps
//! an error with a `UsageError` in its chain to exit status 2.

/// An error in what the user asked for, as opposed to a failure to measure.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `message` as a usage error.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// Whether `error`, or anything in its context chain, is a usage error.
pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<UsageError>())
}
