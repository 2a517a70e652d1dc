//! `nodelay bench` as text: the settings before the run, then its figures (latency table,
//! histogram, outcomes, connections), the server view, findings and suggestions. Also the
//! helpers the other renderers share with it (the latency statistics, run lengths, plurals),
//! and the parts a saved run's text (`text::saved`) lays out alike from plain values: the
//! heading, the figures' line, the latency columns, the outcome rows and the suggestions.

use crate::format::{DurationScale, display_width, format_bytes, format_duration_ms, format_status_counts};
use crate::model::bench::{BenchReport, BenchSettings, HistogramBucket, RequestReport};
use crate::model::percentiles::Percentiles;
use crate::render::Render;
use crate::text::finding::write_finding_fitted;
use crate::text::layout::{Col, TextTable};
use crate::text::server_view::write_server_view;
use crate::text::wrap::wrap;
use crate::text::{FittedText, MIN_WIDTH, Text};
use nodelay_tcp::TcpInfo;
use nodelay_tcp::time::ms_from_us as ms_of_us;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Share of due requests never sent past which an open-loop run is said to miss its rate.
const MISSED_RATE_SHARE: f64 = 0.05;

/// Connections listed one by one up to this many; beyond, a summary line.
const CONNECTIONS_LISTED: usize = 4;

/// Longest histogram bar: longer ones are no easier to compare.
const HISTOGRAM_BAR: usize = 40;

/// Picks one statistic out of a set of percentiles.
pub(crate) type Statistic = fn(&Percentiles) -> f64;

/// The rows of the latency table, in the order read: the spread, then the moments.
pub(crate) const STATISTICS: [(&str, Statistic); 9] = [
    ("min", |p| p.min),
    ("p50", |p| p.p50),
    ("p90", |p| p.p90),
    ("p95", |p| p.p95),
    ("p99", |p| p.p99),
    ("p99.9", |p| p.p999),
    ("max", |p| p.max),
    ("mean", |p| p.mean),
    ("stdev", |p| p.stdev),
];

impl Render<BenchReport> for Text {
    fn render(&self, report: &BenchReport) -> String {
        FittedText::default().render(report)
    }
}

/// What the run is about to do: printed before it starts.
impl Render<BenchSettings> for FittedText {
    fn render(&self, settings: &BenchSettings) -> String {
        bench_header(settings, self.width)
    }
}

/// The settings, then the results.
impl Render<BenchReport> for FittedText {
    fn render(&self, report: &BenchReport) -> String {
        bench_header(&report.settings, self.width) + &self.bench_results(report)
    }
}

impl FittedText {
    /// What the run measured, without the settings (printed before the run).
    pub fn bench_results(&self, report: &BenchReport) -> String {
        let mut out = String::new();
        write_bench_results(&mut out, report, self.width.max(MIN_WIDTH))
            .expect("writing to a String cannot fail");
        out + &self.thresholds(&report.thresholds)
    }
}

pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `0.88 s`, `3.83 ms`: a run's length, in milliseconds only when it was that short.
/// A run's length: seconds, or milliseconds under 0.1 s (a span of 2 ms is not "0.00 s").
pub(crate) fn format_elapsed(seconds: f64) -> String {
    if seconds >= 0.1 { format!("{seconds:.2} s") } else { format_duration_ms(seconds * 1e3) }
}

