//! Scenarios: a small web app with four routes and a form POST, measured per request name
//! by bench and diagnosed per request name by doctor.

use crate::common::*;
use std::io::{Read, Write};

const SCENARIO: &str = "tests/peers/webapp.toml";

fn scenario_path() -> String {
    repo_root().join(SCENARIO).to_string_lossy().into_owned()
}

/// What the app says it received: the number of jobs added by form POSTs.
fn jobs_added(peer: &Peer) -> u64 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", peer.port)).unwrap();
    stream.write_all(b"GET /jobs.count HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.rsplit("\r\n\r\n").next().unwrap().trim().parse().expect("a count")
}

#[test]
fn bench_reports_every_route_by_name() {
    let peer = python_peer("webapp.py", &[]);
    let run =
        nodelay(&["bench", "-c", "2", "-n", "400", "--scenario", &scenario_path(), "--json", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["requests_completed"], 400);
    assert_eq!(report["settings"]["method"], "scenario");
    let by_request = report["by_request"].as_array().expect("per-request section");
    let names: Vec<&str> = by_request.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["main page", "build page", "form page", "add job"]);
    let completed: Vec<u64> = by_request.iter().map(|r| r["requests_completed"].as_u64().unwrap()).collect();
    assert_eq!(completed.iter().sum::<u64>(), 400);
    // Weights 4:3:2:1.
    assert!(completed[0] > completed[3] * 2, "{completed:?}");
    for request in by_request {
        assert_eq!(request["errors"], 0, "{request}");
        assert!(request["latency_ms"]["p50"].as_f64().unwrap() < 20.0, "{request}");
    }
    let add_job = &by_request[3];
    assert_eq!(add_job["status_counts"], serde_json::json!({ "303": completed[3] }));
    assert_eq!(jobs_added(&peer), completed[3], "every POST reached the app");
}

#[test]
fn bench_text_lists_routes() {
    let peer = python_peer("webapp.py", &[]);
    let run = nodelay(&["bench", "-c", "1", "-n", "100", "--scenario", &scenario_path(), &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = run.stdout();
    assert!(text.contains("per request"), "{text}");
    for name in ["main page", "build page", "form page", "add job"] {
        let line = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap();
        let cells: Vec<&str> = line.trim_start()[name.len()..].split_whitespace().collect();
        assert!(cells[0].parse::<u64>().unwrap() > 0, "done count: {line}");
        assert_eq!(cells[1], "0", "errors: {line}");
        assert_eq!(cells[2], "0", "non-ok (4xx/5xx): {line}");
        let timed = text_row_ms(&cells[3..].join(" "), "");
        assert_eq!(timed.len(), 4, "p50, p99, first byte, read gap, each with a unit: {line}");
    }
}

#[test]
fn sequence_mode_sends_requests_in_order() {
    let peer = python_peer("webapp.py", &[]);
    let dir = std::env::temp_dir().join(format!("nodelay-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("body.txt"), "name=from-file&branch=dev").unwrap();
    let file = dir.join("flow.toml");
    std::fs::write(
        &file,
        "mode = \"sequence\"\n[[request]]\nname = \"form\"\npath = \"/form\"\n\
         [[request]]\nname = \"submit\"\npath = \"/jobs\"\nbody = \"@body.txt\"\n\
         headers = { Content-Type = \"application/x-www-form-urlencoded\" }\n",
    )
    .unwrap();
    let run = nodelay(&[
        "bench",
        "-c",
        "1",
        "-n",
        "10",
        "--scenario",
        file.to_str().unwrap(),
        "--json",
        &peer.url("/"),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let by_request = run.json()["by_request"].clone();
    assert_eq!(by_request[0]["requests_completed"], 5);
    assert_eq!(by_request[1]["requests_completed"], 5);
    assert_eq!(by_request[1]["status_counts"]["303"], 5);
    assert_eq!(jobs_added(&peer), 5);
}

#[test]
fn doctor_reports_findings_per_request_name() {
    let peer = python_peer("webapp.py", &[]);
    let run = nodelay(&["doctor", "--scenario", &scenario_path(), "--json", &peer.url("/")]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!(report["schema"], "nodelay-doctor-scenario/1");
    let verdicts: Vec<(String, String)> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().into(), r["findings"][0]["id"].as_str().unwrap().into()))
        .collect();
    let expect = |name: &str, id: &str| (name.to_string(), id.to_string());
    // The app sets TCP_NODELAY, so its own answers are healthy; but it delays its ACKs, so a
    // client writing a POST's head and body separately would wait ~40 ms.
    assert_eq!(
        verdicts,
        vec![
            expect("main page", "healthy"),
            expect("build page", "healthy"),
            expect("form page", "healthy"),
            expect("add job", "client-nagle-delayed-ack"),
        ]
    );
    assert_eq!(run.code(), 3);
    assert!(run.elapsed.as_secs() <= 12, "{:?}", run.elapsed);
}

#[test]
fn bad_scenarios_are_usage_errors() {
    let peer = python_peer("webapp.py", &[]);
    let missing = nodelay(&["bench", "--scenario", "/nonexistent.toml", &peer.url("/")]);
    assert_eq!(missing.code(), 2);
    assert!(missing.stderr().contains("cannot read scenario"), "{}", missing.stderr());
    let file = std::env::temp_dir().join(format!("nodelay-bad-{}.toml", std::process::id()));
    std::fs::write(&file, "[[request]]\nname = \"x\"\npath = \"no-slash\"\n").unwrap();
    let bad = nodelay(&["bench", "--scenario", file.to_str().unwrap(), &peer.url("/")]);
    std::fs::remove_file(&file).ok();
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("must start with /"), "{}", bad.stderr());
    let conflict = nodelay(&["bench", "--scenario", &scenario_path(), "-m", "PUT", &peer.url("/")]);
    assert_eq!(conflict.code(), 2);
}
