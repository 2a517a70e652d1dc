//! HdrHistogram interval logs: written from a run ([`mod@write`]) and read back, any number of
//! them merged into one report ([`merge`]).

pub(crate) mod merge;
pub(crate) mod write;
