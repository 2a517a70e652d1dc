//! Peers of the tests that cross a hop: the Express + `request` proxy A of the field report in
//! front of its service B (tests/peers/express_proxy), and the lock that keeps timing tests of
//! one file from sharing the cores.

use super::{Peer, node_peer, peer_script};

/// Service B: an Express app answering `GET /api/items/:id` with a small JSON document.
pub fn service_b() -> Peer {
    ensure_express_installed();
    node_peer("express_proxy/service_b.js", &[])
}

/// Proxy A in front of `b`, piping each request with `request`; `agent` is `fresh` (a new
/// connection to B per request, Node ≤ 18's default) or `keepalive`.
pub fn proxy_a(b: &Peer, agent: &str) -> Peer {
    node_peer("express_proxy/proxy_a.js", &["--upstream", &b.port.to_string(), "--agent", agent])
}

pub fn ensure_express_installed() {
    let modules = peer_script("express_proxy/node_modules/express");
    assert!(
        modules.is_dir(),
        "{} is missing: run scripts/setup.sh (npm ci --prefix tests/peers/express_proxy)",
        modules.display()
    );
}
