//! `nodelay bench` across real network paths (`nodelay-path`: two namespaces, a link
//! of 10 or 40 ms round trip, real TCP on both ends) and on loopback. An independent client
//! (Python's http.client) takes the ground truth first; then bench's JSON `path_rtt_ms` (the
//! lowest TCP_INFO `min_rtt` of its connections) must be the link's round trip and its p50
//! the client's median, and its text must say the round trip beside the latency, one line
//! within the width. On loopback the JSON's round trip is under 1 ms and the text says
//! nothing of it.

use crate::common::wan::{Link, SERVER_IP};
use crate::common::{alone, ms, nodelay, python_peer, validate_against_schema};
use std::path::PathBuf;

/// A JSON file of this test's own, removed when dropped.
struct JsonFile(PathBuf);

impl JsonFile {
    fn new(name: &str) -> JsonFile {
        JsonFile(std::env::temp_dir().join(format!("nodelay-bench-paths-{}-{name}.json", std::process::id())))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }

    fn read(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(&self.0).expect("the exported JSON");
        serde_json::from_str(&text).expect("the exported file is JSON")
    }
}

impl Drop for JsonFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The text's path line, if any.
fn path_line(text: &str) -> Option<&str> {
    text.lines().find(|line| line.trim_start().starts_with("path round trip"))
}

/// One bench run across `link` with `args`: its text (80 columns: stdout is a pipe) and its
/// JSON (`--export-json`), validated against the schema.
fn bench_across(link: &Link, port: u16, name: &str, args: &[&str]) -> (String, serde_json::Value) {
    let file = JsonFile::new(name);
    let url = format!("http://{SERVER_IP}:{port}/");
    let mut all = vec!["bench", url.as_str(), "--export-json", file.path()];
    all.extend_from_slice(args);
    let run = link.nodelay(&all);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = file.read();
    validate_against_schema("bench.schema.json", &report);
    (run.stdout(), report)
}

/// The JSON's round trip against the link's, with the tolerance of the doctor's path tests.
fn assert_path_rtt(report: &serde_json::Value, rtt_ms: f64) -> f64 {
    let path = report["path_rtt_ms"].as_f64().unwrap_or_else(|| panic!("no path_rtt_ms in {report:#}"));
    assert!((path - rtt_ms).abs() <= rtt_ms * 0.25 + 1.0, "path_rtt_ms {path} on a {rtt_ms} ms link");
    path
}

/// The path line names the round trip, the network's share of the median and the rest,
/// within 80 columns; the share agrees with the JSON.
fn assert_path_line(text: &str, report: &serde_json::Value) {
    let line = path_line(text).unwrap_or_else(|| panic!("no path line in:\n{text}"));
    assert!(line.chars().count() <= 80, "wider than 80 columns: {line:?}");
    let (path, p50) = (report["path_rtt_ms"].as_f64().unwrap(), ms(report, "latency_ms", "p50"));
    assert!(line.contains(&format!("path round trip {path:.2} ms")), "{line:?} for {path} ms");
    let share = (path / p50.max(path) * 100.0).min(100.0);
    assert!(line.contains(&format!("{share:.0} % of p50")), "{line:?}: p50 {p50} ms, path {path} ms");
    assert!(line.contains("server and load"), "{line:?}");
    // Before the latency table, beside the summary.
    let (at, table) = (text.find(line).unwrap(), text.find("  p50 ").expect("the latency table"));
    assert!(at < table, "{text}");
}

/// 40 ms, one connection: the round trip and the median are the independent client's.
#[test]
fn a_40ms_path_is_named_beside_the_latency() {
    let _alone = alone();
    let link = Link::up("40ms", &[]);
    let server = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let truth_ms = link.client_median_ms(server.port, 15);
    // What the test rests on: a server with TCP_NODELAY answers in about one round trip.
    assert!((40.0..50.0).contains(&truth_ms), "the independent client's median is {truth_ms:.2} ms");

    let (text, report) = bench_across(&link, server.port, "40ms", &["-c", "1", "-n", "50"]);
    let path = assert_path_rtt(&report, 40.0);
    let p50 = ms(&report, "latency_ms", "p50");
    assert!(
        (p50 - truth_ms).abs() <= truth_ms * 0.15,
        "bench p50 {p50:.2} ms, independent client {truth_ms:.2} ms"
    );
    assert_path_line(&text, &report);
    // The connection's own min_rtt is the one in the table.
    let min_rtt_us = report["connections"][0]["tcp_info"]["min_rtt_us"].as_f64().unwrap();
    assert_eq!(min_rtt_us / 1e3, path, "{report:#}");
    eprintln!(
        "40 ms link: path_rtt_ms {path:.3}, bench p50 {p50:.2} ms, independent client {truth_ms:.2} ms\n{text}"
    );
}

