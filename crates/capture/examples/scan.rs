//! Times the analysis alone on one capture file: reading, decoding and flow tracking, no
//! report. `cargo run --release -p nodelay-capture --example scan -- FILE [ROUNDS]` prints
//! the best round's MB/s (the page cache warmed by the first), for before/after comparisons
//! of the hot path (bench/pcap_vs_tshark.py times the whole command).

use nodelay_capture::{Analyzer, CaptureInput, ReadStats, read_capture};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: scan FILE [ROUNDS]");
    let rounds: usize = args.next().map_or(5, |r| r.parse().expect("ROUNDS is a number"));
    let mut best = f64::INFINITY;
    let mut bytes = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let mut analyzer = Analyzer::new(None, 1000);
        let mut stats = ReadStats::default();
        let file = std::fs::File::open(&path).expect("open the capture");
        // As `nodelay pcap` reads a file (a legacy pcap in a reused buffer, else streamed).
        read_capture(CaptureInput::File(file), &mut stats, |packet| analyzer.packet(packet))
            .expect("read the capture");
        let summary = analyzer.finish(stats);
        best = best.min(started.elapsed().as_secs_f64());
        bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        std::hint::black_box(&summary);
        eprintln!("{} packets, {} flows", summary.read.packets, summary.flows_seen);
    }
    println!("best of {rounds}: {best:.3} s, {:.0} MB/s", bytes as f64 / 1e6 / best);
}
