//! Human-readable text renderer, in the spirit of wrk's summary: figures first, every
//! number with its unit.

use crate::Render;
use crate::bench::{BenchReport, Percentiles, RequestReport};
use crate::format::{format_bytes, format_duration_ms};
use std::fmt::Write;

pub struct Text;

/// Share of due requests never sent past which an open-loop run is said to miss its rate.
const MISSED_RATE_SHARE: f64 = 0.05;

/// Connections listed one by one up to this many; beyond, a summary line.
const CONNECTIONS_LISTED: usize = 4;

impl Render<BenchReport> for Text {
    fn render(&self, report: &BenchReport) -> String {
        let mut out = String::new();
        write_bench(&mut out, report).expect("writing to a String cannot fail");
        out
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn write_bench(out: &mut String, r: &BenchReport) -> std::fmt::Result {
    let s = &r.settings;
    writeln!(out, "nodelay bench {} {} ({})", s.method, s.url, s.address)?;
    let bound = match (s.requests, s.duration_s) {
        (Some(n), _) => plural(n, "request", "requests"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "unbounded".into(),
    };
    let split = if s.write_split.is_empty() {
        String::new()
    } else {
        let sizes: Vec<String> = s.write_split.iter().map(|n| format!("{n} B")).collect();
        format!(", each request written as {} then the rest (client Nagle on)", sizes.join(", "))
    };
    let pacing = s.rate_per_second.map(|rate| format!(", open loop at {rate} req/s")).unwrap_or_default();
    writeln!(
        out,
        "  {}, {}, {}, {bound}{pacing}{split}",
        plural(s.connections as u64, "connection", "connections"),
        plural(s.threads as u64, "thread", "threads"),
        connection_mode(r),
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "  {} in {:.2} s: {:.1} req/s, {}/s read{}",
        plural(r.requests_completed, "response", "responses"),
        r.elapsed_s,
        r.requests_per_second,
        format_bytes(r.transfer_bytes_per_second),
        if r.interrupted { " (interrupted)" } else { "" },
    )?;
    write_missed_rate(out, r)?;
    let rows = [&r.latency_ms, &r.first_byte_ms, &r.read_gap_ms, &r.connect_ms];
    if rows.iter().all(|p| p.is_none()) {
        // No header over an empty table: say what happened instead.
        writeln!(out, "  no response completed")?;
    } else {
        writeln!(out, "  {:<12}{:>11}{:>11}{:>11}{:>11}{:>11}", "", "p50", "p90", "p99", "p99.9", "max")?;
    }
    for (label, percentiles) in [
        ("total", &r.latency_ms),
        ("first byte", &r.first_byte_ms),
        ("read gap", &r.read_gap_ms),
        ("connect", &r.connect_ms),
    ] {
        if let Some(p) = percentiles {
            write_percentiles(out, label, p)?;
        }
    }
    if r.requests_completed > 0 {
        writeln!(out, "  read() calls per response: {:.2} (mean)", r.read_chunks_per_response)?;
    }
    if let Some(by_request) = &r.by_request {
        write_by_request(out, by_request)?;
    }
    writeln!(out)?;
    let statuses: Vec<String> = r.status_counts.iter().map(|(code, n)| format!("{code} ×{n}")).collect();
    if r.settings.protocol == "http" {
        let statuses = if statuses.is_empty() { "none".into() } else { statuses.join(", ") };
        writeln!(out, "  {:<12}{statuses}", "status")?;
    }
    if r.non_success_responses > 0 {
        writeln!(
            out,
            "  {:<12}{} of {} are not {} (the figures above include them: an error page?)",
            "non-success",
            r.non_success_responses,
            plural(r.requests_completed, "response", "responses"),
            s.success_status,
        )?;
    }
    if s.keep_alive && r.requests_completed > 0 {
        writeln!(
            out,
            "  {:<12}{} of {} reused a connection; {} opened",
            "keep-alive",
            r.reused_connection_responses,
            plural(r.requests_completed, "response", "responses"),
            plural(r.connections_opened, "connection", "connections"),
        )?;
    }
    write_errors(out, r)?;
    if r.requests_unfinished > 0 {
        let unfinished = plural(r.requests_unfinished, "request", "requests");
        writeln!(out, "  {:<12}{unfinished} still in flight when the run ended", "unfinished")?;
    }
    write_connections(out, r)
}

/// "keep-alive" only when connections were really reused: a server that closes each one
/// makes every request pay a handshake, whatever the client asked for.
fn connection_mode(r: &BenchReport) -> &'static str {
    match (r.settings.keep_alive, r.reused_connection_responses) {
        (false, _) => "new connection per request",
        (true, 0) if r.requests_completed > 1 => "keep-alive asked, but the server closed every connection",
        (true, _) => "keep-alive",
    }
}

/// Open loop that fell behind: how far, and what would keep up. Every connection was busy,
/// so each spent connections / achieved rate per request (not the latency, which counts the
/// queueing from when each request was due); Little's law then gives the connections needed.
fn write_missed_rate(out: &mut String, r: &BenchReport) -> std::fmt::Result {
    let Some(rate) = r.settings.rate_per_second else { return Ok(()) };
    // A few slots falling due in the last instant while every connection is busy is the end of
    // the run, not a missed rate: the text speaks past this share (the JSON counts them all).
    let due = r.requests_completed + r.requests_due_not_sent;
    if (r.requests_due_not_sent as f64) <= MISSED_RATE_SHARE * due as f64 {
        return Ok(());
    }
    writeln!(
        out,
        "  missed rate: {} fell due and were never sent, every connection being busy ({:.1} of {rate} req/s)",
        plural(r.requests_due_not_sent, "request", "requests"),
        r.requests_per_second,
    )?;
    if r.requests_per_second <= 0.0 {
        return writeln!(out, "  raise -c, or look at why no response completed");
    }
    let connections = r.settings.connections as f64;
    let busy_s = connections / r.requests_per_second;
    let needed = (rate * busy_s).ceil().max(connections + 1.0) as u64;
    writeln!(
        out,
        "  raise -c: each connection was busy {} per request, so {rate} req/s needs about {needed}",
        format_duration_ms(busy_s * 1e3)
    )
}

fn write_by_request(out: &mut String, by_request: &[RequestReport]) -> std::fmt::Result {
    writeln!(out)?;
    writeln!(
        out,
        "  {:<24}{:>9}{:>7}{:>8}{:>11}{:>11}{:>11}{:>11}",
        "per request", "done", "errors", "non-ok", "p50", "p99", "1st byte", "read gap"
    )?;
    for request in by_request {
        let p = |percentiles: &Option<Percentiles>, pick: fn(&Percentiles) -> f64| {
            percentiles.as_ref().map_or("-".into(), |p| format_duration_ms(pick(p)))
        };
        writeln!(
            out,
            "  {:<24}{:>9}{:>7}{:>8}{:>11}{:>11}{:>11}{:>11}",
            request.name,
            request.requests_completed,
            request.errors,
            request.non_success_responses,
            p(&request.latency_ms, |p| p.p50),
            p(&request.latency_ms, |p| p.p99),
            p(&request.first_byte_ms, |p| p.p50),
            p(&request.read_gap_ms, |p| p.p50),
        )?;
    }
    Ok(())
}

fn write_percentiles(out: &mut String, label: &str, p: &Percentiles) -> std::fmt::Result {
    write!(out, "  {label:<12}")?;
    for value in [p.p50, p.p90, p.p99, p.p999, p.max] {
        write!(out, "{:>11}", format_duration_ms(value))?;
    }
    writeln!(out)
}

fn write_errors(out: &mut String, r: &BenchReport) -> std::fmt::Result {
    let nonzero: Vec<_> = r.errors.iter().filter(|(_, n)| **n > 0).collect();
    if nonzero.is_empty() {
        return writeln!(out, "  {:<12}none", "errors");
    }
    for (i, (kind, n)) in nonzero.into_iter().enumerate() {
        let example = r.error_examples.get(kind).map(|m| format!(" (first: {m})")).unwrap_or_default();
        writeln!(out, "  {:<12}{kind} ×{n}{example}", if i == 0 { "errors" } else { "" })?;
    }
    Ok(())
}

fn write_connections(out: &mut String, r: &BenchReport) -> std::fmt::Result {
    let with_info: Vec<_> = r.connections.iter().filter_map(|c| Some((c, c.tcp_info?))).collect();
    if with_info.is_empty() {
        return Ok(());
    }
    let ms = |us: u32| format_duration_ms(f64::from(us) / 1000.0);
    if with_info.len() <= CONNECTIONS_LISTED {
        for (c, info) in with_info {
            writeln!(
                out,
                "  {:<12}connection {}: rtt {} (min {}), ato {}, mss {} B out / {} B in, {}",
                "tcp_info",
                c.connection,
                ms(info.rtt_us),
                ms(info.min_rtt_us),
                ms(info.ato_us),
                info.snd_mss_bytes,
                info.rcv_mss_bytes,
                plural(u64::from(info.total_retransmits), "retransmit", "retransmits"),
            )?;
        }
        return Ok(());
    }
    let mut rtts: Vec<u32> = with_info.iter().map(|(_, i)| i.rtt_us).collect();
    rtts.sort_unstable();
    let min_rtt = with_info.iter().map(|(_, i)| i.min_rtt_us).min().unwrap_or(0);
    let max_ato = with_info.iter().map(|(_, i)| i.ato_us).max().unwrap_or(0);
    let retransmits: u64 = with_info.iter().map(|(_, i)| u64::from(i.total_retransmits)).sum();
    writeln!(
        out,
        "  {:<12}{} connections: rtt median {} (lowest min_rtt {}), highest ato {}, {} in total",
        "tcp_info",
        with_info.len(),
        ms(rtts[rtts.len() / 2]),
        ms(min_rtt),
        ms(max_ato),
        plural(retransmits, "retransmit", "retransmits"),
    )
}