/// 10 ms, several connections for 2 s: the round trip is the lowest of theirs, and the text
/// still fits its width with the many-connections summary.
#[test]
fn a_10ms_path_with_several_connections_takes_the_lowest_round_trip() {
    let _alone = alone();
    let link = Link::up("10ms", &[]);
    let server = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let truth_ms = link.client_median_ms(server.port, 15);
    assert!((10.0..20.0).contains(&truth_ms), "the independent client's median is {truth_ms:.2} ms");

    let (text, report) = bench_across(&link, server.port, "10ms", &["-c", "6", "-d", "2s"]);
    let path = assert_path_rtt(&report, 10.0);
    let lowest = report["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["tcp_info"]["min_rtt_us"].as_f64())
        .filter(|&us| us > 0.0)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(lowest / 1e3, path, "{report:#}");
    let p50 = ms(&report, "latency_ms", "p50");
    assert!(p50 >= path, "p50 {p50} ms under the round trip {path} ms");
    assert_path_line(&text, &report);
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than 80 columns: {line:?}\n{text}");
    }
    eprintln!(
        "10 ms link, 6 connections: path_rtt_ms {path:.3}, bench p50 {p50:.2} ms, independent client {truth_ms:.2} ms\n{text}"
    );
}

/// Loopback: a round trip of microseconds in the JSON, and not a word of it in the text.
#[test]
fn on_loopback_the_round_trip_is_in_the_json_only() {
    let server = python_peer("python_http_server.py", &["--disable-nagle"]);
    let file = JsonFile::new("loopback");
    let run = nodelay(&["bench", &server.url("/"), "-c", "1", "-n", "50", "--export-json", file.path()]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = file.read();
    validate_against_schema("bench.schema.json", &report);
    let path = report["path_rtt_ms"].as_f64().unwrap_or_else(|| panic!("no path_rtt_ms in {report:#}"));
    assert!(path > 0.0 && path < 1.0, "path_rtt_ms {path} on loopback");
    let text = run.stdout();
    assert!(path_line(&text).is_none() && !text.contains("round trip"), "{text}");
    let json = nodelay(&["bench", &server.url("/"), "-c", "1", "-n", "5", "--json"]).json();
    assert!(json["path_rtt_ms"].as_f64().is_some_and(|p| p < 1.0), "{json:#}");
}

/// 10 ms with 5 % loss in each direction: the connections resend segments, and the
/// responses that waited a retransmission timeout are counted apart, never more than the
/// segments resent nor than the responses that took 200 ms beyond the round trip.
#[test]
fn a_lossy_path_counts_its_retransmission_waits_apart() {
    let _alone = alone();
    let link = Link::up("10ms", &["--loss", "5"]);
    let server = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let (text, report) = bench_across(&link, server.port, "lossy", &["-c", "4", "-d", "3s"]);
    let resent = report["segments_resent"].as_u64().expect("segments_resent");
    assert!(resent > 0, "5 % loss and nothing resent: {report:#}");
    let waits = report["retransmission_waits"].as_u64().unwrap();
    assert!(waits <= resent, "{waits} waits for {resent} segments resent");
    let path = report["path_rtt_ms"].as_f64().unwrap();
    let slow: u64 = report["latency_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|bucket| bucket["up_to_ms"].as_f64().unwrap() > path + 200.0)
        .map(|bucket| bucket["count"].as_u64().unwrap())
        .sum();
    assert!(waits <= slow, "{waits} waits but {slow} responses in buckets past {path} + 200 ms");
    assert_eq!(waits > 0, text.contains("waited a retransmission timeout"), "{text}");
    eprintln!("10 ms, 5 % loss: {resent} segments resent, {waits} responses waited an RTO\n{text}");
}

/// A path that stalls (the forwarder frozen for 500 ms) loses nothing: the kernel resends segments
/// it thinks lost, the server reports each as a duplicate (D-SACK), and no response is said
/// to have waited a retransmission timeout.
#[test]
fn a_path_that_stalls_without_losing_anything_has_no_retransmission_waits() {
    let _alone = alone();
    let link = Link::up("10ms", &[]);
    let server = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let (text, report) = std::thread::scope(|scope| {
        let run = scope.spawn(|| bench_across(&link, server.port, "stalled", &["-c", "2", "-d", "2s"]));
        link.wait_for_server_connections(server.port, 2);
        link.stall(std::time::Duration::from_millis(500));
        run.join().unwrap()
    });
    // Ground truth from both ends' kernels. Where the freeze lands decides which end resends:
    // the client, when a request was on its way; the server, when a response was. So both
    // namespaces' counters are read, and every resend was reported as a duplicate.
    let client = link.resend_counters('c');
    let server = link.resend_counters('s');
    assert!(client.resent_segments + server.resent_segments >= 1, "nothing resent: {client:?} {server:?}");
    assert_eq!(client.duplicate_reported_segments, client.resent_segments, "the client's: {client:?}");
    assert_eq!(server.duplicate_reported_segments, server.resent_segments, "the server's: {server:?}");
    // nodelay's figures are the client's kernel's.
    let resent = report["segments_resent"].as_u64().unwrap();
    let spurious: u64 = report["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["tcp_info"]["spurious_retransmits"].as_u64())
        .sum();
    assert!(spurious == resent, "{resent} resent, {spurious} reported late: {report:#}");
    assert_eq!(resent, client.resent_segments, "{client:?}: {report:#}");
    assert!(report["latency_ms"]["max"].as_f64().unwrap() >= 400.0, "the stall held a response: {report:#}");
    assert_eq!(report["retransmission_waits"], 0, "{report:#}");
    assert!(!text.contains("retransmission timeout"), "{text}");
}
