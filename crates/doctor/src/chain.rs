//! Where a diagnosis stands in the chain of servers it follows (client → front → hop):
//! what to send a hop, how to read its server, the addresses already diagnosed.

use nodelay_load::{RequestOptions, ServerViewOptions, Target, TlsChoices};
use std::net::SocketAddr;

/// How deep the doctor follows upstreams (client → front → hop → hop → hop).
pub(crate) const MAX_HOPS: usize = 3;
/// Upstreams of one server diagnosed at most.
pub(crate) const MAX_UPSTREAMS: usize = 3;

/// Where the diagnosis stands in the chain of servers: what to send a hop, how to read its
/// server, and the addresses already diagnosed (so a loop is followed once).
pub(crate) struct Chain {
    pub(crate) target: Target,
    pub(crate) request: RequestOptions,
    pub(crate) view: ServerViewOptions,
    pub(crate) visited: Vec<SocketAddr>,
    /// Connections open at once (`-c`), for every server along the chain.
    pub(crate) connections: u32,
    /// `--idle-probe`: the target's idle timeout is measured last (not the hops').
    pub(crate) idle_probe: bool,
}

/// Headers that carry the user's credentials: meant for the target, never sent to its hops.
const CREDENTIALS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

impl Chain {
    pub(crate) fn start(
        target: &Target,
        request: &RequestOptions,
        view: &ServerViewOptions,
        address: SocketAddr,
        connections: u32,
    ) -> Self {
        Chain {
            target: target.clone(),
            request: request.clone(),
            view: *view,
            visited: vec![address],
            connections,
            idle_probe: false,
        }
    }

    pub(crate) fn depth(&self) -> usize {
        self.visited.len() - 1
    }

    /// The chain one hop further: the hop's server is found by its address (`--pid` named
    /// the front's). A hop is reached over plain HTTP (`Target::at`), so the front's TLS
    /// options (`--cacert`, `--insecure`, `--sni`, `--no-tls-resume`) stay with the front: a
    /// proxy that terminates TLS talks plain HTTP to its backend, and the hop is measured so.
    pub(crate) fn to(&self, address: SocketAddr) -> Chain {
        let mut visited = self.visited.clone();
        visited.push(address);
        let mut request = self.request.clone();
        request.headers.retain(|(name, _)| !CREDENTIALS.contains(&name.to_ascii_lowercase().as_str()));
        request.tls = TlsChoices::default();
        Chain {
            target: self.target.at(address),
            request,
            view: ServerViewOptions { pid: None, ..self.view },
            visited,
            connections: self.connections,
            idle_probe: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hop_is_plain_http_without_the_fronts_tls_options_or_credentials() {
        let target = nodelay_load::parse_target("https://127.0.0.1:8443/a").unwrap();
        let request = RequestOptions {
            headers: vec![("Authorization".into(), "Bearer x".into()), ("X-Trace".into(), "1".into())],
            tls: TlsChoices {
                insecure: true,
                cacert: Some("ca.pem".into()),
                sni: Some("example.com".into()),
                no_tls_resume: true,
            },
            ..RequestOptions::default()
        };
        let front: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let chain = Chain::start(&target, &request, &ServerViewOptions::default(), front, 1);
        let hop = chain.to("127.0.0.1:8080".parse().unwrap());
        assert!(!hop.request.tls.any(), "{:?}", hop.request.tls);
        assert_eq!(hop.request.headers, [("X-Trace".to_string(), "1".to_string())]);
        // What the hop is built from is accepted for its plain-HTTP URL.
        nodelay_load::build_workload(&hop.target, &hop.request, true).unwrap();
        assert!(chain.request.tls.any(), "the front keeps its own");
    }
}
