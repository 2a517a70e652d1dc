//! Where a worker hands its records. A thread owns its sink, so sinks need no locks; the
//! caller merges them when the run ends. Past 16 threads (or one per core), threads share
//! sinks (a sink of histograms is ~0.6 MiB, a thousand of them most of a GiB), each through a
//! [`SharedSink`] that never waits for the lock.

use crate::config::EngineConfig;
use crate::record::{ConnectionRecord, ErrorRecord, ResponseRecord};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
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

/// A sink lent out, `&mut dyn RecordSink` included.
impl<T: RecordSink + ?Sized> RecordSink for &mut T {
    fn response(&mut self, record: &ResponseRecord) {
        (**self).response(record);
    }
    fn error(&mut self, record: &ErrorRecord) {
        (**self).error(record);
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        (**self).connection(record);
    }
    fn run_started(&mut self, config: &EngineConfig, started_at: SystemTime) {
        (**self).run_started(config, started_at);
    }
    fn run_ended(&mut self, elapsed: Duration) {
        (**self).run_ended(elapsed);
    }
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

/// Records a [`SharedSink`] holds while another thread has the sink.
const QUEUED_MAX: usize = 64;

/// A record kept for the shared sink's next turn.
enum Queued {
    Response(ResponseRecord),
    Error(ErrorRecord),
    Connection(ConnectionRecord),
}

/// One thread's handle on a sink other threads share. A record goes in under the sink's lock
/// when it is free; when another thread holds it, the record waits in this handle's queue for
/// the next record that finds it free, so a worker never blocks on another (a blocked loop
/// would delay its next request, and in a closed loop add to that request's latency). A
/// thread's records reach the sink in the order they happened.
pub(crate) struct SharedSink<'a, S> {
    sink: &'a Mutex<S>,
    queued: Vec<Queued>,
}

impl<'a, S: RecordSink> SharedSink<'a, S> {
    pub fn new(sink: &'a Mutex<S>) -> Self {
        SharedSink { sink, queued: Vec::new() }
    }

    /// Hands over what is still queued, waiting for the lock: the thread's last records.
    pub fn finish(mut self) {
        if !self.queued.is_empty() {
            let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
            drain(&mut self.queued, &mut *sink);
        }
    }

    /// The sink with this handle's queue already in it, or `None` when another thread holds
    /// it (and the queue has room).
    fn turn(&mut self) -> Option<MutexGuard<'a, S>> {
        let mut sink = match self.sink.try_lock() {
            Ok(sink) => sink,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) if self.queued.len() < QUEUED_MAX => return None,
            Err(TryLockError::WouldBlock) => self.sink.lock().unwrap_or_else(PoisonError::into_inner),
        };
        drain(&mut self.queued, &mut *sink);
        Some(sink)
    }
}

fn drain<S: RecordSink>(queued: &mut Vec<Queued>, sink: &mut S) {
    for record in queued.drain(..) {
        match record {
            Queued::Response(record) => sink.response(&record),
            Queued::Error(record) => sink.error(&record),
            Queued::Connection(record) => sink.connection(&record),
        }
    }
}

/// The run's start and end go to the shared sink itself, once, not through its handles.
impl<S: RecordSink> RecordSink for SharedSink<'_, S> {
    fn response(&mut self, record: &ResponseRecord) {
        match self.turn() {
            Some(mut sink) => sink.response(record),
            None => self.queued.push(Queued::Response(record.clone())),
        }
    }
    fn error(&mut self, record: &ErrorRecord) {
        match self.turn() {
            Some(mut sink) => sink.error(record),
            None => self.queued.push(Queued::Error(record.clone())),
        }
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        match self.turn() {
            Some(mut sink) => sink.connection(record),
            None => self.queued.push(Queued::Connection(record.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;

    fn response(sequence_on_connection: u32) -> ResponseRecord {
        ResponseRecord {
            connection: 3,
            request: 0,
            sequence_on_connection,
            start_offset: Duration::ZERO,
            connect: None,
            tls_handshake: None,
            tls_resumed: false,
            first_byte: Duration::from_micros(50),
            total: Duration::from_micros(80),
            total_uncorrected: Duration::from_micros(80),
            read_chunks: 1,
            max_read_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
            last_read_gap: Duration::ZERO,
            last_read_bytes: 0,
            paused: Duration::ZERO,
            pauses: 0,
            response_bytes: 40,
            status: 200,
            http2: None,
        }
    }

    #[test]
    fn a_record_that_finds_the_shared_sink_held_waits_its_turn_in_order() {
        let shared = Mutex::new(CollectingSink::default());
        let mut handle = SharedSink::new(&shared);
        let held = shared.lock().unwrap();
        handle.response(&response(0));
        let failure = ErrorRecord {
            connection: 3,
            request: 0,
            offset: Duration::ZERO,
            kind: ErrorKind::Reset,
            message: "read: reset".into(),
        };
        handle.error(&failure);
        drop(held);
        assert!(shared.lock().unwrap().responses.is_empty(), "queued while the sink was held");

        handle.response(&response(1));
        let sequences = |sink: &CollectingSink| -> Vec<u32> {
            sink.responses.iter().map(|r| r.sequence_on_connection).collect()
        };
        assert_eq!(sequences(&shared.lock().unwrap()), vec![0, 1]);
        assert_eq!(shared.lock().unwrap().errors, vec![failure]);

        // A thread's last records, queued, go in when it finishes.
        let held = shared.lock().unwrap();
        handle.response(&response(2));
        drop(held);
        handle.finish();
        assert_eq!(sequences(&shared.lock().unwrap()), vec![0, 1, 2]);
    }
}
