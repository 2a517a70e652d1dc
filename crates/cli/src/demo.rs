//! `nodelay demo`: starts the embedded servers and measures each the way `bench` would,
//! so a new user sees the stall and its fix with no setup and no network.

use crate::demo_servers::{DemoBehaviour, start_demo_server};
use crate::exit::Outcome;
use crate::runner::run_engine;
use anyhow::{Context, Result};
use nodelay_engine::{EngineConfig, Stats};
use nodelay_report::{Percentiles, format_duration_ms};
use nodelay_wire::HttpRequest;
use std::time::Duration;

const REQUESTS_PER_SERVER: u64 = 25;

pub fn demo() -> Result<Outcome> {
    let behaviours = [
        DemoBehaviour::SplitWrites,
        DemoBehaviour::SplitWritesNoDelay,
        DemoBehaviour::CloseEveryResponse,
        DemoBehaviour::SlowHandler(Duration::from_millis(40)),
    ];
    println!(
        "nodelay demo: {} embedded servers on loopback, {REQUESTS_PER_SERVER} requests each",
        behaviours.len()
    );
    println!("one keep-alive connection per server\n");
    println!("  {:<46}{:>12}{:>12}{:>12}", "server", "p50 total", "first byte", "read gap");
    for behaviour in behaviours {
        let address = start_demo_server(behaviour).context("cannot start an embedded server")?;
        let request = HttpRequest::get(&address.to_string(), "/").encode();
        let config = EngineConfig {
            max_requests: Some(REQUESTS_PER_SERVER),
            duration: None,
            ..EngineConfig::new(address, request)
        };
        let finished = run_engine(&config, false, |_| Stats::new(1))?;
        let stats = &finished.output.sinks[0];
        let p50 =
            |histogram| Percentiles::from_ns(histogram).map_or("-".into(), |p| format_duration_ms(p.p50));
        println!(
            "  {:<46}{:>12}{:>12}{:>12}",
            behaviour.describe(),
            p50(&stats.latency_ns),
            p50(&stats.first_byte_ns),
            p50(&stats.read_gap_ns)
        );
    }
    println!("\nThe first server's body waits ~40 ms for the client's delayed ACK (Nagle × delayed ACK);");
    println!("setting TCP_NODELAY on the server (second row) removes the wait.");
    Ok(Outcome::Success)
}
