//! `bench --hdr-log FILE`: the run's per-interval latency histograms in HdrHistogram's
//! interval-log format.

use anyhow::{Result, bail};
use nodelay_engine::Stats;
use nodelay_report::BenchSettings;

/// The interval log of a run.
pub fn interval_log(stats: &Stats, settings: &BenchSettings) -> Result<Vec<u8>> {
    let _ = (stats, settings);
    bail!("--hdr-log is not built yet")
}
