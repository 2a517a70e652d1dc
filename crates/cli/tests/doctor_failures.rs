//! `nodelay doctor` when requests fail: failures are reported per phase and too many of
//! them give no verdict.

mod common;

use common::*;

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
    for needle in [
        "baseline: 20 of 40 requests failed, 20 of them malformed_response",
        "bytes after the end of the response",
        "too many failures for a verdict (more than 10 % failed)",
        "unreliable-measurement",
        "verdict: unreliable-measurement",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("healthy") && !text.contains("connection-per-request"), "{text}");
    let header = text.lines().find(|l| l.trim_start().starts_with("measured")).unwrap();
    assert!(header.contains("failed"), "{header}");
    let row = text.lines().find(|l| l.trim_start().starts_with("baseline: keep-alive")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[4..6], ["20", "20"], "responses and failures: {row}");
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
