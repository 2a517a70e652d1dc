//! A saved run reads back into its command's report model and prints as the live run did;
//! a run saved by an older nodelay of the same schema, lacking later fields, still reads; a
//! run of no known shape is refused in one line.

use super::text_of_saved_run;
use crate::format::display_width;
use crate::render::Render;
use crate::text::FittedText;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

fn percentiles(p50: f64) -> Value {
    json!({"min": p50 / 2.0, "p50": p50, "p90": p50 * 1.5, "p95": p50 * 1.6, "p99": p50 * 2.0,
           "p999": p50 * 2.5, "max": p50 * 3.0, "mean": p50, "stdev": 1.0})
}

fn finding(id: &str) -> Value {
    json!({
        "id": id, "title": "The server's responses wait 44 ms for the client's delayed ACK",
        "proven": true, "confidence": "high",
        "evidence": [
            {"what": "keep-alive responses that pause mid-response", "value": 100.0, "unit": "%"},
            {"what": "median pause within a response", "value": 43.58, "unit": "ms"},
            {"what": "bytes that arrive before the pause", "value": 138.0, "unit": "bytes"}
        ],
        "proof": [{"kind": "experiment", "experiment": "client TCP_QUICKACK after every read",
                   "baseline_p50_ms": 44.0, "experiment_p50_ms": 0.08, "removed": true,
                   "result": "p50 44.01 ms -> 0.08 ms"}],
        "fix_summary": "Set TCP_NODELAY on the server's sockets.",
        "fix": [{"stack": "Python http.server", "how": "set disable_nagle_algorithm = True", "detected": true},
                {"stack": "Node.js net", "how": "socket.setNoDelay(true)", "detected": false}]
    })
}

fn bench() -> Value {
    json!({
        "schema": "nodelay-bench/1",
        "settings": {"url": "http://127.0.0.1:8080/", "address": "127.0.0.1:8080", "method": "GET",
                     "protocol": "http", "connections": 2, "threads": 1, "requests": 20, "duration_s": null,
                     "rate_per_second": null, "keep_alive": true},
        "requests_completed": 20, "non_success_responses": 0, "reused_connection_responses": 18,
        "requests_unfinished": 0, "elapsed_s": 0.84, "requests_per_second": 23.8, "response_bytes": 3020,
        "transfer_bytes_per_second": 3590.0,
        "latency_ms": percentiles(44.0), "first_byte_ms": percentiles(0.5), "read_gap_ms": percentiles(43.5),
        "connect_ms": null, "tls_handshake_ms": null,
        "status_counts": {"200": 20}, "errors": {"connect_refused": 0, "reset": 2},
        "error_examples": {"reset": "Connection reset by peer"}, "connections_opened": 2,
        "interrupted": false, "findings": [],
        "suggestions": [{"id": "server-nagle-delayed-ack", "why": "responses pause 44 ms", "prove": "nodelay doctor URL"}]
    })
}

fn text(run: &Value) -> String {
    text_of_saved_run("run.json", run, 80).unwrap_or_else(|e| panic!("{e}"))
}

/// Every line of `text` fits `width`, and it holds each of `needles` (white space squeezed).
fn says(text: &str, width: usize, needles: &[&str]) {
    for line in text.lines() {
        assert!(display_width(line) <= width, "wider than {width}: {line:?} in\n{text}");
    }
    let squeezed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in needles {
        assert!(squeezed.contains(needle), "{needle:?} not in:\n{text}");
    }
}

#[test]
fn a_bench_run_prints_its_target_figures_percentiles_statuses_and_errors() {
    says(
        &text(&bench()),
        80,
        &[
            "nodelay bench GET http://127.0.0.1:8080/ (127.0.0.1:8080)",
            "2 connections, 1 thread, keep-alive, 20 requests",
            "20 responses in 0.84 s: 23.8 req/s",
            "total first byte read gap",
            "p50 44.00 ms",
            "p90 66.00 ms",
            "p99 88.00 ms",
            "max 132.00 ms",
            "status 200 ×20",
            "18 of 20 responses reused a connection; 2 connections opened",
            "errors reset ×2 (first: Connection reset by peer)",
            "server-nagle-delayed-ack: responses pause 44 ms",
        ],
    );
    assert!(!text(&bench()).contains("connect_refused"), "an error kind that never happened is not listed");
    let mut none = bench();
    none["latency_ms"] = Value::Null;
    none["first_byte_ms"] = Value::Null;
    none["read_gap_ms"] = Value::Null;
    says(&text(&none), 80, &["no response completed"]);
}

/// `report` saved as its JSON reads back equal, and prints as the live run did, at `width`.
fn reads_back_and_prints_as_live<T>(report: &T, width: usize)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
    FittedText: Render<T>,
{
    let saved = serde_json::to_value(report).unwrap();
    let read: T = serde_json::from_value(saved.clone()).unwrap();
    assert_eq!(&read, report, "read back as saved");
    let text = text_of_saved_run("run.json", &saved, width).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.ends_with(&FittedText::new(width).render(report)), "{text}");
    says(&text, width.max(crate::text::MIN_WIDTH), &[]);
}

