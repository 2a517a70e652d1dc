//! The HTTP/2 part of a bench report: what the run spoke (settings) and what its streams and
//! windows did (figures). Serde forms are part of `schema/bench.schema.json`.

use crate::model::percentiles::Percentiles;
use nodelay_engine::{Http2Settings, Http2Stats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How an HTTP/2 run used its connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http2RunSettings {
    /// `prior-knowledge` (h2c on http://, `--h2`) or `alpn` (the server chose h2 over TLS).
    pub negotiated_by: String,
    /// Requests in flight at once on each connection (`--streams`).
    pub streams_per_connection: usize,
    /// The window we advertised for each stream (SETTINGS_INITIAL_WINDOW_SIZE), in bytes.
    pub stream_window_bytes: u32,
    /// The window we advertised for each connection, in bytes.
    pub connection_window_bytes: u32,
    /// `--grpc`: the method each request called; null for plain HTTP/2.
    pub grpc_method: Option<String>,
}

impl Http2RunSettings {
    /// The settings of a run over TLS (`alpn`) or not, calling `grpc_method` or not.
    pub fn of(settings: &Http2Settings, over_tls: bool, grpc_method: Option<String>) -> Self {
        Http2RunSettings {
            negotiated_by: if over_tls { "alpn" } else { "prior-knowledge" }.into(),
            streams_per_connection: settings.streams_per_connection,
            stream_window_bytes: settings.stream_window_bytes,
            connection_window_bytes: settings.connection_window_bytes,
            grpc_method,
        }
    }
}

/// What an HTTP/2 run's streams and windows did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http2Report {
    /// Streams that completed (one per response).
    pub streams_completed: u64,
    /// From when each request could first have left (due, and its slot free) to when its
    /// HEADERS left, in milliseconds: time queued behind the server's stream limit, the
    /// connection's opening, or the client's own turnaround.
    pub queued_ms: Option<Percentiles>,
    /// Request start to the response's first DATA frame, in milliseconds.
    pub first_data_ms: Option<Percentiles>,
    /// Per stream, the pauses in its DATA that began with a flow-control window used up (the
    /// server waiting for our WINDOW_UPDATE), summed, in milliseconds.
    pub window_blocked_ms: Option<Percentiles>,
    /// Streams that waited on a window at least once.
    pub window_blocked_streams: u64,
    /// All those waits, summed, in milliseconds.
    pub window_blocked_total_ms: f64,
    /// Per stream, the time it waited with other streams of its connection for a lost
    /// segment's retransmission (one TCP byte stream holds them all), in milliseconds.
    pub loss_held_ms: Option<Percentiles>,
    /// Streams held so at least once.
    pub loss_held_streams: u64,
    /// All that time, summed, in milliseconds.
    pub loss_held_total_ms: f64,
    /// Pauses in reading that ended with a lost segment's retransmission (the kernel had
    /// received packets out of order behind a hole).
    pub loss_holes: u64,
    /// The streams those pauses held, summed.
    pub streams_held_by_loss: u64,
    /// Streams whose request body waited on the server's flow-control window at least once.
    pub request_window_blocked_streams: u64,
    /// All those waits, summed, in milliseconds.
    pub request_window_blocked_total_ms: f64,
    /// Times request bodies used up the server's window (a stream's or the connection's).
    pub request_window_stalls: u64,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (the smallest any connection was given);
    /// null when it stated none.
    pub peer_max_concurrent_streams: Option<u32>,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE, in bytes (the window of request bodies);
    /// null when it kept the default 65,535.
    pub peer_initial_window_bytes: Option<u32>,
    /// The most streams one connection had open at once.
    pub max_open_streams: u32,
    /// Stalls of a whole connection on its used-up connection window...
    pub connection_window_stalls: u64,
    /// ...and their time summed, in milliseconds.
    pub connection_window_blocked_ms: f64,
    /// WINDOW_UPDATE frames we sent.
    pub window_updates_sent: u64,
    /// Streams the server reset (RST_STREAM).
    pub streams_reset: u64,
    /// Of the requests unfinished when the run ended, those that never left: their HEADERS
    /// waited behind the server's stream limit.
    pub streams_unsent_at_end: u64,
    /// Connections the server ended with GOAWAY.
    pub goaways: u64,
    /// gRPC responses per grpc-status code (0 is OK); empty for plain HTTP/2.
    pub grpc_status_counts: BTreeMap<String, u64>,
}

impl Http2Report {
    /// The calls that failed, per non-OK grpc-status: `grpc-status 12 ×20, grpc-status 5 ×1`;
    /// empty when none did (or for plain HTTP/2).
    pub fn grpc_failures(&self) -> String {
        let failed: Vec<String> = self
            .grpc_status_counts
            .iter()
            .filter(|(code, _)| code.as_str() != "0")
            .map(|(code, n)| format!("grpc-status {code} ×{n}"))
            .collect();
        failed.join(", ")
    }

    /// The report of a run's HTTP/2 aggregates.
    pub fn of(stats: &Http2Stats) -> Self {
        Http2Report {
            streams_completed: stats.streams,
            queued_ms: Percentiles::from_ns(&stats.queued_ns),
            first_data_ms: Percentiles::from_ns(&stats.first_data_ns),
            window_blocked_ms: Percentiles::from_ns(&stats.window_blocked_ns),
            window_blocked_streams: stats.window_blocked_streams,
            window_blocked_total_ms: stats.window_blocked.as_secs_f64() * 1e3,
            loss_held_ms: Percentiles::from_ns(&stats.loss_held_ns),
            loss_held_streams: stats.loss_held_streams,
            loss_held_total_ms: stats.loss_held.as_secs_f64() * 1e3,
            loss_holes: stats.loss_holes,
            streams_held_by_loss: stats.streams_held_by_loss,
            request_window_blocked_streams: stats.send_window_blocked_streams,
            request_window_blocked_total_ms: stats.send_window_blocked.as_secs_f64() * 1e3,
            request_window_stalls: stats.send_window_stalls,
            peer_max_concurrent_streams: stats.peer_max_concurrent_streams,
            peer_initial_window_bytes: stats.peer_initial_window_bytes,
            max_open_streams: stats.max_open_streams,
            connection_window_stalls: stats.connection_window_stalls,
            connection_window_blocked_ms: stats.connection_window_blocked.as_secs_f64() * 1e3,
            window_updates_sent: stats.window_updates_sent,
            streams_reset: stats.streams_reset,
            streams_unsent_at_end: stats.streams_unsent_at_end,
            goaways: stats.goaways,
            grpc_status_counts: stats
                .grpc_status_counts
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
        }
    }
}
