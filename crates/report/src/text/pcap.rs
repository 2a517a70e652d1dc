//! Text rendering of a capture analysis, fitted to a width (the terminal's; 80 columns when
//! unknown): totals, the worst flows as a table, each flow's stalls and Wireshark filter,
//! then the findings. No line is wider than the width, and each table gives all its
//! durations in one unit (ms), so that columns compare at a glance.

use crate::format::{display_width, format_bytes, format_duration_ms, format_ms, ms_decimals, plural};
use crate::model::pcap::{FlowReport, PcapReport, SlowFlowReport, StallReport, TimeReport};
use crate::render::Render;
use crate::text::wrap::{NO_BREAK, wrap_atoms, wrap_words};
use crate::text::{FittedText, Text};
use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};
use nodelay_diagnose::Finding;
use nodelay_flags::Flag::Top;

/// Stall examples shown per flow.
const EXAMPLES_SHOWN: usize = 3;
/// The narrowest flow column: `-> 255.255.255.255:65535`.
const FLOW_COLUMN_MIN: usize = 24;

impl Render<PcapReport> for Text {
    fn render(&self, report: &PcapReport) -> String {
        report.render_text(PcapReport::DEFAULT_TEXT_WIDTH)
    }
}

impl Render<PcapReport> for FittedText {
    fn render(&self, report: &PcapReport) -> String {
        report.render_text(self.width)
    }
}

impl PcapReport {
    /// The width when the terminal's is unknown (output to a file or a pipe).
    pub const DEFAULT_TEXT_WIDTH: usize = 80;
    /// The narrowest layout: the flow table without its flow column (45 columns) fits.
    pub const MIN_TEXT_WIDTH: usize = 50;

    /// The text report, no line wider than `width` columns (at least [`Self::MIN_TEXT_WIDTH`]).
    pub fn render_text(&self, width: usize) -> String {
        let width = width.max(Self::MIN_TEXT_WIDTH);
        let mut out = Lines { lines: Vec::new(), width };
        write_pcap(&mut out, self);
        // The layout fits; should a table still overflow (a column that may not wrap holding
        // an absurd number), the line is cut rather than the width exceeded.
        let lines = out.lines.iter().flat_map(|line| {
            if display_width(line) <= width {
                vec![line.clone()]
            } else {
                wrap_atoms([line.as_str()], width, "", "")
            }
        });
        let mut text = lines.collect::<Vec<_>>().join("\n");
        text.push('\n');
        text
    }
}

/// Output lines, each at most `width` columns.
struct Lines {
    lines: Vec<String>,
    width: usize,
}

impl Lines {
    fn blank(&mut self) {
        self.lines.push(String::new());
    }

    /// `text` wrapped at spaces, its continuation lines indented further.
    fn para(&mut self, first: &str, rest: &str, text: &str) {
        self.lines.extend(wrap_words(text, self.width, first, rest));
    }

    /// A table's lines, behind `indent` (cells may hold [`glue_units`](crate::text::wrap::glue_units) text).
    fn table(&mut self, indent: &str, table: &Table) {
        self.lines
            .extend(table.lines().map(|line| format!("{indent}{}", line.trim_end().replace(NO_BREAK, " "))));
    }
}

