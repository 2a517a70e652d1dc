//! Text renderers, in the spirit of wrk's and oha's summaries: figures first, every number
//! with its unit, one unit per table, and no line wider than the width given. One module per
//! report; [`layout`] lays out tables and [`wrap`] prose for all of them.

pub(crate) mod bench;
pub(crate) mod cgroup_fix;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod finding;
pub(crate) mod gate;
pub(crate) use gate::said as gate_said;
pub(crate) mod http2;
pub(crate) mod layout;
pub(crate) mod merge;
pub(crate) mod pcap;
pub(crate) mod proxy;
pub(crate) mod saved;
pub(crate) mod server_view;
pub(crate) mod sockets;
pub(crate) mod wrap;

/// Width of text when the caller knows of no terminal (a pipe, a file).
pub const DEFAULT_WIDTH: usize = 80;
/// Narrowest width laid out: below it the widest tables cannot keep each value on one line.
pub const MIN_WIDTH: usize = 60;

/// Text at the default width (80 columns): what is written to a pipe or a file.
pub struct Text;

/// Text laid out for a terminal of `width` columns (at least [`MIN_WIDTH`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FittedText {
    /// Columns per line, at least [`MIN_WIDTH`].
    pub width: usize,
}

impl Default for FittedText {
    fn default() -> Self {
        FittedText { width: DEFAULT_WIDTH }
    }
}

impl FittedText {
    /// Text for `width` columns; narrower widths are raised to [`MIN_WIDTH`].
    pub fn new(width: usize) -> Self {
        FittedText { width: width.max(MIN_WIDTH) }
    }
}
