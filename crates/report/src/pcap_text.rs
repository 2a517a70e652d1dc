//! Text rendering of a capture analysis: totals, the worst flows, then the findings.

use crate::Render;
use crate::doctor_text::write_finding;
use crate::format::{format_bytes, format_duration_ms};
use crate::pcap::PcapReport;
use crate::text::Text;
use std::fmt::Write;

impl Render<PcapReport> for Text {
    fn render(&self, report: &PcapReport) -> String {
        let mut out = String::new();
        write_pcap(&mut out, report).expect("writing to a String cannot fail");
        out
    }
}

fn write_pcap(out: &mut String, r: &PcapReport) -> std::fmt::Result {
    writeln!(
        out,
        "nodelay pcap {}: {} packets ({} TCP), {} captured, {:.3} s of traffic, {} TCP flows",
        r.file,
        r.packets,
        r.tcp_packets,
        format_bytes(r.bytes as f64),
        r.duration_s,
        r.flows
    )?;
    writeln!(
        out,
        "stalls: {} in {} flows, {} lost",
        r.stalls,
        r.flows_with_stalls,
        format_duration_ms(r.time_lost_ms)
    )?;
    if !r.top_flows.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "  {:<46}{:>7}{:>11}{:>8}{:>10}  ACK delayed by",
            "flow (client -> server)", "stalls", "lost", "held by", "ACK delay"
        )?;
        for flow in &r.top_flows {
            writeln!(
                out,
                "  {:<46}{:>7}{:>11}{:>8}{:>10}  {}{}",
                format!("{} -> {}", flow.client, flow.server),
                flow.stalls,
                format_duration_ms(flow.time_lost_ms),
                flow.held_by,
                format_duration_ms(flow.ack_delay_p50_ms),
                flow.ack_delayed_by,
                flow.suggested_stack.as_ref().map(|s| format!(": {s}")).unwrap_or_default(),
            )?;
            for stall in flow.examples.iter().take(3) {
                writeln!(
                    out,
                    "      exchange {} at {:.6} s: {} bytes (#{}) then ACK #{} after {}, next segment #{} {} later",
                    stall.exchange,
                    stall.at_s,
                    stall.segment_bytes,
                    stall.held_after_packet,
                    stall.ack_packet,
                    format_duration_ms(stall.ack_delay_ms),
                    stall.release_packet,
                    format_duration_ms(stall.release_after_ack_us / 1e3),
                )?;
            }
        }
        if r.flows_not_listed > 0 {
            writeln!(out, "  ... and {} more flows with stalls (--top to list more)", r.flows_not_listed)?;
        }
    }
    for finding in &r.findings {
        writeln!(out)?;
        write_finding(out, finding)?;
    }
    for warning in &r.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    if let Some(error) = &r.error {
        writeln!(out, "stopped early: {error} (figures cover the packets before it)")?;
    }
    writeln!(out)?;
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    writeln!(out, "verdict: {}", ids.join(", "))
}
