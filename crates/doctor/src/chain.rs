//! Where a diagnosis stands in the chain of servers it follows (client → front → hop):
//! what to send a hop, how to read its server, the addresses already diagnosed.

use nodelay_load::{RequestOptions, ServerViewOptions, Target};
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
    /// the front's).
    pub(crate) fn to(&self, address: SocketAddr) -> Chain {
        let mut visited = self.visited.clone();
        visited.push(address);
        let mut request = self.request.clone();
        request.headers.retain(|(name, _)| !CREDENTIALS.contains(&name.to_ascii_lowercase().as_str()));
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
