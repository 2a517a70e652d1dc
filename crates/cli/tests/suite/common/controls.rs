//! The latency family's findings on healthy servers: none of them may appear where it is not
//! true. `listen-backlog-overflow` at 4 connections (fewer than the smallest default queue:
//! Python's socketserver and Erlang's gen_tcp listen with a backlog of 5, and Python's did
//! overflow at 8 connections opened at once, a true finding), and
//! `expect-100-continue-wait` exactly when curl itself waits for the server's 100 Continue.

use super::{Peer, finding_ids, nodelay, validate_against_schema};
use std::process::Command;
use std::time::Duration;

/// A body large enough that clients bother with Expect (and the same bytes for curl).
fn body_file() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("nodelay-controls-body-{}", std::process::id()));
    if !path.exists() {
        std::fs::write(&path, vec![b'x'; 2000]).expect("write the body file");
    }
    path
}

/// How long curl takes for the POST when it sends `Expect: 100-continue` and waits.
fn curl_with_expect(peer: &Peer) -> Duration {
    let body = format!("@{}", body_file().display());
    let output = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{time_total}",
            "-H",
            "Expect: 100-continue",
            "--data-binary",
            &body,
        ])
        .arg(peer.url("/"))
        .output()
        .expect("run curl (scripts/setup.sh installs it)");
    let seconds: f64 = String::from_utf8_lossy(&output.stdout).trim().parse().expect("curl's time_total");
    Duration::from_secs_f64(seconds)
}

/// No backlog overflow at 4 connections, and the Expect finding exactly when curl waits.
pub fn assert_latency_family_controls(peer: &Peer) {
    let run = nodelay(&["doctor", "--json", "-c", "4", &peer.url("/")]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let ids = finding_ids(&report);
    assert!(!ids.iter().any(|id| id == "listen-backlog-overflow"), "{report:#}");
    assert_eq!(report["phases"][0]["slow_opens"], 0, "{report:#}");

    let body = format!("@{}", body_file().display());
    let run = nodelay(&["doctor", "--json", "-b", &body, &peer.url("/")]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let flagged = finding_ids(&report).iter().any(|id| id == "expect-100-continue-wait");
    let curl_waited = curl_with_expect(peer) >= Duration::from_millis(900);
    assert_eq!(flagged, curl_waited, "the doctor and curl disagree: {:#}", report["expect_continue"]);
    assert!(!report["expect_continue"].is_null(), "a request with a body is probed: {report:#}");
}

/// `control!(test_name, peer_expression)`: the latency-family controls on a healthy peer.
#[macro_export]
macro_rules! control {
    ($name:ident, $peer:expr) => {
        #[test]
        fn $name() {
            let peer = $peer;
            $crate::common::controls::assert_latency_family_controls(&peer);
        }
    };
}
