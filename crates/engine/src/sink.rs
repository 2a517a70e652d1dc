//! Where a worker hands its records. Each thread owns one sink, so sinks need no locks; the
//! caller merges them when the run ends.

use crate::record::{ConnectionRecord, ErrorRecord, ResponseRecord};

pub trait RecordSink {
    fn response(&mut self, record: &ResponseRecord);
    fn error(&mut self, record: &ErrorRecord);
    fn connection(&mut self, record: &ConnectionRecord);
}

/// Keeps every record: for short diagnostic runs that need per-request detail.
#[derive(Debug, Default, Clone)]
pub struct CollectingSink {
    pub responses: Vec<ResponseRecord>,
    pub errors: Vec<ErrorRecord>,
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
}
