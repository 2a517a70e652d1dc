//! Text rendering of a `nodelay proxy` run, fitted to a width (the terminal's; 80 columns
//! when unknown): where an exchange's time went (client leg, relay, upstream), which leg
//! stalled and who held the data, then the tables, what failed, and the findings. Every
//! number carries its unit, each table uses one, and no line is wider than the width.

use crate::format::{
    DurationScale, format_bytes, format_duration_ms, format_ms, format_status_counts, ms_decimals, plural,
};
use crate::model::percentiles::Percentiles;
use crate::model::proxy::{LegReport, ProxyReport, StallExampleReport};
use crate::render::Render;
use crate::text::bench::format_elapsed;
use crate::text::finding::write_finding_fitted;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use crate::text::{DEFAULT_WIDTH, MIN_WIDTH};
use crate::text::{FittedText, Text};
use nodelay_tcp::time::ms_from_us as ms_of_us;
use std::fmt::Write;

/// Stalled messages spelled out (the JSON has a few more).
const EXAMPLES_SHOWN: usize = 3;

impl Render<ProxyReport> for Text {
    fn render(&self, report: &ProxyReport) -> String {
        report.render_text(DEFAULT_WIDTH)
    }
}

impl Render<ProxyReport> for FittedText {
    fn render(&self, report: &ProxyReport) -> String {
        report.render_text(self.width)
    }
}

impl ProxyReport {
    /// The text report, no line wider than `width` columns (at least [`MIN_WIDTH`]).
    pub fn render_text(&self, width: usize) -> String {
        let width = width.max(MIN_WIDTH);
        let mut out = String::new();
        write_proxy(&mut out, self, width).expect("writing to a String cannot fail");
        out
    }
}

fn count(n: u64, one: &str, many: &str) -> String {
    plural(usize::try_from(n).unwrap_or(usize::MAX), one, many)
}

fn stopped(r: &ProxyReport) -> String {
    match &*r.stopped_by {
        "duration" => "stopped at the end of -d".into(),
        "exchanges" => {
            format!("stopped after {}", count(r.exchanges, "exchange", "exchanges"))
        }
        _ => "interrupted (Ctrl-C)".into(),
    }
}

fn framing(r: &ProxyReport) -> String {
    let turns = r.exchanges - r.http_exchanges;
    match (r.http_exchanges, turns) {
        (0, 0) => String::new(),
        (_, 0) => " (HTTP)".into(),
        (0, _) => " (by turns)".into(),
        (http, turns) => format!(" ({http} HTTP, {turns} by turns)"),
    }
}

fn write_proxy(out: &mut String, r: &ProxyReport, width: usize) -> std::fmt::Result {
    let connections = r.connections.accepted;
    let heading = format!(
        "nodelay proxy {} -> {}: {}{} on {} in {} ({})",
        r.listen,
        r.upstream,
        count(r.exchanges, "exchange", "exchanges"),
        framing(r),
        count(connections, "connection", "connections"),
        format_elapsed(r.elapsed_s),
        stopped(r)
    );
    out.push_str(&wrap(&heading, width, "", "  "));
    if r.exchanges > 0 {
        out.push('\n');
        write_split(out, r, width);
        write_parts_table(out, r, width);
        out.push('\n');
        write_legs_table(out, r, width);
        write_tcp_info_table(out, r, width);
        for example in r.stall_examples.iter().take(EXAMPLES_SHOWN) {
            out.push_str(&wrap(&describe_example(example), width, "  ", "    "));
        }
        let stalls = r.client_leg.stalled + r.upstream_leg.stalled;
        let shown = EXAMPLES_SHOWN.min(r.stall_examples.len()) as u64;
        if stalls > shown && shown > 0 {
            out.push_str(&wrap(&format!("... and {} more stalls", stalls - shown), width, "  ", "    "));
        }
    }
    out.push('\n');
    write_counts(out, r, width);
    for finding in &r.findings {
        out.push('\n');
        write_finding_fitted(out, finding, width)?;
    }
    out.push('\n');
    let verdict = if r.findings.is_empty() {
        "nothing relayed".to_string()
    } else {
        r.findings.iter().map(|f| f.id.as_str()).collect::<Vec<_>>().join(", ")
    };
    out.push_str(&wrap(&format!("verdict: {verdict}"), width, "", "  "));
    Ok(())
}

fn p50(percentiles: &Option<Percentiles>) -> f64 {
    percentiles.as_ref().map_or(0.0, |p| p.p50)
}

