//! Fuzzes the capture reader, the flow analysis behind it and the diagnosis and report made
//! of its summary: any bytes must give packets or a `ReadError`, never a panic, a hang or
//! unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_capture::{Analyzer, ReadStats, read_packets_buffered};

fuzz_target!(|data: &[u8]| {
    let mut analyzer = Analyzer::new(None, 10);
    let mut stats = ReadStats::default();
    // A small buffer keeps runs fast; the fuzzer's inputs are at most a few KiB.
    let _ = read_packets_buffered(data, 64 * 1024, &mut stats, |packet| analyzer.packet(packet));
    let summary = analyzer.finish(stats);
    // The rules and the report read every figure of the summary (round trips, holds, waits).
    let observations = nodelay_diagnose::CaptureObservations::of(&summary);
    let findings = observations.diagnose();
    let _ = nodelay_report::PcapReport::new("fuzz".into(), &summary, &observations, findings, 5, Vec::new(), None);
});
