//! Watching a server through a run: [`ServerWatch::start`] reads the start values of the
//! processes behind a target, a background thread samples their outgoing connections while
//! the run lasts, and [`ServerWatch::finish`] reads the end values into a [`ServerView`].

use crate::{HostError, ServerView, Target};

/// A server being watched; dropping it without `finish` stops the sampling.
pub struct ServerWatch {
    _target: Target,
}

impl ServerWatch {
    /// Finds the processes behind `target` (every holder of its listening socket, as
    /// `inspect` does) and reads their start values.
    pub fn start(target: Target) -> Result<ServerWatch, HostError> {
        let _ = target;
        Err(HostError::Unsupported("the server view is not built yet"))
    }

    /// Reads the end values: the server's side of the run since `start`.
    pub fn finish(self) -> Result<ServerView, HostError> {
        Err(HostError::Unsupported("the server view is not built yet"))
    }
}
