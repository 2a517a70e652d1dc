//! The rest of the idle-CPU latency family, each against real servers: a listen queue that
//! overflows (`doctor -c N`), `Expect: 100-continue` left unanswered, keep-alive connections
//! closed when idle (`--idle-probe`), and local ports exhausted by TIME-WAIT; and that none
//! of these findings appears on a healthy server.

mod common;

use common::{Peer, finding_ids, node_peer, nodelay, python_peer, validate_against_schema};
use std::process::Command;

/// The listen backlog `ss` shows for the peer's listening socket (its Send-Q): a check of
/// nodelay's own reading that does not go through nodelay.
fn backlog_by_ss(peer: &Peer) -> u64 {
    let output = Command::new("ss")
        .args(["-Hltn", &format!("sport = :{}", peer.port)])
        .output()
        .expect("run ss (scripts/setup.sh installs iproute2)");
    let text = String::from_utf8_lossy(&output.stdout);
    let columns: Vec<&str> = text.split_whitespace().collect();
    // State Recv-Q Send-Q Local Peer
    columns.get(2).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("ss printed {text:?}"))
}

fn doctor_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let run = nodelay(&all);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    report
}

fn finding<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {report:#}"))
}

fn evidence(finding: &serde_json::Value, starts_with: &str) -> f64 {
    finding["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"].as_str().unwrap().starts_with(starts_with))
        .and_then(|e| e["value"].as_f64())
        .unwrap_or_else(|| panic!("no evidence '{starts_with}' in {finding:#}"))
}

/// A listen queue that overflows at 20 connections: found first, proven both ways (one
/// connection at a time opens without a wait; the kernel counted the overflows), with the
/// backlog `ss` also shows.
fn assert_backlog_overflow_proven(peer: &Peer) {
    assert_eq!(backlog_by_ss(peer), 2);
    let report = doctor_json(&["-c", "20", &peer.url("/")]);
    assert_eq!(finding_ids(&report)[0], "listen-backlog-overflow", "{report:#}");
    let overflow = finding(&report, "listen-backlog-overflow");
    assert_eq!(overflow["proven"], true, "{overflow:#}");
    assert_eq!(evidence(overflow, "the listening socket's backlog"), 2.0);
    assert!(evidence(overflow, "handshakes dropped on a full accept queue") > 0.0, "{overflow:#}");
    assert!(evidence(overflow, "new connections that waited for a SYN retransmission") >= 1.0);
    let sequential = overflow["proof"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "experiment")
        .unwrap_or_else(|| panic!("no one-at-a-time proof in {overflow:#}"));
    assert_eq!(sequential["removed"], true, "{sequential:#}");
    assert_eq!(report["phases"][0]["description"], "baseline: keep-alive, 20 connections");
    assert_eq!(report["server_view"]["listen_queue"]["backlog"], 2);
}

/// The same server with a deep queue, or asked one connection at a time: no overflow.
fn assert_no_backlog_finding(report: &serde_json::Value) {
    assert!(!finding_ids(report).contains(&"listen-backlog-overflow".to_string()), "{report:#}");
    assert_eq!(report["phases"][0]["slow_opens"], 0, "{report:#}");
}

#[test]
fn a_python_listen_2_server_overflows_at_20_connections_and_the_doctor_proves_it() {
    let peer = python_peer("backlog_server.py", &["--backlog", "2", "--work-ms", "2"]);
    assert_backlog_overflow_proven(&peer);
    // One connection (the default -c 1) never fills a queue of two.
    assert_no_backlog_finding(&doctor_json(&[&peer.url("/")]));
}

#[test]
fn a_node_server_with_backlog_2_and_a_busy_event_loop_overflows_too() {
    let peer = node_peer("node_backlog_server.js", &["--backlog", "2", "--work-ms", "3"]);
    assert_backlog_overflow_proven(&peer);
}

#[test]
fn a_deep_listen_queue_does_not_overflow_at_20_connections() {
    let peer = python_peer("backlog_server.py", &["--backlog", "128", "--work-ms", "2"]);
    let report = doctor_json(&["-c", "20", &peer.url("/")]);
    assert_no_backlog_finding(&report);
    assert_eq!(report["server_view"]["listen_queue"]["backlog"], 128);
}
