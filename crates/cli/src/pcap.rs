//! `nodelay pcap FILE`: streams a capture (a file, or stdin for `-`; gzip-compressed or not)
//! through the flow analyzer and reports the stalls with the doctor's finding vocabulary.

use crate::args::PcapArgs;
use crate::exit::{Outcome, usage};
use crate::output;
use crate::runner::text_width;
use anyhow::{Result, bail};
use nodelay_capture::{Analyzer, CaptureInput, ReadError, ReadStats, read_capture};
use nodelay_diagnose::CaptureObservations;
use nodelay_report::{Json, PcapReport, Render};
use std::io::IsTerminal;
use std::path::Path;

/// Stalling flows kept in detail while reading, whatever --top asks to print.
const FLOWS_KEPT: usize = 1000;

pub fn pcap(args: &PcapArgs) -> Result<Outcome> {
    let (name, input) = open(&args.file)?;
    let html = crate::output::create_output(args.html.as_deref(), "--html")?;
    let mut analyzer = Analyzer::new(args.flow.clone(), FLOWS_KEPT.max(args.top as usize));
    let mut stats = ReadStats::default();
    let outcome = read_capture(input, &mut stats, |packet| analyzer.packet(packet));
    let summary = analyzer.finish(stats);
    let error = match outcome {
        Ok(()) => None,
        Err(e) => {
            // What an error says about the content (offsets, first bytes) is about the
            // decompressed bytes of a gzip file.
            let about_content = !matches!(e, ReadError::Io(_));
            let label = if summary.read.gzip && about_content {
                format!("{name} (decompressed)")
            } else {
                name.clone()
            };
            if summary.read.packets == 0 {
                bail!("{label}: {e}");
            }
            let packets = summary.read.packets;
            output::stderr_line(&format!("nodelay: {label}: {e}; reporting the {packets} packets before it"));
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
    if summary.read.steps_back > 0 {
        warnings.push(format!(
            "{} earlier than the packet before {} (by up to {}): gaps are measured in the file's order, \
             and a stall across such a step may be missed",
            nodelay_report::plural(summary.read.steps_back as usize, "packet is timed", "packets are timed"),
            if summary.read.steps_back == 1 { "it" } else { "them" },
            nodelay_report::format_duration_ms(nodelay_tcp::time::ms_from_ns(
                summary.read.largest_step_back_ns
            ))
        ));
    }
    if summary.tcp_packets == 0 {
        let why = warnings.first().map(|w| format!(" ({w})")).unwrap_or_default();
        bail!("{name}: no TCP packets among its {} packets{why}", summary.read.packets);
    }
    if summary.flows_seen == 0 && args.flow.is_some() {
        bail!("{name}: no TCP flow matches --flow");
    }
    // The rules read the summary; the report renders what they said.
    let observations = CaptureObservations::of(&summary);
    let diagnosis = observations.diagnose();
    let report =
        PcapReport::new(name, &summary, &observations, diagnosis, args.top as usize, warnings, error);
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    output::stdout(&if args.json { Json.render(&report) } else { report.render_text(text_width()) })?;
    Ok(if report.is_healthy() { Outcome::Success } else { Outcome::Findings })
}

/// The capture's name for messages and its bytes: `-` is standard input, named `stdin`.
fn open(path: &Path) -> Result<(String, CaptureInput)> {
    if path.as_os_str() == "-" {
        let stdin = std::io::stdin();
        // Nobody types a capture: waiting on a terminal would look like a hang.
        if stdin.is_terminal() {
            bail!(
                "stdin is a terminal: pipe a capture in, e.g. tcpdump -U -w - 'tcp port 80' | nodelay pcap -"
            );
        }
        return Ok(("stdin".into(), CaptureInput::Stream(Box::new(stdin))));
    }
    let name = path.display().to_string();
    // A capture that cannot be opened is a bad argument, as any file named on the command line.
    let file = std::fs::File::open(path).map_err(|e| usage(format!("cannot open {name}: {e}")))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(usage(format!("cannot open {name}: it is a directory, not a capture file")));
    }
    Ok((name, CaptureInput::File(file)))
}
