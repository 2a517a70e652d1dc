//! The server's side of a run on this machine (`server_view` of a bench or doctor run), as
//! saved: its processes, threads and upstream connections.

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThreadView {
    pub pid: i64,
    pub tid: i64,
    pub name: String,
    pub on_cpu_ms: f64,
    pub on_cpu_share: f64,
    pub waiting_for_cpu_share: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UpstreamView {
    pub destination: String,
    pub opened: u64,
    pub opened_per_request: Option<f64>,
    pub open_at_end: u64,
    pub ports_cycled: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProcessView {
    pub pid: i64,
    pub command: String,
}

/// The server's side of a run on this machine.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ServerViewView {
    pub available: bool,
    pub why_unavailable: Option<String>,
    pub processes: Vec<ProcessView>,
    pub requests: u64,
    pub cpu_per_request_ms: Option<f64>,
    pub cores_busy: f64,
    pub ceiling_per_second: Option<f64>,
    pub threads: Vec<ThreadView>,
    pub upstreams: Vec<UpstreamView>,
    pub namespace_connects_by_others: Option<u64>,
    pub warnings: Vec<String>,
}
