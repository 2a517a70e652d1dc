//! `nodelay proxy`: checks where it may listen, binds, says where, runs the relay until -d,
//! -n or Ctrl-C, and renders what it saw with the doctor's findings.

use crate::args::ProxyArgs;
use crate::exit::{Outcome, UsageError};
use crate::output;
use crate::runner::text_width;
use anyhow::{Result, anyhow};
use nodelay_diagnose::RelayObservations;
use nodelay_proxy::{ProxyStats, Relay, RelayConfig};
use nodelay_report::{Json, ProxyReport, Render};
use std::net::SocketAddr;
use std::time::Instant;

/// Descriptors kept for what is not a relayed connection (stdio, epoll, the listener).
const SPARE_DESCRIPTORS: u64 = 32;

pub fn proxy(args: &ProxyArgs) -> Result<Outcome> {
    check_listen_address(args.listen, args.listen_public)?;
    let mut config = RelayConfig::new(args.upstream);
    config.max_exchanges = args.exchanges;
    config.duration = args.duration;
    config.max_connections = connections_that_fit(config.max_connections);
    let relay = Relay::bind(args.listen, config).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => anyhow!(UsageError(format!("--upstream {}: {e}", args.upstream))),
        _ => anyhow!("cannot listen on {}: {e}", args.listen),
    })?;
    let listening = relay.local_addr();
    // Tests and scripts wait for this line: the relay accepts from now on.
    output::stderr_line(&format!("listening on {listening}"));
    let mut stats = ProxyStats::new(Instant::now(), nodelay_tcp::thresholds::STALL_GAP);
    let end =
        relay.run(&mut stats, nodelay_load::stop::requested).map_err(|e| anyhow!("relay failed: {e}"))?;
    // The rules read the statistics; the report renders what they said.
    let diagnosis = RelayObservations::of(&stats).diagnose();
    let report = ProxyReport::new(listening.to_string(), args.upstream.to_string(), &stats, &end, diagnosis);
    output::stdout(&if args.json { Json.render(&report) } else { report.render_text(text_width()) })?;
    Ok(if report.relayed_nothing() {
        Outcome::Failed
    } else if report.is_healthy() {
        Outcome::Success
    } else {
        Outcome::Findings
    })
}

/// Loopback only, unless the user says otherwise: a relay on a public address lets anyone
/// who reaches it reach the upstream through this machine.
fn check_listen_address(listen: SocketAddr, public: bool) -> Result<()> {
    if public || listen.ip().to_canonical().is_loopback() {
        return Ok(());
    }
    Err(anyhow!(UsageError(format!(
        "refusing to listen on {listen}: not a loopback address, so anyone who can reach it could use the relay \
         to reach the upstream; add --listen-public to allow it"
    ))))
}

/// Connections at once that the descriptor limit allows (two each), raising the soft limit
/// first; at most `wanted`.
fn connections_that_fit(wanted: usize) -> usize {
    let needed = 2 * wanted as u64 + SPARE_DESCRIPTORS;
    let limit = match nodelay_engine::reserve_descriptors(needed, 0) {
        Ok(limit) => limit.soft,
        Err(shortage) => shortage.limit,
    };
    let fit = limit.saturating_sub(SPARE_DESCRIPTORS) / 2;
    usize::try_from(fit).unwrap_or(usize::MAX).clamp(1, wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_listens_without_leave() {
        for loopback in ["127.0.0.1:0", "127.0.0.2:80", "[::1]:0", "[::ffff:127.0.0.1]:0"] {
            assert!(check_listen_address(loopback.parse().unwrap(), false).is_ok(), "{loopback}");
        }
        for public in ["0.0.0.0:0", "[::]:0", "192.168.1.10:8080"] {
            let error = check_listen_address(public.parse().unwrap(), false).unwrap_err();
            assert!(error.to_string().contains("--listen-public"), "{error}");
            assert_eq!(crate::exit::outcome_of(&error), Outcome::Usage);
            assert!(check_listen_address(public.parse().unwrap(), true).is_ok());
        }
    }
}