#[test]
fn every_kind_reads_back_into_its_model_and_prints_as_the_live_run() {
    use crate::html::tests::{bench_report, compare_report, doctor_report, nagle_finding};
    for width in [20, 60, 80, 120] {
        reads_back_and_prints_as_live(&crate::text::bench::tests::stalled(), width);
        reads_back_and_prints_as_live(&bench_report("http://127.0.0.1:8080/", 40), width);
        let doctor = doctor_report("http://127.0.0.1:8080/", vec![nagle_finding("responses wait 40 ms")]);
        reads_back_and_prints_as_live(&doctor, width);
        let scenario = crate::model::doctor::DoctorScenarioReport::new(
            "http://127.0.0.1:8080/".into(),
            vec![crate::model::doctor::NamedDoctorReport { name: "login".into(), report: doctor }],
        );
        reads_back_and_prints_as_live(&scenario, width);
        reads_back_and_prints_as_live(&compare_report(40), width);
        reads_back_and_prints_as_live(&crate::model::merge::tests::report(), width);
        reads_back_and_prints_as_live(
            &crate::text::pcap::tests::fixture_report("ethernet_usec_le.pcap"),
            width,
        );
        reads_back_and_prints_as_live(&crate::text::proxy::tests::report(10, 40), width);
    }
}

#[test]
fn a_doctor_run_of_an_older_nodelay_prints_what_it_has() {
    // Its phases lack the figures added since (the p90, the spectrum, HTTP/2's).
    let run = json!({
        "schema": "nodelay-doctor/1", "url": "http://127.0.0.1:8080/", "address": "127.0.0.1:8080",
        "budget_s": 10.0, "elapsed_s": 1.8, "verdict": "findings",
        "phases": [{"name": "baseline", "description": "baseline: keep-alive, one connection",
                    "responses": 40, "steady_responses": 39, "errors": 0, "attempts": 40,
                    "total_p50_ms": 44.007, "first_byte_p50_ms": 0.445, "read_gap_p50_ms": 43.58,
                    "stalled": 39}],
        "findings": [finding("server-nagle-delayed-ack")], "skipped_experiments": [], "error_page": null,
        "server": "BaseHTTP/0.6", "interrupted": false, "try_fix": null, "server_view": null, "hops": []
    });
    let text = text(&run);
    says(
        &text,
        80,
        &[
            "nodelay doctor http://127.0.0.1:8080/ (127.0.0.1:8080): 1.8 s of a 10 s budget",
            "44.01 ms",
            "server-nagle-delayed-ack (proven, high confidence)",
            "median pause within a response 43.58 ms",
        ],
    );
    assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
}

#[test]
fn a_compare_of_the_first_version_counts_the_rounds_its_targets_ran() {
    let round = |n: u32| json!({"round": n, "requests_completed": 10, "errors": 0, "requests_per_second": 10.0, "p50_ms": 1.0});
    let run = json!({
        "schema": "nodelay-compare/1", "rounds": 3, "settings": {"url": "http://a/"},
        "targets": [{"label": "A", "url": "http://a/", "rounds": [round(1), round(2)], "run": null, "error": null}],
        "comparisons": [], "test": "mann-whitney-u", "interrupted": true
    });
    says(
        &text(&run),
        80,
        &["nodelay compare: 1 target in 3 rounds", "A: http://a/", "after round 2 of 3: 2 complete rounds"],
    );
}

#[test]
fn a_run_of_no_known_shape_is_one_line_naming_its_file() {
    let cases = [
        (json!({"name": "left-pad"}), "package.json is not a nodelay report (it has no \"schema\" field"),
        (json!([1, 2]), "package.json is not a nodelay report"),
        (
            json!({"schema": "nodelay-inspect/1"}),
            "package.json has schema \"nodelay-inspect/1\", one this nodelay",
        ),
        (json!({"schema": "nodelay-doctor/1", "url": "x"}), "it lacks verdict, phases, findings"),
        (
            json!({"schema": "nodelay-pcap/1", "file": "x", "packets": 1, "flows": 1, "stalls": 0,
                   "verdict": "findings", "findings": [{"id": "no-such-finding"}]}),
            "package.json is not a valid \"nodelay-pcap/1\" report: unknown variant `no-such-finding`",
        ),
        (
            json!({"schema": "nodelay-merge/1", "logs": [], "requests_completed": "many",
                   "requests_per_second": 1.0, "latency_ms": null}),
            "package.json is not a valid \"nodelay-merge/1\" report: invalid type",
        ),
    ];
    for (run, says) in cases {
        let error = text_of_saved_run("package.json", &run, 80).expect_err("refused");
        assert!(error.contains(says), "{says:?} not in {error:?}");
        assert_eq!(error.lines().count(), 1, "{error}");
    }
}

#[test]
fn a_bench_run_saved_before_later_fields_still_reads() {
    let mut run = serde_json::to_value(crate::text::bench::tests::stalled()).unwrap();
    // Before TCP_INFO's spurious retransmits and the event loop were recorded.
    let connections = run["connections"].as_array_mut().unwrap();
    assert!(!connections.is_empty());
    for connection in connections {
        if let Some(info) = connection["tcp_info"].as_object_mut() {
            info.remove("spurious_retransmits");
        }
    }
    let settings = run["settings"].as_object_mut().unwrap();
    settings.remove("event_loop");
    settings.remove("event_loop_why");
    settings.remove("keep_alive");
    let text = text(&run);
    says(&text, 80, &["keep-alive", "tcp_info"]);
    assert!(!text.contains("loop ("), "{text}");
}

#[test]
fn a_saved_run_that_breaks_what_a_live_one_never_does_still_prints() {
    // Comparisons against a first target that is not there (a hand-edited file).
    let run = json!({"schema": "nodelay-compare/1", "rounds": 5, "targets": [],
                     "comparisons": [{"label": "B", "against": "A", "metric": "p50_ms", "ratio": 2.0}]});
    says(&text(&run), 80, &["against A"]);
}
