//! Fuzzes the capture reader and the flow analysis behind it: any bytes must give packets
//! or a `ReadError`, never a panic, a hang or unbounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_capture::{Analyzer, ReadStats, read_packets_buffered};

fuzz_target!(|data: &[u8]| {
    let mut analyzer = Analyzer::new(None, 10);
    let mut stats = ReadStats::default();
    // A small buffer keeps runs fast; the fuzzer's inputs are at most a few KiB.
    let _ = read_packets_buffered(data, 64 * 1024, &mut stats, |packet| analyzer.packet(packet));
    let _ = analyzer.finish(stats);
});
