//! `nodelay doctor` when requests fail or the target never answers: failures are reported
//! per phase and too many of them give no verdict; every step counts against --budget.

use crate::common::*;
use std::time::Duration;

/// How far past --budget a run may end in these tests: docs/doctor.md states 0.1 s; the rest is
/// headroom for a machine shared with other builds.
const SLACK: Duration = Duration::from_millis(1000);

fn finding_ids(report: &serde_json::Value) -> Vec<&str> {
    report["findings"].as_array().expect("findings array").iter().map(|f| f["id"].as_str().unwrap()).collect()
}

#[test]
fn unsolicited_responses_are_reported_and_give_no_verdict() {
    let peer = python_peer("bad_server.py", &["double-response"]);
    // Several runs: the verdict must not depend on which requests happened to fail.
    for _ in 0..3 {
        let run = nodelay(&["doctor", "--json", &peer.url("/")]);
        assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
        let report = run.json();
        validate_against_schema("doctor.schema.json", &report);
        assert_eq!(report["verdict"], "unreliable", "{report:#}");
        assert_eq!(finding_ids(&report), ["unreliable-measurement"], "{report:#}");
        let baseline = &report["phases"][0];
        assert_eq!(baseline["name"], "baseline");
        let (errors, attempts) =
            (baseline["errors"].as_u64().unwrap(), baseline["attempts"].as_u64().unwrap());
        assert_eq!(attempts, 40, "{baseline:#}");
        assert_eq!(errors + baseline["responses"].as_u64().unwrap(), attempts, "{baseline:#}");
        assert!(errors * 10 > attempts, "more than 10 % failed: {baseline:#}");
        assert_eq!(baseline["reliable"], false);
        assert_eq!(baseline["errors_by_kind"]["malformed_response"], errors, "{baseline:#}");
        let most_common = &baseline["most_common_error"];
        assert_eq!(most_common["kind"], "malformed_response", "{baseline:#}");
        assert_eq!(most_common["count"], errors);
        assert!(
            most_common["example"].as_str().unwrap().contains("after the end of the response"),
            "{most_common}"
        );
        // No experiment is run on a measurement that cannot carry a verdict.
        assert_eq!(report["phases"].as_array().unwrap().len(), 1, "{report:#}");
        assert!(run.stderr().contains("could not measure"), "{}", run.stderr());
    }
    let run = nodelay(&["doctor", &peer.url("/")]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    let text = run.stdout();
    let squeezed = squeeze(&text);
    for needle in [
        "baseline: 20 of 40 requests failed, 20 of them malformed_response",
        "bytes after the end of the response",
        "too many failures for a verdict (more than 10 % failed)",
        "unreliable-measurement",
        "verdict: unreliable-measurement",
    ] {
        assert!(squeezed.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("healthy") && !text.contains("connection-per-request"), "{text}");
    let header = text.lines().find(|l| l.trim_start().starts_with("measured")).unwrap();
    assert!(header.contains("failed"), "{header}");
    // The description may wrap below its row; the counts stay on its first line.
    let row = text.lines().find(|l| l.trim_start().starts_with("baseline: keep-alive")).unwrap();
    let counts: Vec<u64> = row.split_whitespace().filter_map(|cell| cell.parse().ok()).take(2).collect();
    assert_eq!(counts, [20, 20], "responses and failures: {row}");
    let stderr = run.stderr();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("could not measure") && stderr.contains("reliably"), "{stderr}");
}

#[test]
fn a_healthy_run_reports_no_failures() {
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let run = nodelay(&["doctor", "--json", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stdout());
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let baseline = &report["phases"][0];
    assert_eq!(baseline["errors"], 0);
    assert_eq!(baseline["reliable"], true);
    assert_eq!(baseline["errors_by_kind"], serde_json::json!({}));
    assert!(baseline["most_common_error"].is_null(), "{baseline:#}");
}

/// A budget of 2 s against a server whose accept queue is full: connects hang in SYN-SENT.
#[test]
fn the_reachability_probe_counts_against_the_budget() {
    let peer = python_peer("bad_server.py", &["never-accept"]);
    let url = peer.url("/");
    let scenario = repo_root().join("tests/peers/webapp.toml");
    let scenario = scenario.to_str().unwrap();
    for extra in [&[][..], &["--timeout", "30s"], &["--scenario", scenario]] {
        let run = nodelay(&[&["doctor", "--budget", "2s"], extra, &[&url]].concat());
        assert_eq!(run.code(), 1, "{extra:?}: {}", run.stdout());
        assert!(run.elapsed < Duration::from_secs(2) + SLACK, "{extra:?} took {:?}", run.elapsed);
        let stderr = run.stderr();
        assert_eq!(stderr.lines().count(), 1, "{extra:?}: {stderr}");
        assert!(stderr.contains("cannot connect") && stderr.contains("2 s budget"), "{extra:?}: {stderr}");
        assert!(run.stdout().is_empty(), "{}", run.stdout());
    }
}

/// A server that takes the connection and never answers: the doctor stops after the
/// baseline's share of the budget (any experiment would wait as long for nothing) and says
/// that, not "within the budget".
#[test]
fn a_server_that_never_answers_is_named_after_the_baselines_share() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let run = nodelay(&["doctor", "--budget", "2s", &url]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    assert!(run.elapsed < Duration::from_secs(2) + SLACK, "took {:?}", run.elapsed);
    let stderr = run.stderr();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no response arrived in the baseline's 0.8 s (40 % of the budget): the server took the connection and answered nothing"),
        "{stderr}"
    );
}

#[test]
fn each_scenario_request_gets_a_share_of_the_budget() {
    let peer = python_peer("webapp.py", &[]);
    let scenario = repo_root().join("tests/peers/webapp.toml");
    let run = nodelay(&[
        "doctor",
        "--json",
        "--budget",
        "2s",
        "--scenario",
        scenario.to_str().unwrap(),
        &peer.url("/"),
    ]);
    assert!([0, 3].contains(&run.code()), "{}", run.stderr());
    assert!(run.elapsed < Duration::from_secs(2) + SLACK, "took {:?}", run.elapsed);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 4);
    // The first gets a quarter; what one leaves unused goes to those after it.
    assert!(requests[0]["budget_s"].as_f64().unwrap() <= 0.5, "{report:#}");
    let elapsed: f64 = requests.iter().map(|r| r["elapsed_s"].as_f64().unwrap()).sum();
    assert!(elapsed <= 2.0, "{report:#}");
    for request in requests {
        let (budget, elapsed) =
            (request["budget_s"].as_f64().unwrap(), request["elapsed_s"].as_f64().unwrap());
        assert!(elapsed <= budget + SLACK.as_secs_f64(), "{request:#}");
    }
}
