//! Runs every packet of a capture through flow tracking: a table of live flows (memory grows
//! with concurrent connections, not with the file), finished flows folded into totals, and
//! the flows with stalls kept for the report, the worst first, up to a bound.

use crate::decode::{decode_tcp, link_type_supported};
use crate::flow::{Endpoint, Flow, FlowSummary, SenderStalls};
use crate::reader::{Packet, ReadStats};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// `--flow`: a port (either side of any flow), one endpoint (either side of a flow) or an
/// exact pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFilter(FlowMatch);

#[derive(Debug, Clone, PartialEq, Eq)]
enum FlowMatch {
    Port(u16),
    Endpoint(Endpoint),
    Pair(Endpoint, Endpoint),
}

/// What `--flow` accepts, for error messages.
const FLOW_FORMS: &str = "PORT, IP:PORT or IP:PORT-IP:PORT (IPv6 as [::1]:80)";

impl FlowFilter {
    /// Parses `PORT`, `IP:PORT` or `IP:PORT-IP:PORT` (IPv6 as `[::1]:80`); ports are 1-65535
    /// (port 0 never appears on a TCP flow, so a filter on it would match nothing).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return match text.parse::<u16>() {
                Ok(port) if port > 0 => Ok(FlowFilter(FlowMatch::Port(port))),
                _ => Err(format!("port {text} is out of range (1-65535)")),
            };
        }
        let endpoint = |part: &str| {
            let address =
                part.trim().parse::<SocketAddr>().map_err(|_| format!("'{text}' is not {FLOW_FORMS}"))?;
            if address.port() == 0 {
                return Err(format!("port 0 in '{}' is out of range (1-65535)", part.trim()));
            }
            Ok((address.ip(), address.port()))
        };
        match text.split_once('-') {
            Some((a, b)) => Ok(FlowFilter(FlowMatch::Pair(endpoint(a)?, endpoint(b)?))),
            None => Ok(FlowFilter(FlowMatch::Endpoint(endpoint(text)?))),
        }
    }

    fn matches(&self, a: Endpoint, b: Endpoint) -> bool {
        match self.0 {
            FlowMatch::Port(port) => a.1 == port || b.1 == port,
            FlowMatch::Endpoint(end) => end == a || end == b,
            FlowMatch::Pair(first, second) => (first, second) == (a, b) || (first, second) == (b, a),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    const CLIENT: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000);
    const SERVER: Endpoint = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 8080);

    fn matches(filter: &str) -> bool {
        FlowFilter::parse(filter).unwrap().matches(CLIENT, SERVER)
    }

    #[test]
    fn a_bare_port_matches_either_side() {
        assert!(matches("8080"));
        assert!(matches("40000"));
        assert!(matches(" 8080 "));
        assert!(!matches("80"));
    }

    #[test]
    fn endpoints_and_pairs_still_match() {
        assert!(matches("10.0.0.2:8080"));
        assert!(matches("10.0.0.1:40000"));
        assert!(!matches("10.0.0.3:8080"));
        assert!(matches("10.0.0.1:40000-10.0.0.2:8080"));
        assert!(matches("10.0.0.2:8080-10.0.0.1:40000"));
        assert!(!matches("10.0.0.2:8080-10.0.0.3:40000"));
        let v6 = FlowFilter::parse("[fd00::2]:8080").unwrap();
        assert!(v6.matches((IpAddr::V6(Ipv6Addr::LOCALHOST), 1), ("fd00::2".parse().unwrap(), 8080)));
    }

    #[test]
    fn bad_filters_say_why_in_one_line() {
        let error = |text: &str| FlowFilter::parse(text).unwrap_err();
        assert_eq!(error("0"), "port 0 is out of range (1-65535)");
        assert_eq!(error("65536"), "port 65536 is out of range (1-65535)");
        assert_eq!(
            error("99999999999999999999999"),
            "port 99999999999999999999999 is out of range (1-65535)"
        );
        assert_eq!(error("10.0.0.1:0"), "port 0 in '10.0.0.1:0' is out of range (1-65535)");
        assert_eq!(error("nonsense"), format!("'nonsense' is not {FLOW_FORMS}"));
        assert_eq!(error(""), format!("'' is not {FLOW_FORMS}"));
        assert_eq!(error("80-"), format!("'80-' is not {FLOW_FORMS}"));
        assert_eq!(error("10.0.0.1:80-x"), format!("'10.0.0.1:80-x' is not {FLOW_FORMS}"));
        for text in ["0", "65536", "nonsense", "", "80-", "1.2.3.4:5-"] {
            assert!(!error(text).contains('\n'), "{text:?}");
        }
    }
}