/// The two lines people read first: where the time went, and which leg stalled.
fn write_split(out: &mut String, r: &ProxyReport, width: usize) {
    let parts = &r.latency_ms;
    let split = format!(
        "split (medians per exchange): {} in the client leg, {} upstream, {} in the relay; {} in total",
        format_duration_ms(p50(&parts.client_leg)),
        format_duration_ms(p50(&parts.upstream)),
        format_duration_ms(p50(&parts.relay)),
        format_duration_ms(p50(&parts.total)),
    );
    out.push_str(&wrap(&split, width, "", "  "));
    // Across a path, each leg's round trip beside the split it is part of (none on loopback).
    let across = |leg: &LegReport| nodelay_tcp::path_rtt_ms(leg.path_rtt_ms);
    if across(&r.client_leg).is_some() || across(&r.upstream_leg).is_some() {
        let rtt = |leg: &LegReport| leg.path_rtt_ms.map_or("-".to_string(), format_duration_ms);
        let line = format!(
            "path round trips (relay TCP_INFO min_rtt): client leg {}, upstream leg {}; first bytes and pauses \
             are judged beyond them",
            rtt(&r.client_leg),
            rtt(&r.upstream_leg)
        );
        out.push_str(&wrap(&line, width, "", "  "));
    }
    let leg_stalls = |leg: &LegReport, name: &str| {
        let pause =
            leg.stall_pause_ms.map(|p| format!(", {}", format_duration_ms(p.p50))).unwrap_or_default();
        let held = if leg.stalled > 0 { format!(", held by the {}", leg.held_by) } else { String::new() };
        format!("{name} leg {} of {}{pause}{held}", leg.stalled, leg.messages)
    };
    let (upstream, client) = (leg_stalls(&r.upstream_leg, "upstream"), leg_stalls(&r.client_leg, "client"));
    // The leg that stalled first.
    let line = if r.client_leg.stalled > r.upstream_leg.stalled {
        format!("stalls: {client}; {upstream}")
    } else {
        format!("stalls: {upstream}; {client}")
    };
    out.push_str(&wrap(&line, width, "", "  "));
}

/// Each part of an exchange, after a blank line, in [`write_parts`]'s table.
fn write_parts_table(out: &mut String, r: &ProxyReport, width: usize) {
    let parts = &r.latency_ms;
    let spread = |p: &Option<Percentiles>| p.as_ref().map(|p| [p.min, p.p50, p.p90, p.p99, p.max]);
    let rows = [
        ("total", spread(&parts.total)),
        ("client leg", spread(&parts.client_leg)),
        ("relay", spread(&parts.relay)),
        ("upstream", spread(&parts.upstream)),
        ("upstream first byte", spread(&parts.upstream_first_byte)),
    ];
    out.push('\n');
    write_parts(out, &rows, width);
}

/// The parts of an exchange measured, each with its min, p50, p90, p99 and max in
/// milliseconds (`None`: not measured, no row), all in one unit.
pub(crate) fn write_parts(out: &mut String, rows: &[(&str, Option<[f64; 5]>)], width: usize) {
    let scale = DurationScale::for_ms(rows.iter().filter_map(|(_, spread)| *spread).flatten());
    let mut table =
        TextTable::new(width, 2, &[Col::Text, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right]);
    table.header(["per exchange", "min", "p50", "p90", "p99", "max"]);
    for (label, spread) in rows {
        let Some(spread) = spread else { continue };
        let mut row = vec![label.to_string()];
        row.extend(spread.iter().map(|ms| scale.format(*ms)));
        table.row(row);
    }
    out.push_str(&table.render());
}

/// The client leg and the upstream leg, in [`write_legs`]'s table.
fn write_legs_table<'a>(out: &mut String, r: &'a ProxyReport, width: usize) {
    let row = |name: &'static str, leg: &'a LegReport| LegRow {
        name,
        messages_are: &leg.messages_are,
        messages: leg.messages,
        stalled: leg.stalled,
        pause_p50_ms: leg.stall_pause_ms.map(|p| p.p50),
        time_lost_ms: leg.time_lost_ms,
        held_by: &leg.held_by,
    };
    write_legs(out, &[row("client", &r.client_leg), row("upstream", &r.upstream_leg)], width);
}

/// A leg of a relay as its table shows it.
pub(crate) struct LegRow<'a> {
    /// `client` or `upstream`.
    pub name: &'a str,
    /// `requests` or `responses`.
    pub messages_are: &'a str,
    pub messages: u64,
    pub stalled: u64,
    /// The stalled messages' median pause (`None`: none stalled).
    pub pause_p50_ms: Option<f64>,
    pub time_lost_ms: f64,
    pub held_by: &'a str,
}