/// A borderless table at most `width` columns wide, with two spaces between columns.
fn table(width: usize, header: Option<&[&str]>) -> Table {
    let mut table = Table::new();
    table
        .load_preset(NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    if let Some(header) = header {
        table.set_header(header.to_vec());
    }
    table
}

/// Columns in `left` aligned left, the others (numbers) right; only the columns in `wrap`
/// may wrap, the others keep their content's width (a number never parts from its unit).
/// Called once the rows are in, as comfy-table makes a table's columns with its first row.
fn align(table: &mut Table, left: &[usize], wrap: &[usize]) {
    let last = table.column_iter().count().saturating_sub(1);
    for (index, column) in table.column_iter_mut().enumerate() {
        // comfy-table pads both sides of every cell; the table's edges need none.
        column.set_padding((u16::from(index > 0), u16::from(index < last)));
        if !left.contains(&index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
        if !wrap.contains(&index) {
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

fn write_pcap(out: &mut Lines, r: &PcapReport) {
    out.para(
        "",
        "  ",
        &format!(
            "nodelay pcap {}: {} packets ({} TCP), {} captured, {:.3} s of traffic, {}",
            r.file,
            r.packets,
            r.tcp_packets,
            format_bytes(r.bytes as f64),
            r.duration_s,
            plural(r.flows as usize, "TCP flow", "TCP flows")
        ),
    );
    out.para(
        "",
        "  ",
        // In ms like the flow table below it, whatever the total.
        &format!(
            "stalls: {} in {}, {} lost",
            r.stalls,
            plural(r.flows_with_stalls as usize, "flow", "flows"),
            format_ms(r.time_lost_ms, 2)
        ),
    );
    write_time(out, r);
    if !r.top_flows.is_empty() {
        out.blank();
        write_flow_table(out, &r.top_flows);
        for flow in &r.top_flows {
            out.blank();
            write_flow(out, flow);
        }
        if r.flows_not_listed > 0 {
            out.blank();
            out.para(
                "",
                "  ",
                &format!("... and {} more flows with stalls ({Top} to list more)", r.flows_not_listed),
            );
        }
    }
    for flow in &r.slow_flows {
        out.blank();
        write_slow_flow(out, flow);
    }
    if r.slow_flows_not_listed > 0 {
        out.blank();
        out.para(
            "",
            "  ",
            &format!("... and {} more slow flows ({Top} to list more)", r.slow_flows_not_listed),
        );
    }
    for finding in &r.findings {
        out.blank();
        write_finding(out, finding);
    }
    if !r.warnings.is_empty() || r.error.is_some() {
        out.blank();
    }
    for warning in &r.warnings {
        out.para("", "  ", &format!("warning: {warning}"));
    }
    if let Some(error) = &r.error {
        out.para("", "  ", &format!("stopped early: {error} (figures cover the packets before it)"));
    }
    out.blank();
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    out.para("", "  ", &format!("verdict: {}", ids.join(", ")));
}

/// Where the exchanges' time went, the round trips, losses and windows: one line each.
fn write_time(out: &mut Lines, r: &PcapReport) {
    if r.time.exchanges > 0 {
        out.para("", "  ", &format!("time: {}", describe_time(&r.time)));
    }
    if let (Some(p50), Some(min), Some(max)) = (r.rtt.p50_ms, r.rtt.min_ms, r.rtt.max_ms) {
        let rtt = &r.rtt;
        let places = [
            (rtt.captured_at_client, "next to the client"),
            (rtt.captured_at_server, "next to the server"),
            (rtt.captured_between, "between the two"),
        ];
        let places: Vec<String> =
            places.iter().filter(|(n, _)| *n > 0).map(|(n, place)| format!("{n} {place}")).collect();
        let captured =
            if places.is_empty() { String::new() } else { format!("; captured {}", places.join(", ")) };
        out.para(
            "",
            "  ",
            &format!(
                "round trip: {} median ({} to {}) over {} flows{captured}",
                format_ms(p50, 2),
                format_ms(min, 2),
                format_ms(max, 2),
                rtt.flows
            ),
        );
    }
    let resent = &r.retransmissions;
    if resent.segments > 0 {
        out.para(
            "",
            "  ",
            &format!(
                "retransmissions: {} segments, {} after a timeout ({} series, {} never answered, {} waited)",
                resent.segments,
                resent.timeouts,
                resent.series,
                resent.unanswered,
                format_ms(resent.lost_ms, 1)
            ),
        );
    }
    let windows = &r.zero_windows;
    if windows.count > 0 {
        out.para(
            "",
            "  ",
            &format!(
                "zero windows: {} of 200 ms or more, {} shut, {} probes",
                windows.count,
                format_ms(windows.total_ms, 1),
                windows.probes
            ),
        );
    }
}

/// `N exchanges: network X, server Y, ...; most: the network's (P%)`, all in ms.
fn describe_time(time: &TimeReport) -> String {
    let mut text = format!(
        "{} exchanges, {} handshakes: network {}, server {}, client waits {}, transfer {} (Nagle held {}); \
         clients idle {}",
        time.exchanges,
        time.handshakes,
        format_ms(time.network_ms, 1),
        format_ms(time.server_ms, 1),
        format_ms(time.client_wait_ms, 1),
        format_ms(time.transfer_ms, 1),
        format_ms(time.nagle_held_ms, 1),
        format_ms(time.client_idle_ms, 1),
    );
    if let Some(part) = &time.dominant {
        text.push_str(&format!("; most: the {part}'s ({:.0}%)", time.dominant_percent));
    }
    text
}

/// A flow that lost time to the path, the client, the server, losses or a shut window.
fn write_slow_flow(out: &mut Lines, flow: &SlowFlowReport) {
    out.para(
        "",
        "  ",
        &format!(
            "slow stream {}: {} -> {}, {} lost",
            flow.tcp_stream,
            flow.client,
            flow.server,
            format_ms(flow.lost_ms, 1)
        ),
    );
    if let (Some(rtt), Some(client), Some(server)) = (flow.rtt_ms, flow.client_side_ms, flow.server_side_ms) {
        let at = match flow.capture_position.as_deref() {
            Some("between") => ", captured between the two",
            Some("client") => ", captured next to the client",
            Some("server") => ", captured next to the server",
            _ => "",
        };
        out.para(
            "  ",
            "    ",
            &format!(
                "round trip {}: {} to the client and back, {} to the server and back{at}",
                format_ms(rtt, 2),
                format_ms(client, 2),
                format_ms(server, 2)
            ),
        );
    }
    if flow.time.exchanges > 0 {
        out.para("  ", "    ", &format!("time: {}", describe_time(&flow.time)));
    }
    let mut terms = flow.wireshark_filter.split(" && ");
    let first = terms.next().unwrap_or_default().to_string();
    let atoms: Vec<String> = std::iter::once(first).chain(terms.map(|t| format!("&& {t}"))).collect();
    out.lines.extend(wrap_atoms(atoms.iter().map(String::as_str), out.width, "  Wireshark: ", "    "));
    if let Some(e) = &flow.longest_client_wait {
        out.para(
            "  ",
            "    ",
            &format!(
                "exchange {} at {:.6} s: the client waited {} after its handshake before request #{}",
                e.exchange,
                e.at_s,
                format_ms(e.client_wait_ms, 1),
                e.request_packet
            ),
        );
    }
    if let Some(e) = &flow.slowest_first_byte {
        let ack =
            e.server_ack_ms.map(|a| format!(" (its ACK after {})", format_ms(a, 1))).unwrap_or_default();
        out.para(
            "  ",
            "    ",
            &format!(
                "exchange {} at {:.6} s: request #{}, the server's first byte #{} after {} net of the round \
                 trip{ack}",
                e.exchange,
                e.at_s,
                e.request_packet,
                e.response_packet,
                format_ms(e.server_ms, 1)
            ),
        );
    }
    if let Some(series) = &flow.retransmissions.worst {
        let times: Vec<String> = series.resent_after_s.iter().map(|s| format!("{s:.1}")).collect();
        out.para(
            "  ",
            "    ",
            &format!(
                "the {}'s {} resent from #{} after {} s, {}",
                series.sent_by,
                if series.syn { "SYN" } else { "segment" },
                series.first_packet,
                times.join(", "),
                if series.answered { "then acknowledged" } else { "never acknowledged" }
            ),
        );
    }
    if let Some(window) = &flow.zero_windows.longest {
        let reopened =
            window.reopened_packet.map_or("never reopened".to_string(), |p| format!("reopened at #{p}"));
        out.para(
            "  ",
            "    ",
            &format!(
                "the {}'s window shut at #{} for {}, {} probes, {reopened}",
                window.receiver,
                window.first_packet,
                format_ms(window.duration_ms, 1),
                window.probes
            ),
        );
    }
}

/// One row per flow. A flow too wide for what the other columns leave takes two lines; when
/// they leave too little even for that, the table leaves the flows out (each flow's details
/// below name it).
fn write_flow_table(out: &mut Lines, flows: &[FlowReport]) {
    const FLOW: usize = 1;
    let header = ["stream", "client -> server", "stalls", "lost", "ACK delay", "held by"];
    let decimals = ms_decimals(flows.iter().flat_map(|f| [f.time_lost_ms, f.ack_delay_p50_ms]));
    let mut rows: Vec<Vec<String>> = flows
        .iter()
        .map(|flow| {
            vec![
                flow.tcp_stream.to_string(),
                format!("{} -> {}", flow.client, flow.server),
                flow.stalls.to_string(),
                format_ms(flow.time_lost_ms, decimals),
                format_ms(flow.ack_delay_p50_ms, decimals),
                flow.held_by.to_string(),
            ]
        })
        .collect();
    // The other columns at their widest, and two spaces between each two columns.
    let others: usize = (0..header.len())
        .filter(|column| *column != FLOW)
        .map(|column| rows.iter().map(|row| display_width(&row[column])).chain([header[column].len()]).max())
        .map(|widest| widest.unwrap_or(0) + 2)
        .sum();
    let room = out.width.saturating_sub(others);
    let mut header = header.to_vec();
    if room < FLOW_COLUMN_MIN {
        header.remove(FLOW);
        rows.iter_mut().for_each(|row| drop(row.remove(FLOW)));
    } else {
        for (row, flow) in rows.iter_mut().zip(flows) {
            if display_width(&row[FLOW]) > room {
                let server = format!("-> {}", flow.server);
                row[FLOW] = format!(
                    "{}\n{}",
                    break_after_colons(&flow.client, room),
                    break_after_colons(&server, room)
                );
            }
        }
    }
    let mut table = table(out.width, Some(&header));
    let held_by = header.len() - 1;
    for row in rows {
        table.add_row(row);
    }
    // The flow, when shown, is the one column that wraps.
    let (left, wrap) = if header.contains(&"client -> server") {
        (vec![FLOW, held_by], vec![FLOW])
    } else {
        (vec![held_by], Vec::new())
    };
    align(&mut table, &left, &wrap);
    out.table("", &table);
}

/// `text` on lines of at most `room` columns, broken after colons (long IPv6 addresses).
fn break_after_colons(text: &str, room: usize) -> String {
    let mut lines = vec![String::new()];
    for piece in text.split_inclusive(':') {
        let line = lines.last_mut().expect("never empty");
        if !line.is_empty() && display_width(line) + display_width(piece) > room {
            lines.push(piece.to_string());
        } else {
            line.push_str(piece);
        }
    }
    lines.join("\n")
}

/// A flow's details: who delayed the ACKs, a Wireshark filter, the first stalls.
fn write_flow(out: &mut Lines, flow: &FlowReport) {
    out.para("", "  ", &format!("stream {}: {} -> {}", flow.tcp_stream, flow.client, flow.server));
    let stack = flow.suggested_stack.as_ref().map(|s| format!(": {s}")).unwrap_or_default();
    out.para("  ", "    ", &format!("ACKs delayed by the {}{stack}", acker_name(&flow.ack_delayed_by)));
    // Whole terms per line, `&&` leading the continuations: the first line alone is a
    // filter that works, and each term can be pasted as it stands.
    let mut terms = flow.wireshark_filter.split(" && ");
    let first = terms.next().unwrap_or_default().to_string();
    let atoms: Vec<String> = std::iter::once(first).chain(terms.map(|t| format!("&& {t}"))).collect();
    out.lines.extend(wrap_atoms(atoms.iter().map(String::as_str), out.width, "  Wireshark: ", "    "));
    for stall in flow.examples.iter().take(EXAMPLES_SHOWN) {
        out.para("  ", "    ", &describe_stall(stall));
    }
    let shown = EXAMPLES_SHOWN.min(flow.examples.len()) as u64;
    if flow.stalls > shown {
        out.para("  ", "    ", &format!("... and {} more stalls", flow.stalls - shown));
    }
}

fn acker_name(ack_delayed_by: &str) -> &str {
    match ack_delayed_by {
        "both" => "client and the server",
        side => side,
    }
}

fn describe_stall(stall: &StallReport) -> String {
    format!(
        "exchange {} at {:.6} s: {} bytes (#{}) then ACK #{} after {}, next segment #{} {} later",
        stall.exchange,
        stall.at_s,
        stall.segment_bytes,
        stall.held_after_packet,
        stall.ack_packet,
        format_duration_ms(stall.ack_delay_ms),
        stall.release_packet,
        format_duration_ms(stall.release_after_ack_us / 1e3),
    )
}

/// A finding exactly as the doctor prints it, fitted to the same width.
fn write_finding(out: &mut Lines, f: &Finding) {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = crate::text::finding::write_finding_fitted(&mut text, f, out.width);
    out.lines.extend(text.lines().map(str::to_string));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nodelay_capture::{Analyzer, ReadStats, read_packets};
    use std::borrow::Cow;

    /// The report of a committed capture fixture.
    pub(crate) fn fixture_report(name: &str) -> PcapReport {
        let path = format!("{}/../../tests/fixtures/pcap/{name}", env!("CARGO_MANIFEST_DIR"));
        let mut analyzer = Analyzer::new(None, 10);
        let mut stats = ReadStats::default();
        read_packets(std::fs::File::open(path).unwrap(), &mut stats, |p| analyzer.packet(p)).unwrap();
        let summary = analyzer.finish(stats);
        let observations = nodelay_diagnose::CaptureObservations::of(&summary);
        PcapReport::new(
            name.into(),
            &summary,
            &observations,
            observations.diagnose(),
            10,
            vec!["a warning".into()],
            None,
        )
    }

    fn flow(stream: u64, client: &str, server: &str, lost_ms: f64, delay_ms: f64) -> FlowReport {
        FlowReport {
            tcp_stream: stream,
            wireshark_filter: format!("tcp.stream eq {stream} && ip.addr==10.0.0.1"),
            client: client.into(),
            server: server.into(),
            roles_from_handshake: true,
            packets: 10,
            exchanges: 2,
            client_bytes: 100,
            server_bytes: 200,
            retransmissions: 0,
            handshake_rtt_ms: None,
            stalls: 2,
            time_lost_ms: lost_ms,
            held_by: Cow::Borrowed("server"),
            ack_delayed_by: Cow::Borrowed("client"),
            ack_delay_p50_ms: delay_ms,
            suggested_stack: None,
            examples: Vec::new(),
            round_trip_holds: 0,
            rtt_ms: None,
            capture_position: None,
        }
    }

    fn model(flows: Vec<FlowReport>) -> PcapReport {
        PcapReport {
            schema: Cow::Borrowed(crate::model::pcap::PCAP_SCHEMA_ID),
            file: "f.pcap".into(),
            packets: 20,
            tcp_packets: 20,
            other_packets: 0,
            bytes: 2000,
            duration_s: 2.0,
            flows: flows.len() as u64,
            flows_with_stalls: flows.len() as u64,
            stalls: 4,
            time_lost_ms: 1700.62,
            verdict: Cow::Borrowed("findings"),
            findings: Vec::new(),
            top_flows: flows,
            flows_not_listed: 0,
            warnings: Vec::new(),
            error: None,
            ..fixture_report("ethernet_usec_le.pcap")
        }
    }

    #[test]
    fn no_line_is_wider_than_the_width() {
        for name in ["several_flows.pcap", "raw_ipv6.pcap", "client_split.pcap"] {
            let report = fixture_report(name);
            for width in (PcapReport::MIN_TEXT_WIDTH..=140).chain([0, 10]) {
                let text = report.render_text(width);
                let limit = width.max(PcapReport::MIN_TEXT_WIDTH);
                for line in text.lines() {
                    assert!(display_width(line) <= limit, "{name} at {width}: {line:?}\n{text}");
                }
                assert!(text.contains("verdict: "), "{name} at {width}");
                assert!(!text.contains(NO_BREAK), "{name} at {width}: a no-break space left in");
            }
        }
    }

    #[test]
    fn the_flow_table_gives_its_durations_in_one_unit() {
        // 1700.6 ms and 0.02 ms in one table: both in ms, with the decimals the smaller needs.
        let report = model(vec![
            flow(0, "10.0.0.1:40000", "10.0.0.2:8080", 1700.6, 40.0),
            flow(7, "10.0.0.1:40001", "10.0.0.2:8080", 0.02, 0.015),
        ]);
        let text = report.render_text(80);
        assert!(text.contains("stalls: 4 in 2 flows, 1700.62 ms lost\n"), "{text}");
        let table: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("stream ")).take(3).collect();
        assert_eq!(
            table,
            [
                "stream  client -> server                 stalls         lost  ACK delay  held by",
                "     0  10.0.0.1:40000 -> 10.0.0.2:8080       2  1700.600 ms  40.000 ms  server",
                "     7  10.0.0.1:40001 -> 10.0.0.2:8080       2     0.020 ms   0.015 ms  server",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_flow_too_wide_for_its_column_takes_two_lines_or_leaves_the_table() {
        let long = "[fd12:3456:789a:bcde:f012:3456:789a:bcd1]:40002";
        let report = model(vec![flow(3, long, "[fd12::2]:8443", 80.03, 40.0)]);
        let text = report.render_text(80);
        let table: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("stream ")).take(4).collect();
        assert_eq!(
            table,
            [
                "stream  client -> server                 stalls      lost  ACK delay  held by",
                "     3  [fd12:3456:789a:bcde:f012:3456:       2  80.03 ms   40.00 ms  server",
                "        789a:bcd1]:40002",
                "        -> [fd12::2]:8443",
            ],
            "{text}"
        );
        // Too narrow for a flow column: the details below each flow name it.
        let text = report.render_text(50);
        assert!(text.contains("stream  stalls      lost  ACK delay  held by\n"), "{text}");
        assert!(text.contains(&format!("stream 3:\n  {long}\n")), "{text}");
    }
}