/// How long a run lasts: `100 requests`, `10 s`.
pub(crate) fn run_bound(requests: Option<u64>, duration_s: Option<f64>) -> String {
    match (requests, duration_s) {
        (Some(n), _) => plural(n, "request", "requests"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "unbounded".into(),
    }
}

/// How a bench run loads its target, without what only a live run's settings have:
/// `2 connections, 1 thread, keep-alive, 20 requests, open loop at 100 req/s`.
pub(crate) fn load_line(
    connections: u64,
    threads: u64,
    keep_alive: bool,
    bound: &str,
    rate_per_second: Option<f64>,
) -> String {
    let pacing = rate_per_second.map(|rate| format!(", open loop at {rate} req/s")).unwrap_or_default();
    let mode = if keep_alive { "keep-alive" } else { "new connection per request" };
    format!(
        "{}, {}, {mode}, {bound}{pacing}",
        plural(connections, "connection", "connections"),
        plural(threads, "thread", "threads"),
    )
}

/// The first lines of a bench run: its request and target, then how it loads it (`load`).
pub(crate) fn bench_heading(method: &str, url: &str, address: &str, load: &str, width: usize) -> String {
    wrap(&format!("nodelay bench {method} {url} ({address})"), width, "", "  ")
        + &wrap(load, width, "  ", "    ")
}

fn bench_header(s: &BenchSettings, width: usize) -> String {
    let bound = run_bound(s.requests, s.duration_s);
    let split = if s.write_split.is_empty() {
        String::new()
    } else {
        let sizes: Vec<String> = s.write_split.iter().map(|n| format!("{n} B")).collect();
        format!(", each request written as {} then the rest (client Nagle on)", sizes.join(", "))
    };
    let spin = match (s.busy_poll, s.busy_poll_after_us) {
        (false, _) => String::new(),
        (true, None) => ", busy-polling (a whole core per thread)".into(),
        (true, Some(us)) => format!(", busy-polling {} after each event", format_duration_ms(us / 1000.0)),
    };
    let load = load_line(s.connections as u64, s.threads as u64, s.keep_alive, &bound, s.rate_per_second);
    let tls = s.tls.as_ref().map(|tls| wrap(&tls.describe(), width, "  ", "    ")).unwrap_or_default();
    // Which loop ran and why: the two time responses differently (by arrival, by read).
    let how = if s.batched_waits { ": batched waits, kernel arrival times" } else { "" };
    // A run saved before the loop was recorded says nothing of it.
    let event_loop = if s.event_loop.is_empty() {
        String::new()
    } else {
        wrap(&format!("{} loop ({}){how}", s.event_loop, s.event_loop_why), width, "  ", "    ")
    };
    let http2 = s
        .http2
        .as_ref()
        .map(|h2| wrap(&super::http2::settings_line(h2), width, "  ", "    "))
        .unwrap_or_default();
    bench_heading(&s.method, &s.url, &s.address, &format!("{load}{split}{spin}"), width)
        + &tls
        + &http2
        + &event_loop
}

/// `20 responses in 0.88 s{span}: 22.7 req/s`: how many completed, in how long, at what rate.
pub(crate) fn rate_line(responses: u64, seconds: f64, span: &str, requests_per_second: f64) -> String {
    format!(
        "{} in {}{span}: {requests_per_second:.1} req/s",
        plural(responses, "response", "responses"),
        format_elapsed(seconds)
    )
}

/// A bench run's line of figures: its `rate` ([`rate_line`]), then what it read and how fast.
pub(crate) fn bench_summary(rate: &str, response_bytes: u64, transfer_bytes_per_second: f64) -> String {
    format!(
        "{rate}; {} read, {}/s",
        format_bytes(response_bytes as f64),
        format_bytes(transfer_bytes_per_second)
    )
}

fn write_bench_results(out: &mut String, r: &BenchReport, width: usize) -> std::fmt::Result {
    writeln!(out)?;
    let rate = rate_line(r.requests_completed, r.elapsed_s, "", r.requests_per_second);
    let summary = bench_summary(&rate, r.response_bytes, r.transfer_bytes_per_second);
    out.push_str(&wrap(&summary, width, "  ", "    "));
    if r.interrupted {
        let interrupted = format!(
            "interrupted (Ctrl-C) after {}: the figures cover what completed until then",
            format_elapsed(r.elapsed_s)
        );
        out.push_str(&wrap(&interrupted, width, "  ", "    "));
    }
    write_missed_rate(out, r, width)?;
    if let Some(line) = path_line(r, width) {
        out.push_str(&line);
    }
    if r.retransmission_waits > 0 {
        // Counted apart: a loss, not the server, made these responses wait.
        let line = format!(
            "{} waited a retransmission timeout (200 ms or more beyond the round trip; {} resent): the path \
             loses packets; their time is in the figures below",
            plural(r.retransmission_waits, "response", "responses"),
            plural(r.segments_resent.unwrap_or(0), "segment", "segments")
        );
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    write_latency_table(out, r, width)?;
    if r.requests_completed > 0 {
        writeln!(out, "  read() calls per response: {:.2} (mean)", r.read_chunks_per_response)?;
    }
    write_histogram(out, &r.latency_histogram, width)?;
    if let Some(by_request) = &r.by_request {
        write_by_request(out, by_request, width)?;
    }
    writeln!(out)?;
    write_outcomes(out, r, width);
    write_connections(out, r, width)?;
    if let Some(view) = &r.server_view {
        writeln!(out)?;
        write_server_view(out, view, width)?;
    }
    for finding in &r.findings {
        writeln!(out)?;
        write_finding_fitted(out, finding, width)?;
    }
    let suggestions = r.suggestions.iter().map(|s| (&*s.id, s.why.as_str(), s.prove.as_str()));
    write_suggestions(out, suggestions, width)
}

/// Across a path ([`nodelay_tcp::is_path`]), one line beside the latency
/// figures: the round trip, the network's share of the median, and what the server and the
/// load add beyond it. The most the width holds of three wordings; `None` on loopback and
/// when nothing completed.
fn path_line(r: &BenchReport, width: usize) -> Option<String> {
    let rtt = nodelay_tcp::path_rtt_ms(r.path_rtt_ms)?;
    let p50 = r.latency_ms.as_ref()?.p50;
    // min_rtt is the least sample: a median under it is the clock's rounding, all network.
    let share = (rtt / p50.max(rtt) * 100.0).min(100.0);
    let beyond = (p50 - rtt).max(0.0);
    let scale = DurationScale::for_ms([rtt, p50, beyond]);
    let (rtt, p50, beyond) = (scale.format(rtt), scale.format(p50), scale.format(beyond));
    let share = format!("{share:.0} %");
    let wordings = [
        format!(
            "path round trip {rtt} (TCP_INFO min_rtt): p50 {p50} is {share} the network's; \
             the server and the load add {beyond}"
        ),
        format!(
            "path round trip {rtt} (TCP_INFO min_rtt): p50 {p50} is {share} the network's; server and load {beyond}"
        ),
        format!("path round trip {rtt} (min_rtt): {share} of p50 {p50}; server and load {beyond}"),
        format!("path round trip {rtt}: {share} of p50 {p50}; server and load {beyond}"),
        format!("path round trip {rtt}: {share} of p50; {beyond} beyond it"),
    ];
    let indent = "  ";
    let fitting = wordings.iter().find(|w| display_width(indent) + display_width(w) <= width);
    // Narrower than any wording (below the least width): the shortest, wrapped.
    Some(match fitting {
        Some(line) => format!("{indent}{line}\n"),
        None => wrap(&wordings[wordings.len() - 1], width, indent, "    "),
    })
}

/// What the numbers suggest, each (`id`, `why`, `prove`) with the command that would prove it.
pub(crate) fn write_suggestions<'a>(
    out: &mut String,
    suggestions: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    width: usize,
) -> std::fmt::Result {
    let mut suggestions = suggestions.into_iter().peekable();
    if suggestions.peek().is_none() {
        return Ok(());
    }
    if !out.ends_with("\n\n") {
        writeln!(out)?;
    }
    out.push_str(&wrap("what these numbers suggest (not proven; no experiment was run):", width, "", "  "));
    for (id, why, prove) in suggestions {
        out.push_str(&wrap(&format!("{id}: {why}"), width, "  ", "    "));
        out.push_str(&wrap(&format!("prove it: {prove}"), width, "    ", "      "));
    }
    Ok(())
}

/// Open loop that fell behind: how far, and what would keep up. Every connection was busy,
/// so each spent connections / achieved rate per request (not the latency, which counts the
/// queueing from when each request was due); Little's law then gives the connections needed.
fn write_missed_rate(out: &mut String, r: &BenchReport, width: usize) -> std::fmt::Result {
    let Some(rate) = r.settings.rate_per_second else { return Ok(()) };
    // A few slots falling due in the last instant while every connection is busy is the end of
    // the run, not a missed rate: the text speaks past this share (the JSON counts them all).
    let due = r.requests_completed + r.requests_due_not_sent;
    if (r.requests_due_not_sent as f64) <= MISSED_RATE_SHARE * due as f64 {
        return Ok(());
    }
    let missed = format!(
        "missed rate: {} fell due and were never sent, every connection being busy ({:.1} of {rate} req/s)",
        plural(r.requests_due_not_sent, "request", "requests"),
        r.requests_per_second,
    );
    out.push_str(&wrap(&missed, width, "  ", "    "));
    let advice = if r.requests_per_second <= 0.0 {
        "raise -c, or look at why no response completed".to_string()
    } else {
        let connections = r.settings.connections as f64;
        let busy_s = connections / r.requests_per_second;
        let needed = (rate * busy_s).ceil().max(connections + 1.0) as u64;
        format!(
            "raise -c: each connection was busy {} per request, so {rate} req/s needs about {needed}",
            format_duration_ms(busy_s * 1e3)
        )
    };
    out.push_str(&wrap(&advice, width, "  ", "    "));
    Ok(())
}

/// One column per measured figure (total, first byte, ...), one row per statistic: nine
/// statistics fit 80 columns this way round. Each column has its own unit: its figures
/// compare with each other, and a connect time in nanoseconds keeps its digits beside a
/// total in seconds.
fn write_latency_table(out: &mut String, r: &BenchReport, width: usize) -> std::fmt::Result {
    let measured: Vec<(&str, Vec<f64>)> = [
        ("total", &r.latency_ms),
        ("uncorrected", &r.latency_uncorrected_ms),
        ("first byte", &r.first_byte_ms),
        ("read gap", &r.read_gap_ms),
        ("connect", &r.connect_ms),
        ("TLS handshake", &r.tls_handshake_ms),
    ]
    .into_iter()
    .filter_map(|(label, p)| Some((label, statistics_of(p.as_ref()?))))
    .collect();
    write_latency_columns(out, &STATISTICS.map(|(name, _)| name), &measured, width)?;
    if r.latency_uncorrected_ms.is_some() {
        let note = "total counts from when each request was due (corrected for coordinated omission); \
                    uncorrected from when it was sent, which hides the wait of requests a stalled \
                    server kept from being sent";
        out.push_str(&wrap(note, width, "  ", "    "));
    }
    Ok(())
}

/// Each of [`STATISTICS`] of `p`, in their order.
pub(crate) fn statistics_of(p: &Percentiles) -> Vec<f64> {
    STATISTICS.iter().map(|(_, pick)| pick(p)).collect()
}

/// A blank line, then one column per figure `measured` (its label, and its value of each of
/// `statistics`, the rows' labels), each column in its own unit; "no response completed"
/// when nothing was measured.
pub(crate) fn write_latency_columns(
    out: &mut String,
    statistics: &[&str],
    measured: &[(&str, Vec<f64>)],
    width: usize,
) -> std::fmt::Result {
    if measured.is_empty() {
        // No header over an empty table: say what happened instead.
        return writeln!(out, "  no response completed");
    }
    writeln!(out)?;
    let scales: Vec<DurationScale> =
        measured.iter().map(|(_, values)| DurationScale::for_ms(values.iter().copied())).collect();
    let mut columns = vec![Col::Left];
    columns.extend(measured.iter().map(|_| Col::Right));
    let mut table = TextTable::new(width, 2, &columns);
    table.header(std::iter::once("").chain(measured.iter().map(|(label, _)| *label)));
    for (row, statistic) in statistics.iter().enumerate() {
        let values = measured.iter().zip(&scales).map(|((_, values), scale)| scale.format(values[row]));
        table.row(std::iter::once(statistic.to_string()).chain(values));
    }
    out.push_str(&table.render());
    Ok(())
}

/// The total latency in equal-width buckets, as oha and hey draw it: the bound, the count
/// and a bar proportional to it.
fn write_histogram(out: &mut String, buckets: &[HistogramBucket], width: usize) -> std::fmt::Result {
    let Some(most) = buckets.iter().map(|b| b.count).max().filter(|&n| n > 0) else { return Ok(()) };
    // The step between bounds counts too: adjacent bounds must not read alike.
    let step = match buckets {
        [first, second, ..] => second.up_to_ms - first.up_to_ms,
        _ => 0.0,
    };
    let scale = DurationScale::for_ms(buckets.iter().map(|b| b.up_to_ms).chain([step]));
    let bounds: Vec<String> = buckets.iter().map(|b| format!("≤ {}", scale.format(b.up_to_ms))).collect();
    let counts: Vec<String> = buckets.iter().map(|b| b.count.to_string()).collect();
    let widest = |cells: &[String]| cells.iter().map(|c| c.chars().count()).max().unwrap_or(0);
    // Indent, two columns and their gaps; the bar takes what is left, up to its cap.
    let bar_room =
        width.saturating_sub(4 + widest(&bounds) + 2 + widest(&counts) + 2).clamp(1, HISTOGRAM_BAR);
    writeln!(out)?;
    writeln!(out, "  total latency histogram (responses per bucket):")?;
    let mut table = TextTable::new(width, 4, &[Col::Right, Col::Right, Col::Left]);
    for ((bucket, bound), count) in buckets.iter().zip(bounds).zip(counts) {
        let share = bucket.count as f64 / most as f64;
        // Never an empty bar for a bucket that holds something: one outlier is worth seeing.
        let length = if bucket.count == 0 { 0 } else { ((share * bar_room as f64).round() as usize).max(1) };
        table.row([bound, count, "█".repeat(length)]);
    }
    out.push_str(&table.render());
    Ok(())
}

fn write_by_request(out: &mut String, by_request: &[RequestReport], width: usize) -> std::fmt::Result {
    writeln!(out)?;
    type Pick = fn(&RequestReport) -> Option<f64>;
    let timed: [Pick; 4] = [
        |r| r.latency_ms.map(|p| p.p50),
        |r| r.latency_ms.map(|p| p.p99),
        |r| r.first_byte_ms.map(|p| p.p50),
        |r| r.read_gap_ms.map(|p| p.p50),
    ];
    let scales = timed.map(|pick| DurationScale::for_ms(by_request.iter().filter_map(pick)));
    let mut columns = vec![Col::Hanging];
    columns.extend([Col::Right; 7]);
    let mut table = TextTable::new(width, 2, &columns);
    table.header(["per request", "done", "errors", "non-ok", "p50", "p99", "1st byte", "read gap"]);
    for request in by_request {
        let mut cells = vec![
            request.name.clone(),
            request.requests_completed.to_string(),
            request.errors.to_string(),
            request.non_success_responses.to_string(),
        ];
        cells.extend(
            timed
                .iter()
                .zip(&scales)
                .map(|(pick, scale)| pick(request).map_or("-".into(), |ms| scale.format(ms))),
        );
        table.row(cells);
    }
    out.push_str(&table.render());
    Ok(())
}

/// Statuses, error pages, connection reuse, errors and what was left in flight: a label and
/// its sentence, wrapped beside the label.
fn write_outcomes(out: &mut String, r: &BenchReport, width: usize) {
    let s = &r.settings;
    let mut rows: Vec<(&str, String)> = Vec::new();
    if s.protocol == "http" {
        rows.push(status_row(&r.status_counts));
    }
    let responses = plural(r.requests_completed, "response", "responses");
    if r.non_success_responses > 0 {
        let grpc = s.http2.as_ref().is_some_and(|h2| h2.grpc_method.is_some());
        rows.push((
            "non-success",
            if grpc {
                format!(
                    "{} of {responses} are not {} or are failed calls (non-OK grpc-status): the figures above \
                     include them",
                    r.non_success_responses, s.success_status,
                )
            } else {
                format!(
                    "{} of {responses} are not {} (the figures above include them: an error page?)",
                    r.non_success_responses, s.success_status,
                )
            },
        ));
    }
    if s.keep_alive && r.requests_completed > 0 {
        rows.push((
            "keep-alive",
            reuse_text(r.reused_connection_responses, &responses, r.connections_opened),
        ));
        // A server that closes each connection makes every request pay a handshake, whatever
        // the client asked for. With errors, the client closed them itself: nothing to say; with
        // no more requests than connections, none had a second to carry.
        let could_reuse = r.requests_completed > s.connections as u64;
        if r.reused_connection_responses == 0 && could_reuse && r.total_errors() == 0 {
            rows.push(("", "keep-alive asked, but the server closed every connection".into()));
        }
    }
    rows.extend(error_rows(
        r.errors.iter().map(|(kind, n)| (kind.as_str(), *n, r.error_examples.get(kind).map(String::as_str))),
    ));
    if let Some(ports) = &r.local_ports {
        let reuse = match ports.tcp_tw_reuse {
            Some(0) => ", tcp_tw_reuse 0 (off)",
            Some(2) => ", tcp_tw_reuse 2 (loopback only)",
            Some(_) => ", tcp_tw_reuse on",
            None => "",
        };
        rows.push((
            "local ports",
            format!(
                "none free: {} sockets in TIME-WAIT to the target ({} in all); ip_local_port_range {}-{} ({} ports){reuse}. \
                 Fix: keep connections alive, set net.ipv4.tcp_tw_reuse=1, or widen net.ipv4.ip_local_port_range",
                ports.time_wait_to_target,
                ports.time_wait_total,
                ports.range_low,
                ports.range_high,
                ports.ports()
            ),
        ));
    }
    if r.requests_unfinished > 0 {
        // A timed run ends with requests on the wire: normal, and said so, not hidden.
        let when = if r.interrupted {
            "the run was stopped"
        } else if s.duration_s.is_some() {
            "the time was up"
        } else {
            "the run ended"
        };
        // Over HTTP/2 some may never have left: queued behind the server's stream limit.
        let unsent = r.http2.as_ref().map_or(0, |h2| h2.streams_unsent_at_end).min(r.requests_unfinished);
        let running = r.requests_unfinished - unsent;
        let were = |n: u64| if n == 1 { "was" } else { "were" };
        let what = match (running, unsent) {
            (_, 0) => format!("{} {} still running", plural(running, "request", "requests"), were(running)),
            (0, _) => format!(
                "{} {} queued behind the server's stream limit, never sent,",
                plural(unsent, "request", "requests"),
                were(unsent)
            ),
            _ => format!(
                "{} {} still running and {unsent} queued behind the server's stream limit, never sent,",
                plural(running, "request", "requests"),
                were(running)
            ),
        };
        rows.push(("in flight", format!("{what} when {when} (not counted)")));
    }
    // Connects nobody answered by the run's end: on loopback, SYNs a full listen queue dropped
    // (over HTTP/2 their requests were never sent, so they are not in flight).
    if let (count @ 1.., Some(longest_ms)) = (r.connects_unanswered_at_end, r.connect_unanswered_longest_ms) {
        rows.push((
            "unanswered",
            format!(
                "{} unanswered when the run ended, the longest after {}",
                plural(count, "connect was", "connects were"),
                format_duration_ms(longest_ms)
            ),
        ));
    }
    if let Some(tls) = &r.tls {
        rows.push(("TLS", tls.describe()));
    }
    if let Some(http2) = &r.http2 {
        rows.extend(super::http2::outcome_rows(http2));
    }
    if let Some(summary) = connections_summary(r) {
        rows.push(("tcp_info", summary));
    }
    write_labelled(out, rows, width);
}

/// The `status` row: each status with its count, or none.
pub(crate) fn status_row(status_counts: &BTreeMap<String, u64>) -> (&'static str, String) {
    let statuses = format_status_counts(status_counts);
    ("status", if statuses.is_empty() { "none".into() } else { statuses })
}

/// How many of the `responses` reused a connection, and how many connections were opened.
pub(crate) fn reuse_text(reused: u64, responses: &str, opened: u64) -> String {
    format!(
        "{reused} of {responses} reused a connection; {} opened",
        plural(opened, "connection", "connections")
    )
}

/// The `errors` rows: each kind that happened (kind, count, first message), or none.
pub(crate) fn error_rows<'a>(
    errors: impl IntoIterator<Item = (&'a str, u64, Option<&'a str>)>,
) -> Vec<(&'static str, String)> {
    let failed: Vec<_> = errors.into_iter().filter(|(_, n, _)| *n > 0).collect();
    if failed.is_empty() {
        return vec![("errors", "none".into())];
    }
    let rows = failed.into_iter().enumerate().map(|(i, (kind, n, example))| {
        let example = example.map(|m| format!(" (first: {m})")).unwrap_or_default();
        (if i == 0 { "errors" } else { "" }, format!("{kind} ×{n}{example}"))
    });
    rows.collect()
}

