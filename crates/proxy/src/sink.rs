//! Where the relay hands its records. The relay runs on one thread and owns its sink, so a
//! sink needs no locks; it never prints.

use crate::record::{ConnectFailureRecord, ConnectionRecord, ExchangeRecord, IncompleteRecord};

pub trait RelaySink {
    fn exchange(&mut self, record: &ExchangeRecord);
    fn incomplete(&mut self, record: &IncompleteRecord);
    fn connection(&mut self, record: &ConnectionRecord);
    fn connect_failed(&mut self, record: &ConnectFailureRecord);
}

/// Keeps every record: for tests and short runs that want each exchange.
#[derive(Debug, Default, Clone)]
pub struct CollectingSink {
    pub exchanges: Vec<ExchangeRecord>,
    pub incomplete: Vec<IncompleteRecord>,
    pub connections: Vec<ConnectionRecord>,
    pub connect_failures: Vec<ConnectFailureRecord>,
}

impl RelaySink for CollectingSink {
    fn exchange(&mut self, record: &ExchangeRecord) {
        self.exchanges.push(record.clone());
    }
    fn incomplete(&mut self, record: &IncompleteRecord) {
        self.incomplete.push(*record);
    }
    fn connection(&mut self, record: &ConnectionRecord) {
        self.connections.push(record.clone());
    }
    fn connect_failed(&mut self, record: &ConnectFailureRecord) {
        self.connect_failures.push(record.clone());
    }
}
