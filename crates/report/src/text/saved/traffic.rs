//! Saved traffic analyses as text: a capture (`nodelay pcap`) with its flows that stalled, and
//! a relay run (`nodelay proxy`) with each part of an exchange and each leg; their findings,
//! then the verdict line, as the live runs print them.

use super::finding::write_finding;
use crate::format::{format_bytes, format_ms, format_status_counts, ms_decimals};
use crate::saved::{FindingView, LegView, PcapView, PercentilesView, ProxyView};
use crate::text::bench::{format_elapsed, plural};
use crate::text::layout::{Col, TextTable};
use crate::text::proxy::{LegRow, connections_line, write_legs, write_parts};
use crate::text::wrap::wrap;
use std::fmt::Write;

pub fn write_pcap(out: &mut String, r: &PcapView, width: usize) -> std::fmt::Result {
    let heading = format!(
        "nodelay pcap {}: {} packets ({} TCP), {} captured, {:.3} s of traffic, {}",
        r.file,
        r.packets,
        r.tcp_packets,
        format_bytes(r.bytes as f64),
        r.duration_s,
        plural(r.flows, "TCP flow", "TCP flows"),
    );
    out.push_str(&wrap(&heading, width, "", "  "));
    let stalls = format!(
        "stalls: {} in {}, {} lost",
        r.stalls,
        plural(r.flows_with_stalls, "flow", "flows"),
        format_ms(r.time_lost_ms, 2)
    );
    out.push_str(&wrap(&stalls, width, "", "  "));
    if !r.top_flows.is_empty() {
        writeln!(out)?;
        // Milliseconds throughout, as live: a delayed-ACK timer reads as one.
        let decimals = ms_decimals(r.top_flows.iter().flat_map(|f| [f.time_lost_ms, f.ack_delay_p50_ms]));
        let mut table =
            TextTable::new(width, 2, &[Col::Right, Col::Right, Col::Right, Col::Right, Col::Left]);
        table.header(["stream", "stalls", "lost", "ACK delay", "held by"]);
        for flow in &r.top_flows {
            table.row([
                flow.tcp_stream.to_string(),
                flow.stalls.to_string(),
                format_ms(flow.time_lost_ms, decimals),
                format_ms(flow.ack_delay_p50_ms, decimals),
                flow.held_by.clone(),
            ]);
        }
        out.push_str(&table.render());
        // Each flow's addresses and the filter that shows it, too long for a table's cell.
        for flow in &r.top_flows {
            let line = format!(
                "stream {}: {} -> {}; Wireshark: {}",
                flow.tcp_stream, flow.client, flow.server, flow.wireshark_filter
            );
            out.push_str(&wrap(&line, width, "  ", "    "));
        }
        if r.flows_not_listed > 0 {
            let line = format!("... and {} more flows with stalls", r.flows_not_listed);
            out.push_str(&wrap(&line, width, "  ", "    "));
        }
    }
    for finding in &r.findings {
        write_finding(out, finding, width)?;
    }
    if !r.warnings.is_empty() || r.error.is_some() {
        writeln!(out)?;
    }
    for warning in &r.warnings {
        out.push_str(&wrap(&format!("warning: {warning}"), width, "", "  "));
    }
    if let Some(error) = &r.error {
        let line = format!("stopped early: {error} (figures cover the packets before it)");
        out.push_str(&wrap(&line, width, "", "  "));
    }
    write_verdict(out, &r.findings, &r.verdict, width)
}

pub fn write_proxy(out: &mut String, r: &ProxyView, width: usize) -> std::fmt::Result {
    let stopped = match r.stopped_by.as_str() {
        "duration" => "stopped at the end of -d".to_string(),
        "exchanges" => format!("stopped after {}", plural(r.exchanges, "exchange", "exchanges")),
        _ => "interrupted (Ctrl-C)".to_string(),
    };
    let heading = format!(
        "nodelay proxy {} -> {}: {} on {} in {} ({stopped}), {:.1} exchanges/s",
        r.listen,
        r.upstream,
        plural(r.exchanges, "exchange", "exchanges"),
        plural(r.connections.accepted, "connection", "connections"),
        format_elapsed(r.elapsed_s),
        r.exchanges_per_second,
    );
    out.push_str(&wrap(&heading, width, "", "  "));
    if r.exchanges > 0 {
        writeln!(out)?;
        let parts = &r.latency_ms;
        let spread = |p: Option<PercentilesView>| p.map(|p| [p.min, p.p50, p.p90, p.p99, p.max]);
        let rows = [
            ("total", spread(parts.total)),
            ("client leg", spread(parts.client_leg)),
            ("relay", spread(parts.relay)),
            ("upstream", spread(parts.upstream)),
        ];
        write_parts(out, &rows, width);
        writeln!(out)?;
        write_legs(out, &[leg_row("client", &r.client_leg), leg_row("upstream", &r.upstream_leg)], width);
    }
    writeln!(out)?;
    let c = &r.connections;
    let line = connections_line(c.accepted, c.closed, c.open_at_end, c.failed);
    out.push_str(&wrap(&line, width, "", "  "));
    if !r.status_counts.is_empty() {
        let line = format!("statuses: {}", format_status_counts(&r.status_counts));
        out.push_str(&wrap(&line, width, "", "  "));
    }
    for finding in &r.findings {
        write_finding(out, finding, width)?;
    }
    write_verdict(out, &r.findings, &r.verdict, width)
}

fn leg_row<'a>(name: &'a str, leg: &'a LegView) -> LegRow<'a> {
    LegRow {
        name,
        messages_are: &leg.messages_are,
        messages: leg.messages,
        stalled: leg.stalled,
        pause_p50_ms: leg.stall_pause_ms.map(|p| p.p50),
        time_lost_ms: leg.time_lost_ms,
        held_by: &leg.held_by,
    }
}

/// `verdict: ` the findings' ids, or the run's own verdict when it found nothing to name.
fn write_verdict(
    out: &mut String,
    findings: &[FindingView],
    verdict: &str,
    width: usize,
) -> std::fmt::Result {
    writeln!(out)?;
    let ids: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
    let verdict = if ids.is_empty() { verdict.to_string() } else { ids.join(", ") };
    out.push_str(&wrap(&format!("verdict: {verdict}"), width, "", "  "));
    Ok(())
}
