//! A front the doctor cannot see behind: across a path, a server whose sockets are not in
//! view (another machine or network namespace) and that names a proxy in its `Server` header (nginx, HAProxy, Envoy, ...). The doctor follows
//! hops only through a local server's sockets (`hops`), so here it says so under the verdict,
//! and what the client alone can tell: a first byte that waits a delayed-ACK timer's length
//! beyond the round trip, steadily, is a stall behind the front, on a hop.

use crate::finding::{Evidence, FindingId, Note};
use crate::phase::Observations;
use nodelay_tcp::timers::hop_stall_timer;

/// `Server` header tokens of proxies and load balancers (lower case).
const PROXY_TOKENS: [(&str, &str); 10] = [
    ("nginx", "nginx"),
    ("openresty", "OpenResty"),
    ("haproxy", "HAProxy"),
    ("envoy", "Envoy"),
    ("apache", "Apache httpd"),
    ("caddy", "Caddy"),
    ("traefik", "Traefik"),
    ("varnish", "Varnish"),
    ("cloudflare", "Cloudflare"),
    ("awselb", "an AWS load balancer"),
];

/// The proxy a `Server` header names, if it names one.
fn proxy_of_server_header(server: &str) -> Option<&'static str> {
    let server = server.to_ascii_lowercase();
    PROXY_TOKENS.iter().find(|(token, _)| server.contains(token)).map(|(_, name)| *name)
}

/// The note for a proxy front across a path whose sockets are not in view; `None` otherwise
/// (on loopback or a local server, `hops` follows the upstreams itself).
pub(crate) fn unseen_hops_note(observations: &Observations) -> Option<Note> {
    let baseline = observations.baseline.summary();
    let rtt = baseline.judged_rtt_ms();
    if rtt <= 0.0 || observations.server_view.is_some() || baseline.responses == 0 {
        return None;
    }
    let header = observations.baseline.server_header.as_deref()?;
    let proxy = proxy_of_server_header(header)?;
    let server_ms = baseline.server_first_byte_p50_ms();
    let stalled_hop = hop_stall_timer(server_ms).filter(|_| baseline.first_bytes_are_quantized());
    let from_here = match stalled_hop {
        Some(timer) => format!(
            "here its first byte waits {server_ms:.1} ms beyond the round trip, steadily, like {}: a stall \
             behind the front, on a hop",
            timer.describe()
        ),
        None => format!(
            "its first byte waits {server_ms:.1} ms beyond the round trip; a steady wait of a delayed-ACK timer's \
             length (40 ms, 200 ms) would be a stall behind the front, on a hop"
        ),
    };
    Some(Note {
        id: FindingId::ProxyHopStall,
        title: format!(
            "The server answers as {proxy} (Server: {header}) across a {rtt:.1} ms path, and its sockets are \
             not in view here (another machine or network namespace): the doctor cannot follow the hops \
             behind it (run it there to). From the client: {from_here}"
        ),
        evidence: vec![
            Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"),
            Evidence::new(
                "median first byte less the round trip (the front's time and its hops')",
                server_ms,
                "ms",
            ),
        ],
        proof: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::Phase;
    use crate::phase::tests::{phase, response};

    fn across(rtt_ms: f64, first_byte_ms: f64, server: Option<&str>) -> Observations {
        let tcp_info = nodelay_tcp::TcpInfo {
            min_rtt_us: (rtt_ms * 1e3) as u32,
            rcv_mss_bytes: 1448,
            ..Default::default()
        };
        let responses = (0..20).map(|i| response(i, first_byte_ms, None)).collect();
        let baseline = Phase {
            tcp_info: Some(tcp_info),
            server_header: server.map(String::from),
            ..phase(None, responses)
        };
        Observations { baseline, ..Observations::default() }
    }

    #[test]
    fn a_proxy_front_across_a_path_says_its_hops_are_unseen_and_what_the_client_tells() {
        let stalled = unseen_hops_note(&across(10.0, 52.0, Some("nginx/1.22.1"))).unwrap();
        assert_eq!(stalled.id, FindingId::ProxyHopStall);
        assert!(
            stalled.title.contains("as nginx (Server: nginx/1.22.1) across a 10.0 ms path"),
            "{}",
            stalled.title
        );
        assert!(stalled.title.contains("42.0 ms beyond the round trip, steadily"), "{}", stalled.title);
        let quick = unseen_hops_note(&across(10.0, 10.6, Some("envoy"))).unwrap();
        assert!(quick.title.contains("would be a stall behind the front"), "{}", quick.title);
    }

    #[test]
    fn no_note_on_loopback_for_a_plain_server_or_without_a_header() {
        assert!(unseen_hops_note(&across(0.05, 0.3, Some("nginx"))).is_none());
        assert!(unseen_hops_note(&across(10.0, 10.6, Some("BaseHTTP/0.6 Python/3.11"))).is_none());
        assert!(unseen_hops_note(&across(10.0, 10.6, None)).is_none());
    }
}