/// Rows of a label and its sentence, the sentence wrapped beside the label.
pub(crate) fn write_labelled(out: &mut String, rows: Vec<(&str, String)>, width: usize) {
    let mut table = TextTable::new(width, 2, &[Col::Left, Col::Text]);
    for (label, text) in rows {
        table.row([label.to_string(), text]);
    }
    out.push_str(&table.render());
}

/// Up to [`CONNECTIONS_LISTED`] connections, a table of their TCP_INFO, one unit per column.
fn write_connections(out: &mut String, r: &BenchReport, width: usize) -> std::fmt::Result {
    let with_info: Vec<_> = r.connections.iter().filter_map(|c| Some((c, c.tcp_info?))).collect();
    if with_info.is_empty() || with_info.len() > CONNECTIONS_LISTED {
        return Ok(());
    }
    let column =
        |pick: fn(&TcpInfo) -> u32| DurationScale::for_ms(with_info.iter().map(|(_, i)| ms_of_us(pick(i))));
    let (rtt, min_rtt, ato) = (column(|i| i.rtt_us), column(|i| i.min_rtt_us), column(|i| i.ato_us));
    let mut columns = vec![Col::Text];
    columns.extend([Col::Right; 6]);
    let mut table = TextTable::new(width, 2, &columns);
    table.header(["tcp_info", "rtt", "min rtt", "ato", "mss out", "mss in", "retransmits"]);
    for (c, info) in with_info {
        table.row([
            format!("connection {}", c.connection),
            sampled(&info, info.rtt_us, &rtt),
            sampled(&info, info.min_rtt_us, &min_rtt),
            ato.format(ms_of_us(info.ato_us)),
            format!("{} B", info.snd_mss_bytes),
            format!("{} B", info.rcv_mss_bytes),
            info.total_retransmits.to_string(),
        ]);
    }
    writeln!(out)?;
    out.push_str(&table.render());
    Ok(())
}

