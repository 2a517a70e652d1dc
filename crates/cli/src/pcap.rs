//! `nodelay pcap FILE`: streams a capture through the flow analyzer and reports the stalls
//! with the doctor's finding vocabulary.

use crate::args::PcapArgs;
use crate::exit::Outcome;
use crate::output;
use anyhow::{Result, anyhow, bail};
use nodelay_capture::{Analyzer, ReadError, ReadStats, read_packets};
use nodelay_report::{Json, PcapReport, Render, Text};
use std::io::Read;

/// Stalling flows kept in detail while reading, whatever --top asks to print.
const FLOWS_KEPT: usize = 1000;

pub fn pcap(args: &PcapArgs) -> Result<Outcome> {
    let name = args.file.display().to_string();
    let file = std::fs::File::open(&args.file).map_err(|e| anyhow!("cannot open {name}: {e}"))?;
    let mut analyzer = Analyzer::new(args.flow.clone(), FLOWS_KEPT.max(args.top as usize));
    let mut stats = ReadStats::default();
    let outcome = read_packets(file, &mut stats, |packet| analyzer.packet(packet));
    let summary = analyzer.finish(stats);
    let error = match outcome {
        Ok(()) => None,
        Err(ReadError::NotACapture) => {
            bail!("{name}: not a pcap or pcapng file (it starts with {})", first_bytes(args))
        }
        Err(e) if summary.read.packets == 0 => bail!("{name}: {e}"),
        Err(e) => {
            let packets = summary.read.packets;
            output::stderr_line(&format!("nodelay: {name}: {e}; reporting the {packets} packets before it"));
            Some(e.to_string())
        }
    };
    let mut warnings: Vec<String> = summary
        .unsupported_link_types
        .iter()
        .map(|(link, packets)| {
            format!("{packets} packets of link type {link} cannot be decoded and were skipped")
        })
        .collect();
    if summary.read.untimed_packets > 0 {
        warnings.push(format!("{} packets without a timestamp were skipped", summary.read.untimed_packets));
    }
    if summary.tcp_packets == 0 {
        let why = warnings.first().map(|w| format!(" ({w})")).unwrap_or_default();
        bail!("{name}: no TCP packets among its {} packets{why}", summary.read.packets);
    }
    if summary.flows_seen == 0 && args.flow.is_some() {
        bail!("{name}: no TCP flow matches --flow");
    }
    let report = PcapReport::new(name, &summary, args.top as usize, warnings, error);
    output::stdout(&if args.json { Json.render(&report) } else { Text.render(&report) })?;
    Ok(if report.is_healthy() { Outcome::Success } else { Outcome::Findings })
}

/// The file's first bytes in hex, to show what it is instead.
fn first_bytes(args: &PcapArgs) -> String {
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(&args.file).and_then(|mut f| f.read(&mut magic)).unwrap_or(0);
    magic[..read].iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}
