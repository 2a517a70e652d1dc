//! The HTTP/2 lines of a bench report: how the run spoke it (under the heading) and what its
//! streams and windows did (among the outcomes).

use crate::format::{format_duration_ms, format_status_counts};
use crate::model::http2::{Http2Report, Http2RunSettings};
use crate::model::percentiles::Percentiles;

/// `HTTP/2 by ALPN, 10 streams per connection, windows 65535 B (stream) and 65535 B (connection)`.
pub(crate) fn settings_line(settings: &Http2RunSettings) -> String {
    let how = match settings.negotiated_by.as_str() {
        "alpn" => "HTTP/2 (h2 chosen by ALPN)",
        _ => "HTTP/2 with prior knowledge (h2c)",
    };
    let streams = match settings.streams_per_connection {
        1 => "1 stream per connection".to_string(),
        n => format!("{n} streams per connection"),
    };
    let grpc = settings.grpc_method.as_ref().map(|m| format!(", gRPC {m}")).unwrap_or_default();
    format!(
        "{how}, {streams}, windows {} B a stream and {} B a connection{grpc}",
        settings.stream_window_bytes, settings.connection_window_bytes
    )
}

fn p50_p99(p: &Option<Percentiles>) -> String {
    match p {
        Some(p) => format!("p50 {}, p99 {}", format_duration_ms(p.p50), format_duration_ms(p.p99)),
        None => "none".to_string(),
    }
}

/// The outcome rows: streams and the server's limit, queueing, window waits, resets, gRPC.
pub(crate) fn outcome_rows(report: &Http2Report) -> Vec<(&'static str, String)> {
    let limit = match report.peer_max_concurrent_streams {
        Some(n) => format!("the server allows {n} streams at once (SETTINGS_MAX_CONCURRENT_STREAMS)"),
        None => "the server set no stream limit".to_string(),
    };
    let mut rows = vec![(
        "HTTP/2",
        format!(
            "{} streams; {limit}; at most {} open at once on a connection; queued before HEADERS left: {}",
            report.streams_completed,
            report.max_open_streams,
            p50_p99(&report.queued_ms)
        ),
    )];
    let windows = if report.window_blocked_streams == 0 && report.connection_window_stalls == 0 {
        "no stream waited on a flow-control window".to_string()
    } else {
        format!(
            "{} of {} streams waited on a used-up window, {} in all (per stream: {}); the connection window stalled {} times, {}",
            report.window_blocked_streams,
            report.streams_completed,
            format_duration_ms(report.window_blocked_total_ms),
            p50_p99(&report.window_blocked_ms),
            report.connection_window_stalls,
            format_duration_ms(report.connection_window_blocked_ms),
        )
    };
    rows.push(("windows", format!("{windows}; {} WINDOW_UPDATE frames sent", report.window_updates_sent)));
    if report.request_window_stalls > 0 {
        rows.push((
            "uploads",
            format!(
                "request bodies used up the server's window {} times; {} streams waited for its WINDOW_UPDATE, {} in all",
                report.request_window_stalls,
                report.request_window_blocked_streams,
                format_duration_ms(report.request_window_blocked_total_ms),
            ),
        ));
    }
    if report.loss_holes > 0 {
        rows.push((
            "loss",
            format!(
                "{} pauses ended with a lost segment's retransmission, holding {} streams; {} of {} streams were held \
                 with others, {} in all (per stream: {})",
                report.loss_holes,
                report.streams_held_by_loss,
                report.loss_held_streams,
                report.streams_completed,
                format_duration_ms(report.loss_held_total_ms),
                p50_p99(&report.loss_held_ms),
            ),
        ));
    }
    if report.streams_reset > 0 || report.goaways > 0 {
        rows.push((
            "resets",
            format!("{} streams reset by the server, {} GOAWAY", report.streams_reset, report.goaways),
        ));
    }
    if !report.grpc_status_counts.is_empty() {
        rows.push(("grpc-status", format_status_counts(&report.grpc_status_counts)));
    }
    rows
}
