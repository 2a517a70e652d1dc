//! Where the relay hands its records. The relay runs on one thread and owns its sink, so a
//! sink needs no locks; it never prints.

use crate::record::{ConnectFailureRecord, ConnectionRecord, ExchangeRecord, IncompleteRecord};

/// Where the relay hands its records, in the order they happen.
pub trait RelaySink {
    /// An exchange was relayed in full.
    fn exchange(&mut self, record: &ExchangeRecord);
    /// An exchange that had begun will not be relayed in full.
    fn incomplete(&mut self, record: &IncompleteRecord);
    /// A relayed connection ended.
    fn connection(&mut self, record: &ConnectionRecord);
    /// An upstream connection could not be opened.
    fn connect_failed(&mut self, record: &ConnectFailureRecord);
}

/// Keeps every record: for tests and short runs that want each exchange.
#[derive(Debug, Default, Clone)]
pub struct CollectingSink {
    /// Every exchange relayed in full, in the order they finished.
    pub exchanges: Vec<ExchangeRecord>,
    /// Every exchange that did not finish, in the order they were given up.
    pub incomplete: Vec<IncompleteRecord>,
    /// Every relayed connection, in the order they ended.
    pub connections: Vec<ConnectionRecord>,
    /// Every upstream connection that could not be opened, in the order they failed.
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