/// Per leg: messages, how many stalled, the median pause, time lost, and who held it.
pub(crate) fn write_legs(out: &mut String, legs: &[LegRow], width: usize) {
    // Milliseconds, whatever the time lost adds up to: the pause reads as a timer's length.
    let decimals =
        ms_decimals(legs.iter().flat_map(|leg| [leg.pause_p50_ms.unwrap_or(0.0), leg.time_lost_ms]));
    let mut table =
        TextTable::new(width, 2, &[Col::Text, Col::Right, Col::Right, Col::Right, Col::Right, Col::Left]);
    table.header(["leg", "messages", "stalled", "pause p50", "time lost", "held by"]);
    for leg in legs {
        let stalled = leg.stalled > 0;
        table.row([
            format!("{} ({})", leg.name, leg.messages_are),
            leg.messages.to_string(),
            leg.stalled.to_string(),
            leg.pause_p50_ms.map_or_else(|| "-".to_string(), |ms| format_ms(ms, decimals)),
            if stalled { format_ms(leg.time_lost_ms, decimals) } else { "-".to_string() },
            if stalled { leg.held_by.to_string() } else { "-".to_string() },
        ]);
    }
    out.push_str(&table.render());
}

/// The relay's own sockets as the kernel sees them (the busiest connection's).
fn write_tcp_info_table(out: &mut String, r: &ProxyReport, width: usize) {
    let legs: Vec<_> = [("client leg", &r.client_leg), ("upstream leg", &r.upstream_leg)]
        .into_iter()
        .filter_map(|(name, leg)| Some((name, leg.relay_socket?)))
        .collect();
    if legs.is_empty() {
        return;
    }
    let scale = DurationScale::for_ms(
        legs.iter().flat_map(|(_, i)| [ms_of_us(i.rtt_us), ms_of_us(i.min_rtt_us), ms_of_us(i.ato_us)]),
    );
    let mut table = TextTable::new(width, 2, &[Col::Text, Col::Right, Col::Right, Col::Right, Col::Right]);
    table.header(["relay socket (tcp_info)", "rtt", "min rtt", "ato", "retransmits"]);
    for (name, info) in legs {
        table.row([
            name.to_string(),
            crate::text::bench::sampled(&info, info.rtt_us, &scale),
            crate::text::bench::sampled(&info, info.min_rtt_us, &scale),
            scale.format(ms_of_us(info.ato_us)),
            info.total_retransmits.to_string(),
        ]);
    }
    out.push('\n');
    out.push_str(&table.render());
    out.push('\n');
}

fn describe_example(e: &StallExampleReport) -> String {
    let message = if e.leg == "client" { "request" } else { "response" };
    format!(
        "connection {}, exchange {} at {:.3} s: the {message} ({} in {} reads) paused {} after {}",
        e.connection,
        e.exchange,
        e.at_s,
        format_bytes(e.bytes as f64),
        e.reads,
        format_duration_ms(e.pause_ms),
        format_bytes(e.bytes_before_pause as f64),
    )
}

/// What became of the connections a relay accepted.
pub(crate) fn connections_line(accepted: u64, closed: u64, open_at_end: u64, failed: u64) -> String {
    let mut line =
        format!("connections: {accepted} accepted, {closed} closed, {open_at_end} open at the end");
    if failed > 0 {
        let _ = write!(line, ", {failed} ended by a reset or a failed read or write");
    }
    line
}

