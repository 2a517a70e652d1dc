//! Runs every packet of a capture through flow tracking: a table of live flows (memory grows
//! with concurrent connections, not with the file), finished flows folded into totals, and
//! the flows with stalls kept for the report, the worst first, up to a bound.

use crate::decode::{decode_tcp, link_type_supported};
use crate::flow::{Endpoint, Flow, FlowSummary, SenderStalls};
use crate::reader::{Packet, ReadStats};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// `--flow`: one endpoint (either side of a flow) or an exact pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFilter {
    first: Endpoint,
    second: Option<Endpoint>,
}

impl FlowFilter {
    /// Parses `IP:PORT` or `IP:PORT-IP:PORT` (IPv6 as `[::1]:80`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let endpoint = |part: &str| {
            part.trim()
                .parse::<SocketAddr>()
                .map(|a| (a.ip(), a.port()))
                .map_err(|_| format!("'{part}' is not IP:PORT (IPv6 as [::1]:80)"))
        };
        match text.split_once('-') {
            Some((a, b)) => Ok(FlowFilter { first: endpoint(a)?, second: Some(endpoint(b)?) }),
            None => Ok(FlowFilter { first: endpoint(text)?, second: None }),
        }
    }

    fn matches(&self, a: Endpoint, b: Endpoint) -> bool {
        match self.second {
            None => self.first == a || self.first == b,
            Some(second) => (self.first, second) == (a, b) || (self.first, second) == (b, a),
        }
    }
}

/// Everything a capture showed.
#[derive(Debug, Clone, Default)]
pub struct CaptureSummary {
    pub read: ReadStats,
    pub tcp_packets: u64,
    /// Packets that are not TCP (or could not be decoded).
    pub other_packets: u64,
    /// Link types nodelay cannot decode, with their packet counts.
    pub unsupported_link_types: BTreeMap<u16, u64>,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    pub flows_seen: u64,
    pub flows_with_stalls: u64,
    /// All stalls where clients held data, and where servers did.
    pub client_stalls: SenderStalls,
    pub server_stalls: SenderStalls,
    /// Flows with stalls, most time lost first.
    pub flows: Vec<FlowSummary>,
    /// Flows with stalls beyond the kept bound (counted in the totals).
    pub flows_not_kept: u64,
}

type FlowKey = (Endpoint, Endpoint);

pub struct Analyzer {
    flows: FxHashMap<FlowKey, Flow>,
    filter: Option<FlowFilter>,
    max_kept: usize,
    summary: CaptureSummary,
}

impl Analyzer {
    /// `max_kept`: how many stalling flows to keep in detail.
    pub fn new(filter: Option<FlowFilter>, max_kept: usize) -> Self {
        Analyzer {
            flows: FxHashMap::default(),
            filter,
            max_kept: max_kept.max(1),
            summary: CaptureSummary::default(),
        }
    }

    pub fn packet(&mut self, packet: &Packet<'_>) {
        let summary = &mut self.summary;
        summary.first_ns = Some(summary.first_ns.map_or(packet.timestamp_ns, |t| t.min(packet.timestamp_ns)));
        summary.last_ns = Some(summary.last_ns.map_or(packet.timestamp_ns, |t| t.max(packet.timestamp_ns)));
        let Some(segment) = decode_tcp(packet.link_type, packet.data) else {
            summary.other_packets += 1;
            if !link_type_supported(packet.link_type) {
                *summary.unsupported_link_types.entry(packet.link_type).or_default() += 1;
            }
            return;
        };
        summary.tcp_packets += 1;
        let key = if segment.source <= segment.destination {
            (segment.source, segment.destination)
        } else {
            (segment.destination, segment.source)
        };
        let flow = match self.flows.get_mut(&key) {
            Some(flow) => flow,
            None => {
                // Trailing ACKs of a closed flow, or traffic outside the filter, open nothing.
                let opens = segment.syn || segment.payload_len > 0;
                if !opens || self.filter.as_ref().is_some_and(|f| !f.matches(key.0, key.1)) {
                    return;
                }
                self.summary.flows_seen += 1;
                self.flows.entry(key).or_insert_with(|| Flow::new([key.0, key.1], packet.timestamp_ns))
            }
        };
        flow.segment(packet.number, packet.timestamp_ns, &segment);
        if flow.is_closed()
            && let Some(flow) = self.flows.remove(&key)
        {
            self.finish_flow(flow);
        }
    }

    fn finish_flow(&mut self, flow: Flow) {
        let flow = flow.summary();
        if flow.stalls() == 0 {
            return;
        }
        let summary = &mut self.summary;
        summary.flows_with_stalls += 1;
        summary.client_stalls.merge(&flow.client_stalls);
        summary.server_stalls.merge(&flow.server_stalls);
        summary.flows.push(flow);
        if summary.flows.len() >= 2 * self.max_kept {
            self.trim_kept();
        }
    }

    fn trim_kept(&mut self) {
        let flows = &mut self.summary.flows;
        flows.sort_by(|a, b| b.lost_ns().cmp(&a.lost_ns()).then(a.first_ns.cmp(&b.first_ns)));
        if flows.len() > self.max_kept {
            self.summary.flows_not_kept += (flows.len() - self.max_kept) as u64;
            flows.truncate(self.max_kept);
        }
    }

    /// Ends every live flow and returns the totals.
    pub fn finish(mut self, read: ReadStats) -> CaptureSummary {
        let mut live: Vec<Flow> = self.flows.drain().map(|(_, flow)| flow).collect();
        live.sort_by_key(|flow| flow.summary_first_ns());
        for flow in live {
            self.finish_flow(flow);
        }
        self.trim_kept();
        self.summary.read = read;
        self.summary
    }
}