/// An RTT figure of `info` in `scale`, or "-" before the connection's first RTT sample (a
/// connection that never carried data), which the kernel leaves at 0.
pub(crate) fn sampled(info: &TcpInfo, rtt_us: u32, scale: &DurationScale) -> String {
    if info.min_rtt_us == 0 { "-".into() } else { scale.format(ms_of_us(rtt_us)) }
}

/// Beyond [`CONNECTIONS_LISTED`] connections, one sentence for them all.
fn connections_summary(r: &BenchReport) -> Option<String> {
    let infos: Vec<TcpInfo> = r.connections.iter().filter_map(|c| c.tcp_info).collect();
    if infos.len() <= CONNECTIONS_LISTED {
        return None;
    }
    // RTT figures only of the connections that had an RTT sample.
    let sampled: Vec<&TcpInfo> = infos.iter().filter(|i| i.min_rtt_us > 0).collect();
    let rtt = nodelay_tcp::quantile::median(sampled.iter().map(|i| i.rtt_us).collect());
    let min_rtt = sampled.iter().map(|i| i.min_rtt_us).min();
    let max_ato = infos.iter().map(|i| i.ato_us).max().unwrap_or(0);
    let retransmits: u64 = infos.iter().map(|i| u64::from(i.total_retransmits)).sum();
    let scale = DurationScale::for_ms([rtt.unwrap_or(0), min_rtt.unwrap_or(0), max_ato].map(ms_of_us));
    let rtt_text = match (rtt, min_rtt) {
        (Some(rtt), Some(min_rtt)) => format!(
            "rtt median {} (lowest min_rtt {})",
            scale.format(ms_of_us(rtt)),
            scale.format(ms_of_us(min_rtt))
        ),
        _ => "no RTT sampled".into(),
    };
    Some(format!(
        "{} connections: {rtt_text}, highest ato {}, {} in total",
        infos.len(),
        scale.format(ms_of_us(max_ato)),
        plural(retransmits, "retransmit", "retransmits"),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::bench::{ConnectionReport, RequestReport};
    use std::borrow::Cow;
    use std::collections::BTreeMap;

    /// Percentiles from `min` to `max` milliseconds.
    fn spread(min: f64, max: f64) -> Percentiles {
        let at = |share: f64| min + (max - min) * share;
        Percentiles {
            min,
            p50: at(0.5),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max,
            mean: at(0.5),
            stdev: (max - min) / 4.0,
        }
    }

    fn settings() -> BenchSettings {
        BenchSettings {
            url: "http://127.0.0.1:8080/".into(),
            address: "127.0.0.1:8080".into(),
            method: "GET".into(),
            protocol: "http".into(),
            connections: 1,
            threads: 1,
            requests: Some(20),
            duration_s: None,
            rate_per_second: None,
            keep_alive: true,
            write_split: Vec::new(),
            timeout_s: 5.0,
            connect_timeout_s: 5.0,
            success_status: "2xx,3xx".into(),
            tls: None,
            busy_poll: false,
            busy_poll_after_us: None,
            io_uring: false,
            batched_waits: false,
            event_loop: "epoll".into(),
            event_loop_why: "default under 4 connections per thread".into(),
            http_version: Some("1.1".into()),
            http2: None,
        }
    }

    fn tcp_info(rtt_us: u32, min_rtt_us: u32, ato_us: u32) -> TcpInfo {
        TcpInfo {
            rtt_us,
            rttvar_us: 0,
            min_rtt_us,
            ato_us,
            rto_us: 204_000,
            snd_mss_bytes: 32741,
            rcv_mss_bytes: 536,
            unacked_segments: 0,
            notsent_bytes: 0,
            total_retransmits: 0,
            spurious_retransmits: 0,
            segments_out: 41,
            segments_in: 40,
        }
    }

    /// A Nagle stall: totals in milliseconds, first bytes in microseconds, connects in
    /// nanoseconds' range, 20 responses on one connection.
    pub(crate) fn stalled() -> BenchReport {
        BenchReport {
            schema: Cow::Borrowed(crate::model::bench::BENCH_SCHEMA_ID),
            settings: settings(),
            requests_completed: 20,
            non_success_responses: 0,
            reused_connection_responses: 19,
            requests_due_not_sent: 0,
            requests_unfinished: 0,
            elapsed_s: 0.8812,
            requests_per_second: 22.7,
            response_bytes: 2680,
            transfer_bytes_per_second: 3041.0,
            latency_ms: Some(spread(43.62, 44.17)),
            path_rtt_ms: Some(0.007),
            segments_resent: Some(0),
            retransmission_waits: 0,
            latency_uncorrected_ms: None,
            first_byte_ms: Some(spread(0.2614, 1.17)),
            read_gap_ms: Some(spread(43.2, 43.68)),
            connect_ms: Some(spread(0.000_85, 0.000_85)),
            connects_at_syn_retry: 0,
            connects_unanswered_at_end: 0,
            connect_unanswered_longest_ms: None,
            tls_handshake_ms: None,
            tls: None,
            latency_histogram: (0..10u32)
                .map(|i| HistogramBucket {
                    up_to_ms: 43.62 + 0.055 * f64::from(i + 1),
                    count: [1, 2, 0, 9, 4, 1, 0, 2, 0, 1][i as usize],
                })
                .collect(),
            latency_spectrum: Vec::new(),
            read_gap_spectrum: Vec::new(),
            timeline: Vec::new(),
            machine: crate::model::series::Machine {
                kernel: "Linux 6.1.0".into(),
                cores: 2,
                hostname: "test".into(),
            },
            read_chunks_per_response: 2.0,
            status_counts: BTreeMap::from([("200".into(), 20)]),
            errors: nodelay_engine::ErrorKind::ALL.iter().map(|k| (k.as_str().to_string(), 0)).collect(),
            error_examples: BTreeMap::new(),
            connections_opened: 1,
            connections: vec![ConnectionReport {
                connection: 0,
                requests: 20,
                tcp_info: Some(tcp_info(363, 7, 40_000)),
            }],
            interrupted: false,
            by_request: None,
            server_view: None,
            findings: Vec::new(),
            suggestions: Vec::new(),
            thresholds: Vec::new(),
            generator_cpu_share: None,
            local_ports: None,
            http2: None,
        }
    }

    /// Everything that makes lines long: a long URL, errors with long messages, a missed rate,
    /// a scenario with a long name, many connections, an interrupted timed run.
    fn busy() -> BenchReport {
        let mut r = stalled();
        r.settings.url = format!("http://127.0.0.1:8080/{}", "very/long/path/".repeat(8));
        r.settings.requests = None;
        r.settings.duration_s = Some(10.0);
        r.settings.rate_per_second = Some(2000.0);
        r.settings.connections = 12;
        r.settings.write_split = vec![40, 2];
        r.requests_due_not_sent = 900;
        r.requests_unfinished = 2;
        r.non_success_responses = 3;
        r.interrupted = true;
        r.latency_ms = Some(spread(0.02, 1700.6));
        r.latency_uncorrected_ms = Some(spread(0.02, 3.1));
        r.errors.insert("timeout".into(), 4);
        r.errors.insert("malformed_response".into(), 1);
        r.error_examples.insert("timeout".into(), "no complete response within 5s".into());
        r.error_examples
            .insert("malformed_response".into(), "bytes after the end of the response ".repeat(4));
        r.connections = (0..12)
            .map(|c| ConnectionReport {
                connection: c,
                requests: 2,
                tcp_info: Some(tcp_info(900, 20, 40_000)),
            })
            .collect();
        r.by_request = Some(vec![
            RequestReport {
                name: "a request whose name is far too long for any column".into(),
                requests_completed: 12,
                errors: 1,
                response_bytes: 100,
                latency_ms: Some(spread(0.05, 2.0)),
                first_byte_ms: Some(spread(0.05, 1.0)),
                read_gap_ms: None,
                status_counts: BTreeMap::new(),
                non_success_responses: 3,
            },
            RequestReport {
                name: "main page".into(),
                requests_completed: 8,
                errors: 0,
                response_bytes: 100,
                latency_ms: Some(spread(0.05, 1.0)),
                first_byte_ms: Some(spread(0.05, 1.0)),
                read_gap_ms: Some(spread(0.0, 0.0)),
                status_counts: BTreeMap::new(),
                non_success_responses: 0,
            },
        ]);
        r
    }

    fn nothing_completed() -> BenchReport {
        let mut r = stalled();
        r.requests_completed = 0;
        r.reused_connection_responses = 0;
        r.latency_ms = None;
        r.first_byte_ms = None;
        r.read_gap_ms = None;
        r.connect_ms = None;
        r.latency_histogram = Vec::new();
        r.status_counts.clear();
        r.errors.insert("timeout".into(), 1);
        r.connections.clear();
        r
    }

    /// Each line at most `width` columns, and every decimal number followed by a unit.
    fn assert_fits_with_units(text: &str, width: usize) {
        for line in text.lines() {
            assert!(line.chars().count() <= width, "wider than {width}: {line:?}\n{text}");
            let words: Vec<&str> = line.split_whitespace().collect();
            for (i, word) in words.iter().enumerate() {
                let decimal = word.contains('.') && word.trim_end_matches(',').parse::<f64>().is_ok();
                if decimal && *word != "2.00" {
                    let unit = words.get(i + 1).map(|u| u.trim_end_matches([',', ';', ':', ')', '/']));
                    let known = ["s", "ms", "µs", "ns", "req/s", "KiB", "KiB/s", "B", "MiB"];
                    assert!(unit.is_some_and(|u| known.contains(&u)), "{word} without a unit: {line:?}");
                }
            }
        }
    }

    #[test]
    fn a_run_shorter_than_a_tenth_of_a_second_is_in_milliseconds() {
        assert_eq!(format_elapsed(2.7), "2.70 s");
        assert!(format_elapsed(0.002).ends_with(" ms") && format_elapsed(0.002).starts_with('2'));
    }

    #[test]
    fn every_line_fits_and_every_number_has_its_unit() {
        for report in [stalled(), busy(), nothing_completed(), across_a_path()] {
            for width in [MIN_WIDTH, 80, 132] {
                assert_fits_with_units(&FittedText::new(width).render(&report), width);
            }
        }
    }

    /// The latency table's cells, by column header and row label.
    fn latency_cell(text: &str, column: &str, row: &str) -> String {
        let header = text.lines().find(|l| l.contains("total") && l.contains("first byte")).expect("header");
        let columns: Vec<&str> = header.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        let index = columns.iter().position(|c| *c == column).expect("column");
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(row)).expect("row");
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        words[index * 2..index * 2 + 2].join(" ")
    }

    #[test]
    fn the_latency_table_has_every_statistic_and_one_unit_per_column() {
        let text = Text.render(&stalled());
        let unit = |cell: String| cell.rsplit(' ').next().map(str::to_string);
        for row in ["min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev"] {
            for (column, expected) in
                [("total", "ms"), ("first byte", "ms"), ("read gap", "ms"), ("connect", "ns")]
            {
                assert_eq!(
                    unit(latency_cell(&text, column, row)).as_deref(),
                    Some(expected),
                    "{row} {column}:\n{text}"
                );
            }
        }
        assert_eq!(latency_cell(&text, "total", "p50"), "43.89 ms", "{text}");
        assert_eq!(latency_cell(&text, "first byte", "min"), "0.26 ms", "{text}");
        // Past a second the whole column is in seconds: never 1700.6 ms beside 1.70 s.
        let text = Text.render(&busy());
        assert_eq!(latency_cell(&text, "total", "max"), "1.701 s", "{text}");
        assert_eq!(latency_cell(&text, "total", "p50"), "0.850 s", "{text}");
        assert_eq!(latency_cell(&text, "first byte", "max"), "1.17 ms", "{text}");
    }

    #[test]
    fn the_histogram_draws_bars_in_proportion_with_bounds_and_counts() {
        let text = Text.render(&stalled());
        let start = text.find("total latency histogram").expect("a histogram");
        let rows: Vec<&str> = text[start..].lines().skip(1).take(10).collect();
        let bar = |row: &str| row.chars().filter(|&c| c == '█').count();
        assert!(rows[0].trim_start().starts_with("≤ 43.675 ms") && rows[0].contains(" 1 "), "{text}");
        assert_eq!(bar(rows[3]), HISTOGRAM_BAR, "the fullest bucket has the longest bar:\n{text}");
        assert_eq!(bar(rows[4]), 18, "4 of 9: {text}");
        assert_eq!(bar(rows[0]), 4, "{text}");
        assert_eq!(bar(rows[2]), 0, "an empty bucket has no bar:\n{text}");
        assert!(rows[9].trim_start().starts_with("≤ 44.170 ms"), "{text}");
    }

    #[test]
    fn the_settings_come_before_the_run_and_the_results_after() {
        let header = FittedText::default().render(&settings());
        assert_eq!(
            header,
            "nodelay bench GET http://127.0.0.1:8080/ (127.0.0.1:8080)\n  1 connection, 1 thread, keep-alive, 20 requests\n  epoll loop (default under 4 connections per thread)\n"
        );
        let report = stalled();
        let results = FittedText::default().bench_results(&report);
        assert!(!results.contains("nodelay bench"), "{results}");
        assert_eq!(FittedText::default().render(&report), header + &results);
    }

    #[test]
    fn requests_in_flight_at_the_end_of_a_timed_run_are_normal_and_said_so() {
        let mut report = stalled();
        report.settings.requests = None;
        report.settings.duration_s = Some(10.0);
        report.requests_unfinished = 2;
        let text = Text.render(&report);
        assert!(
            text.contains("in flight   2 requests were still running when the time was up (not counted)"),
            "{text}"
        );
        // Connects that got no answer, on a wide terminal: one line.
        report.connects_unanswered_at_end = 2;
        report.connect_unanswered_longest_ms = Some(480.0);
        let text = FittedText { width: 160 }.render(&report);
        assert!(
            text.contains(
                "unanswered  2 connects were unanswered when the run ended, the longest after 480.00 ms\n"
            ),
            "{text}"
        );
        report.interrupted = true;
        let text = Text.render(&report);
        assert!(text.contains("interrupted (Ctrl-C) after 0.88 s"), "{text}");
        assert!(text.contains("still running when the run was stopped"), "{text}");
    }

    /// The kernel has no RTT for a connection that never carried data: "-", not 0, and the
    /// many-connections summary takes its RTTs from the others.
    #[test]
    fn a_connection_without_an_rtt_sample_shows_none() {
        let mut r = stalled();
        r.connections.push(ConnectionReport {
            connection: 1,
            requests: 0,
            tcp_info: Some(tcp_info(0, 0, 0)),
        });
        let text = FittedText::new(80).render(&r);
        let row = text.lines().find(|l| l.trim_start().starts_with("connection 1")).expect("its row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[2..4], ["-", "-"], "rtt and min rtt of {row:?} in\n{text}");
        r.connections = (0..12)
            .map(|c| ConnectionReport {
                connection: c,
                requests: 2,
                tcp_info: Some(tcp_info(900, 20, 40_000)),
            })
            .chain([ConnectionReport { connection: 12, requests: 0, tcp_info: Some(tcp_info(0, 0, 0)) }])
            .collect();
        let text = FittedText::new(80).render(&r);
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("13 connections: rtt median 0.900 ms (lowest min_rtt 0.020 ms)"), "{text}");
    }

    /// A healthy run across a 40 ms path: the twin of `stalled` a WAN away.
    fn across_a_path() -> BenchReport {
        let mut r = stalled();
        r.latency_ms = Some(spread(40.9, 41.5));
        r.read_gap_ms = Some(spread(0.0, 0.0));
        r.path_rtt_ms = Some(40.512);
        r.connections[0].tcp_info = Some(tcp_info(40_900, 40_512, 40_000));
        r
    }

    /// Across a path, one line beside the figures: the round trip, the network's share of the
    /// median and the rest, the most the width holds of it; nothing of it on loopback.
    #[test]
    fn across_a_path_the_round_trip_is_said_beside_the_latency() {
        let r = across_a_path();
        let at = |width: usize| {
            let text = FittedText::new(width).render(&r);
            let lines: Vec<String> =
                text.lines().filter(|l| l.contains("40.51 ms")).map(str::to_string).collect();
            (text, lines)
        };
        let (text, lines) = at(132);
        assert_eq!(
            lines[0],
            "  path round trip 40.51 ms (TCP_INFO min_rtt): p50 41.20 ms is 98 % the network's; the server and \
             the load add 0.69 ms",
            "{text}"
        );
        // Before the table: it reads with the figures.
        assert!(text.find("path round trip").unwrap() < text.find("  min ").unwrap(), "{text}");
        for width in [MIN_WIDTH, 70, 80, 100] {
            let (text, lines) = at(width);
            assert!(
                lines[0].starts_with("  path round trip 40.51 ms")
                    && lines[0].contains("98 % ")
                    && lines[0].contains("0.69 ms"),
                "{width}: {text}"
            );
            assert_fits_with_units(&text, width);
        }
        assert_eq!(at(80).1[0], "  path round trip 40.51 ms: 98 % of p50 41.20 ms; server and load 0.69 ms");
        assert_eq!(
            at(100).1[0],
            "  path round trip 40.51 ms (min_rtt): 98 % of p50 41.20 ms; server and load 0.69 ms"
        );
        assert_eq!(at(MIN_WIDTH).1[0], "  path round trip 40.51 ms: 98 % of p50; 0.69 ms beyond it");
        // Loopback (under 0.2 ms), or an unsampled connection: not a word of it.
        for rtt in [Some(0.007), Some(0.19), None] {
            let mut r = across_a_path();
            r.path_rtt_ms = rtt;
            let text = Text.render(&r);
            assert!(!text.contains("path round trip") && !text.contains("path RTT"), "{text}");
        }
    }

    #[test]
    fn the_path_round_trip_is_the_lowest_sampled_min_rtt() {
        use crate::model::bench::path_rtt_ms;
        let infos = [tcp_info(0, 0, 0), tcp_info(41_000, 40_512, 40_000), tcp_info(45_000, 40_900, 40_000)];
        assert_eq!(path_rtt_ms(infos), Some(40.512));
        assert_eq!(path_rtt_ms([tcp_info(0, 0, 0)]), None);
        assert_eq!(path_rtt_ms([]), None);
    }

    #[test]
    fn nothing_completed_prints_no_table_and_no_histogram() {
        let text = Text.render(&nothing_completed());
        assert!(text.contains("no response completed"), "{text}");
        assert!(!text.contains("p50") && !text.contains("histogram"), "{text}");
    }

    /// The whole layout at 80 columns, for review: a fixed model, so nothing to redact.
    #[test]
    fn a_stalled_run_at_80_columns() {
        let expected = "\
nodelay bench GET http://127.0.0.1:8080/ (127.0.0.1:8080)
  1 connection, 1 thread, keep-alive, 20 requests
  epoll loop (default under 4 connections per thread)

  20 responses in 0.88 s: 22.7 req/s; 2.62 KiB read, 2.97 KiB/s

            total  first byte  read gap  connect
  min    43.62 ms     0.26 ms  43.20 ms   850 ns
  p50    43.89 ms     0.72 ms  43.44 ms   850 ns
  p90    44.12 ms     1.08 ms  43.63 ms   850 ns
  p95    44.14 ms     1.12 ms  43.66 ms   850 ns
  p99    44.16 ms     1.16 ms  43.68 ms   850 ns
  p99.9  44.17 ms     1.17 ms  43.68 ms   850 ns
  max    44.17 ms     1.17 ms  43.68 ms   850 ns
  mean   43.89 ms     0.72 ms  43.44 ms   850 ns
  stdev   0.14 ms     0.23 ms   0.12 ms     0 ns
  read() calls per response: 2.00 (mean)

  total latency histogram (responses per bucket):
    ≤ 43.675 ms  1  ████
    ≤ 43.730 ms  2  █████████
    ≤ 43.785 ms  0
    ≤ 43.840 ms  9  ████████████████████████████████████████
    ≤ 43.895 ms  4  ██████████████████
    ≤ 43.950 ms  1  ████
    ≤ 44.005 ms  0
    ≤ 44.060 ms  2  █████████
    ≤ 44.115 ms  0
    ≤ 44.170 ms  1  ████

  status      200 ×20
  keep-alive  19 of 20 responses reused a connection; 1 connection opened
  errors      none

  tcp_info           rtt  min rtt       ato  mss out  mss in  retransmits
  connection 0  363.0 µs   7.0 µs  40.00 ms  32741 B   536 B            0
";
        assert_eq!(Text.render(&stalled()), expected);
    }

    /// `cargo test -p nodelay-report show_layouts -- --ignored --nocapture` prints the fixed
    /// models at three widths, to look at them.
    #[test]
    fn a_server_closing_connections_is_said_only_where_one_could_have_been_reused() {
        let mut closing = stalled();
        closing.reused_connection_responses = 0;
        let said = "keep-alive asked, but the server closed every connection";
        assert!(FittedText::new(80).render(&closing).contains(said));
        // -c 20 -n 20: every request had a connection of its own.
        closing.settings.connections = 20;
        assert!(!FittedText::new(80).render(&closing).contains(said));
    }

    #[test]
    #[ignore]
    fn show_layouts() {
        for report in [stalled(), busy(), nothing_completed(), across_a_path()] {
            for width in [MIN_WIDTH, 80, 132] {
                println!("{}\n{}", "-".repeat(width), FittedText::new(width).render(&report));
            }
        }
    }
}
