//! The CI gate: `--fail-if` thresholds on bench, doctor and compare, parsed where the flag is
//! (expr.rs) and held against a finished run (check.rs). A crossed threshold has its own exit
//! status; the report says which crossed and by how much.

mod check;
mod expr;
mod regression;

pub use check::{Gated, GatedCommand, ThresholdResult, any_crossed, check, unsupported};
pub use expr::{Condition, KNOWN, Metric, Op, Stat, Threshold};
pub use regression::check_compare;
