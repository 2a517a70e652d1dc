//! `nodelay proxy` across real network paths (`nodelay-path`: two namespaces, a link
//! of 20 or 40 ms round trip, real TCP on both ends). The relay runs in the client's
//! namespace in front of an upstream one path away: Python's http.server with Nagle on (head
//! and body in two sends) and its TCP_NODELAY twin. An independent client (Python's
//! http.client) takes the ground truth first, straight to the servers and then through the
//! relay; the relay's findings must agree with it: the twin is healthy, its first byte the
//! upstream leg's round trip and not `slow-first-byte`; the Nagle upstream is named with the
//! round trip in the evidence.

use crate::common;

use crate::common::wan::{Link, SERVER_IP};
use crate::common::{evidence, finding_ids, validate_against_schema};

/// Exchanges the relay times before it stops, and the client sends through it.
const EXCHANGES: u32 = 30;

/// `EXCHANGES` GETs through the relay on one keep-alive connection from the client's
/// namespace (connecting as soon as the relay listens); the median in ms, the first request
/// (which opens both legs) not counted.
fn client_through_relay(link: &Link, relay_port: u16) -> f64 {
    let script = format!(
        "import http.client, statistics, time\n\
         c = http.client.HTTPConnection('127.0.0.1', {relay_port})\n\
         times = []\n\
         for i in range({EXCHANGES}):\n\
         \x20   t = time.perf_counter(); c.request('GET', '/'); c.getresponse().read()\n\
         \x20   times.append((time.perf_counter() - t) * 1000)\n\
         print(statistics.median(times[1:]))\n"
    );
    link.client_python(&script).trim().parse().expect("a median in ms")
}

/// The relay in front of `upstream` for `EXCHANGES` exchanges, driven by the independent
/// client: the client's median through it and the relay's JSON report.
fn through_relay(link: &Link, upstream: u16) -> (f64, serde_json::Value) {
    use std::io::BufRead;
    let target = format!("{SERVER_IP}:{upstream}");
    let n = EXCHANGES.to_string();
    let started = std::time::Instant::now();
    // Port 0: the relay says where it listens on stderr as soon as it accepts.
    let mut relay = link
        .client_command(env!("CARGO_BIN_EXE_nodelay"))
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &target, "-n", &n, "--json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the relay");
    let mut stderr = std::io::BufReader::new(relay.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("the relay's stderr");
    let relay_port: u16 = line
        .trim()
        .strip_prefix("listening on 127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("the relay said {line:?} instead of where it listens"));
    let median = client_through_relay(link, relay_port);
    let output = relay.wait_with_output().expect("the relay's report");
    assert!(started.elapsed().as_secs_f64() < 15.0, "the relay ran {:?}", started.elapsed());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the relay's JSON");
    validate_against_schema("proxy.schema.json", &report);
    assert_eq!(report["exchanges"], EXCHANGES, "{report:#}");
    (median, report)
}

/// One path: ground truth straight and through the relay, then the relay's findings.
fn across(rtt_ms: f64) {
    // Latencies, on 2 cores with a user-space link: one path at a time.
    let _alone = common::alone();
    let link = Link::up(&format!("{rtt_ms}ms"), &[]);
    let nagle = link.python_server("python_http_server.py", &[]);
    let twin = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let (nagle_ms, twin_ms) = (link.client_median_ms(nagle.port, 10), link.client_median_ms(twin.port, 10));
    assert!(nagle_ms >= twin_ms * 1.6, "ground truth: Nagle server {nagle_ms:.2} ms, twin {twin_ms:.2} ms");

    let (twin_relayed_ms, healthy) = through_relay(&link, twin.port);
    let (nagle_relayed_ms, stalling) = through_relay(&link, nagle.port);
    // Through the relay too, Nagle on the upstream costs at least one round trip.
    assert!(
        nagle_relayed_ms - twin_relayed_ms >= 0.75 * rtt_ms,
        "through the relay: Nagle upstream {nagle_relayed_ms:.2} ms, twin {twin_relayed_ms:.2} ms"
    );
    eprintln!(
        "{rtt_ms} ms path: straight Nagle {nagle_ms:.2} ms, twin {twin_ms:.2} ms; through the relay Nagle \
         {nagle_relayed_ms:.2} ms, twin {twin_relayed_ms:.2} ms"
    );

    // Each leg's round trip from the relay's own sockets: the path upstream, loopback to the client.
    for report in [&healthy, &stalling] {
        let upstream_rtt =
            report["upstream_leg"]["path_rtt_ms"].as_f64().expect("the upstream leg's round trip");
        assert!(
            (0.9 * rtt_ms..1.5 * rtt_ms).contains(&upstream_rtt),
            "{upstream_rtt} ms on a {rtt_ms} ms path"
        );
        let client_rtt = report["client_leg"]["path_rtt_ms"].as_f64().expect("the client leg's round trip");
        assert!(client_rtt < 1.0, "the client leg is loopback: {client_rtt} ms");
    }

    // The twin: its first byte is the round trip; no stall, not slow, the network named.
    assert_eq!(finding_ids(&healthy), ["healthy"], "{healthy:#}");
    let upstream_time = healthy["latency_ms"]["upstream_time"]["p50"].as_f64().unwrap();
    let first_byte = healthy["latency_ms"]["upstream_first_byte"]["p50"].as_f64().unwrap();
    assert!(
        first_byte >= 0.9 * rtt_ms && upstream_time < 5.0,
        "first byte {first_byte} ms, own {upstream_time} ms"
    );
    assert_eq!(healthy["upstream_leg"]["stalled"], 0, "{healthy:#}");
    let title = healthy["findings"][0]["title"].as_str().unwrap();
    assert!(title.contains("is the upstream leg's round trip"), "{title}");
    eprintln!("twin: {title}");

    // The Nagle upstream: named on the upstream leg, the round trip in the evidence.
    let ids = finding_ids(&stalling);
    let finding = &stalling["findings"][0];
    assert!(
        ["server-nagle-delayed-ack", "server-nagle-round-trip"].contains(&ids[0].as_str()),
        "{ids:?}\n{stalling:#}"
    );
    assert!(!ids.iter().any(|id| id == "slow-first-byte"), "{ids:?}");
    let rtt = evidence(finding, "round trip of the leg");
    assert!((0.9 * rtt_ms..1.5 * rtt_ms).contains(&rtt), "{rtt} ms on a {rtt_ms} ms path");
    let fix = finding["fix_summary"].as_str().unwrap();
    assert!(fix.contains("round trip") && fix.contains("per exchange"), "{fix}");
    if ids[0] == "server-nagle-delayed-ack" {
        // The relay delayed its ACK: the pause is its timer plus the round trip, matched net of it.
        let beyond = evidence(finding, "median pause beyond the round trip");
        assert!((37.0..65.0).contains(&beyond), "{beyond} ms beyond the round trip");
        assert!(finding["title"].as_str().unwrap().contains("ms round trip"), "{finding:#}");
    }
    eprintln!("Nagle upstream: {}\n  {fix}", finding["title"].as_str().unwrap());
}

#[test]
fn across_a_20ms_path_the_relay_names_the_nagle_upstream_and_not_the_twin() {
    across(20.0);
}

#[test]
fn across_a_40ms_path_the_twins_first_byte_is_the_round_trip_not_slow() {
    across(40.0);
}