/// Connections, statuses, refusals and exchanges that did not finish.
fn write_counts(out: &mut String, r: &ProxyReport, width: usize) {
    let c = &r.connections;
    let mut line = connections_line(c.accepted, c.closed, c.open_at_end, c.failed);
    if let Some(connect) = &c.upstream_connect_ms {
        let _ = write!(line, "; upstream handshake p50 {}", format_duration_ms(connect.p50));
    }
    out.push_str(&wrap(&line, width, "", "  "));
    if !r.status_counts.is_empty() {
        out.push_str(&wrap(
            &format!("statuses: {}", format_status_counts(&r.status_counts)),
            width,
            "",
            "  ",
        ));
    }
    let f = &r.upstream_failures;
    let failures = [
        (f.refused, "refused"),
        (f.timed_out, "did not answer"),
        (f.out_of_files, "could not be reached for want of file descriptors:"),
        (f.other, "failed"),
    ];
    for (n, what) in failures.into_iter().filter(|(n, _)| *n > 0) {
        let line = format!(
            "upstream {} {what} {}; their clients' connections were closed",
            r.upstream,
            count(n, "connection", "connections")
        );
        out.push_str(&wrap(&line, width, "", "  "));
    }
    if let Some(example) = &f.example {
        out.push_str(&wrap(&format!("first failure: {example}"), width, "  ", "    "));
    }
    if c.accept_failures > 0 {
        let line = format!("{} accept() failures (out of file descriptors?)", c.accept_failures);
        out.push_str(&wrap(&line, width, "", "  "));
    }
    let i = &r.incomplete;
    let reasons: Vec<String> = [
        (i.client_gone, "the client closed its side mid-exchange"),
        (i.upstream_gone, "the upstream closed its side mid-exchange"),
        (i.in_flight_at_end, "in flight when the relay stopped"),
        (i.untimed, "relayed but not timed (framing the relay could not follow)"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if !reasons.is_empty() {
        let total = i.client_gone + i.upstream_gone + i.in_flight_at_end + i.untimed;
        let line = format!("{} incomplete: {}", count(total, "exchange", "exchanges"), reasons.join(", "));
        out.push_str(&wrap(&line, width, "", "  "));
    }
    if let Some(why) = &c.framing_lost_example {
        let line =
            format!("HTTP framing given up on {}: {why}", count(c.framing_lost, "connection", "connections"));
        out.push_str(&wrap(&line, width, "", "  "));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::display_width;
    use nodelay_proxy::{ExchangeRecord, Framing, ProxyStats, Reads, RelayEnd, RelaySink, StopReason};
    use std::time::{Duration, Instant};

    /// A run of `exchanges` on one connection whose responses pause `gap_ms` after the head
    /// (all but the first), as the stalling Python server behind the relay shows.
    pub(crate) fn report(exchanges: u32, gap_ms: u64) -> ProxyReport {
        let t0 = Instant::now();
        let mut stats = ProxyStats::new(t0, nodelay_tcp::thresholds::STALL_GAP);
        for sequence in 0..exchanges {
            let start = t0 + Duration::from_millis(50 * u64::from(sequence));
            let forwarded = start + Duration::from_micros(20);
            let mut response = Reads::start(forwarded + Duration::from_micros(200), 119);
            if sequence > 0 && gap_ms > 0 {
                response.add(response.first + Duration::from_millis(gap_ms), 13);
            }
            stats.exchange(&ExchangeRecord {
                connection: 1,
                sequence,
                framing: Framing::Http,
                request: Reads::start(start, 78),
                forwarded,
                response,
                delivered: response.last + Duration::from_micros(15),
                status: 200,
                client_rtt: Some(Duration::from_micros(12)),
                upstream_rtt: Some(Duration::from_micros(30)),
            });
        }
        let end = RelayEnd {
            elapsed: Duration::from_millis(1350),
            stopped_by: StopReason::Exchanges,
            accepted: 1,
            open_at_end: 0,
            accept_failures: 0,
        };
        let diagnosis = nodelay_diagnose::RelayObservations::of(&stats).diagnose();
        ProxyReport::new("127.0.0.1:41234".into(), "127.0.0.1:8000".into(), &stats, &end, diagnosis)
    }

    #[test]
    fn the_split_and_the_stalling_leg_come_first() {
        let text = report(30, 43).render_text(80);
        assert!(text.starts_with("nodelay proxy 127.0.0.1:41234 -> 127.0.0.1:8000: 30 exchanges (HTTP)"));
        assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
        // Sentences read the same however the width wrapped them.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for expected in [
            "split (medians per exchange): 15.0 µs in the client leg, 43.22 ms upstream, 20.0 µs in the relay",
            "stalls: upstream leg 29 of 30, 43.02 ms, held by the upstream; client leg 0 of 30",
            "upstream (responses) 30 29 43.02 ms 1247.00 ms upstream",
            "server-nagle-delayed-ack (proven, high confidence)",
            "(seen by the relay)",
        ] {
            assert!(text.contains(expected), "{expected:?} in {text}");
        }
    }

    #[test]
    fn across_a_path_the_legs_round_trips_stand_under_the_split() {
        let mut across = report(30, 43);
        across.upstream_leg.path_rtt_ms = Some(40.4);
        let text = across.render_text(80).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains(
                "path round trips (relay TCP_INFO min_rtt): client leg 12.0 µs, upstream leg 40.40 ms"
            ),
            "{text}"
        );
        // On loopback (both legs under 1 ms) the line is not there.
        assert!(!report(30, 43).render_text(80).contains("path round trip"));
    }

    #[test]
    fn no_line_is_wider_than_the_width() {
        for report in [report(30, 43), report(30, 0), report(0, 0)] {
            for width in [0, 40, 60, 72, 80, 100, 140] {
                let text = report.render_text(width);
                for line in text.lines() {
                    assert!(display_width(line) <= width.max(MIN_WIDTH), "{width}: {line:?}\n{text}");
                }
            }
        }
    }

    #[test]
    fn healthy_and_empty_runs_say_so() {
        let healthy = report(30, 0);
        assert!(healthy.is_healthy());
        assert!(healthy.render_text(80).contains("verdict: healthy"));
        let empty = report(0, 0);
        assert!(empty.relayed_nothing());
        assert!(empty.render_text(80).contains("verdict: nothing relayed"));
    }
}
