//! Where a worker hands its records. Each thread owns one sink, so sinks need no locks; the
//! caller merges them when the run ends.

use crate::config::EngineConfig;
use crate::record::{ConnectionRecord, ErrorRecord, ResponseRecord};
use std::time::{Duration, SystemTime};

/// Where a worker thread hands its records, in the order they happen.
pub trait RecordSink {
    /// A request received a complete response.
    fn response(&mut self, record: &ResponseRecord);
    /// A request attempt failed; its connection is closed.
    fn error(&mut self, record: &ErrorRecord);
    /// A connection closed, or was still open when the run ended.
    fn connection(&mut self, record: &ConnectionRecord);
    /// Before the first record: the run's settings and its wall-clock start (the instant
    /// record offsets count from).
    fn run_started(&mut self, _config: &EngineConfig, _started_at: SystemTime) {}
    /// After the last record: the run lasted `elapsed`.
    fn run_ended(&mut self, _elapsed: Duration) {}
}

/// Keeps every record: for short diagnostic runs that need per-request detail.
#[derive(Debug, Default, Clone)]
pub struct CollectingSink {
    /// Every completed request, in the order they completed.
    pub responses: Vec<ResponseRecord>,
    /// Every failed attempt, in the order they failed.
    pub errors: Vec<ErrorRecord>,
    /// Every closed connection, in the order they closed.
    pub connections: Vec<ConnectionRecord>,
}

impl RecordSink for CollectingSink {
    fn response(&mut self, record: &ResponseRecord) {
        self.responses.push(record.clone());
    }
    fn error(&mut self, record: &ErrorRecord) {
        self.errors.push(record.clone());
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        self.connections.push(record.clone());
    }
}

/// Two sinks fed the same records (e.g. aggregate stats plus a diagnostic collector).
impl<A: RecordSink, B: RecordSink> RecordSink for (A, B) {
    fn response(&mut self, record: &ResponseRecord) {
        self.0.response(record);
        self.1.response(record);
    }
    fn error(&mut self, record: &ErrorRecord) {
        self.0.error(record);
        self.1.error(record);
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        self.0.connection(record);
        self.1.connection(record);
    }
    fn run_started(&mut self, config: &EngineConfig, started_at: SystemTime) {
        self.0.run_started(config, started_at);
        self.1.run_started(config, started_at);
    }
    fn run_ended(&mut self, elapsed: Duration) {
        self.0.run_ended(elapsed);
        self.1.run_ended(elapsed);
    }
}
