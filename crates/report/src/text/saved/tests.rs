//! Each kind of saved run printed from a small JSON value shaped as its schema: what it says,
//! with units, in no line wider than asked; and a run of no known shape refused in one line.

use super::text_of_saved_run;
use crate::format::display_width;
use serde_json::{Value, json};

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

fn doctor() -> Value {
    json!({
        "schema": "nodelay-doctor/1", "url": "http://127.0.0.1:8080/", "address": "127.0.0.1:8080",
        "budget_s": 10.0, "elapsed_s": 1.8, "verdict": "findings",
        "phases": [
            {"name": "baseline", "description": "baseline: keep-alive, one connection", "responses": 40,
             "steady_responses": 39, "errors": 0, "attempts": 40, "total_p50_ms": 44.007,
             "first_byte_p50_ms": 0.445, "read_gap_p50_ms": 43.58, "stalled": 39},
            {"name": "quick-ack", "description": "experiment: client TCP_QUICKACK after every read",
             "responses": 30, "steady_responses": 29, "errors": 0, "attempts": 30, "total_p50_ms": 0.079,
             "first_byte_p50_ms": 0.058, "read_gap_p50_ms": 0.021, "stalled": 0}
        ],
        "findings": [finding("server-nagle-delayed-ack")], "skipped_experiments": [], "error_page": null,
        "server": "BaseHTTP/0.6", "interrupted": false, "try_fix": null, "server_view": null, "hops": []
    })
}

fn pcap() -> Value {
    json!({
        "schema": "nodelay-pcap/1", "file": "capture.pcap", "packets": 57, "tcp_packets": 57, "bytes": 6318,
        "duration_s": 1.304, "flows": 1, "flows_with_stalls": 1, "stalls": 10, "time_lost_ms": 798.513,
        "verdict": "findings", "findings": [finding("server-nagle-delayed-ack")],
        "top_flows": [{"tcp_stream": 0, "client": "10.0.0.1:37382", "server": "10.0.0.2:80", "stalls": 10,
                       "time_lost_ms": 798.513, "ack_delay_p50_ms": 42.369, "held_by": "server",
                       "wireshark_filter": "tcp.stream eq 0 && tcp.port==80"}],
        "flows_not_listed": 0, "warnings": [], "error": null
    })
}

fn leg(messages_are: &str, stalled: u64) -> Value {
    json!({"messages_are": messages_are, "messages": 10, "stalled": stalled,
           "stall_pause_ms": if stalled > 0 { json!({"p10": 40.8, "p50": 43.32, "p90": 47.2, "max": 48.0}) } else { Value::Null },
           "time_lost_ms": 43.32 * stalled as f64, "held_by": "upstream"})
}

fn proxy() -> Value {
    json!({
        "schema": "nodelay-proxy/1", "listen": "127.0.0.1:9000", "upstream": "127.0.0.1:8080",
        "elapsed_s": 1.46, "stopped_by": "exchanges", "interrupted": false, "exchanges": 10,
        "exchanges_per_second": 6.85,
        "latency_ms": {"total": percentiles(43.8), "client_leg": percentiles(0.054), "relay": percentiles(0.039),
                       "upstream": percentiles(43.4), "upstream_first_byte": percentiles(0.4), "upstream_time": null},
        "client_leg": leg("requests", 0), "upstream_leg": leg("responses", 9),
        "status_counts": {"200": 10},
        "connections": {"accepted": 1, "closed": 0, "open_at_end": 1, "failed": 0},
        "verdict": "findings", "findings": [finding("server-nagle-delayed-ack")]
    })
}

fn compare() -> Value {
    let mut slow = bench();
    slow["latency_ms"] = percentiles(44.0);
    let mut fast = bench();
    fast["latency_ms"] = percentiles(0.2);
    json!({
        "schema": "nodelay-compare/1", "rounds": 5, "rounds_completed": 5, "settings": {},
        "targets": [
            {"label": "A", "url": "http://127.0.0.1:8080/", "rounds": [], "run": slow, "error": null},
            {"label": "B", "url": "http://127.0.0.1:8081/", "rounds": [], "run": fast, "error": null}
        ],
        "comparisons": [
            {"label": "B", "against": "A", "metric": "p50_ms", "ratio": 0.0045,
             "verdict": "B is faster than A at p50: 0.0045× (p = 0.008)"},
            {"label": "B", "against": "A", "metric": "p99_ms", "ratio": 0.0045, "verdict": "p99 verdict"}
        ],
        "test": "mann-whitney-u", "interrupted": false, "interrupted_round": null
    })
}

fn merge() -> Value {
    json!({
        "schema": "nodelay-merge/1", "logs": [{"path": "a.hlog"}, {"path": "b.hlog"}],
        "requests_completed": 400, "span_s": 2.0, "requests_per_second": 200.0, "latency_ms": percentiles(4.0)
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

#[test]
fn a_doctor_run_prints_its_phases_findings_and_verdict() {
    let text = text(&doctor());
    says(
        &text,
        80,
        &[
            "nodelay doctor http://127.0.0.1:8080/ (127.0.0.1:8080): 1.8 s of a 10 s budget",
            "p50 total 1st byte",
            "baseline: keep-alive,",
            "40 0 44.007 ms",
            "100 %",
            "server-nagle-delayed-ack (proven, high confidence)",
            "The server's responses wait 44 ms",
            "median pause within a response 43.58 ms",
            "bytes that arrive before the pause 138 bytes",
            "client TCP_QUICKACK after every read: p50 44.01 ms -> 0.08 ms (removed it)",
            "fix: Set TCP_NODELAY on the server's sockets.",
            "Python http.server set disable_nagle_algorithm = True (your server's stack)",
            "(fixes for 1 other stacks: the run's JSON lists them)",
        ],
    );
    assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
    let mut error_page = doctor();
    error_page["findings"] = json!([]);
    error_page["verdict"] = json!("healthy");
    error_page["error_page"] = json!({"responses": 40, "of": 40, "status_counts": {"404": 40}});
    says(
        &super::text_of_saved_run("x", &error_page, 80).unwrap(),
        80,
        &["verdict: healthy (of an error page: 404 ×40)"],
    );
    let mut noted = doctor();
    noted["notes"] =
        json!([{"id": "initial-window-limited", "title": "A fresh connection would cost 1 more round trip"}]);
    let text = super::text_of_saved_run("x", &noted, 80).unwrap();
    assert!(text.trim_end().ends_with("note: A fresh connection would cost 1 more round trip"), "{text}");
}

#[test]
fn a_scenario_prints_each_request_under_its_name() {
    let mut named = doctor();
    named["name"] = json!("login");
    let scenario = json!({"schema": "nodelay-doctor-scenario/1", "url": "http://127.0.0.1:8080/",
                          "verdict": "findings", "requests": [named], "interrupted": false});
    says(
        &text(&scenario),
        80,
        &[
            "1 requests of a scenario",
            "login server-nagle-delayed-ack",
            "=== request 'login' ===",
            "44.007 ms",
        ],
    );
}

#[test]
fn a_capture_prints_its_flows_stalls_findings_and_verdict() {
    let text = text(&pcap());
    says(
        &text,
        80,
        &[
            "nodelay pcap capture.pcap: 57 packets (57 TCP), 6.17 KiB captured, 1.304 s of traffic, 1 TCP flow",
            "stalls: 10 in 1 flow, 798.51 ms lost",
            "stream stalls lost ACK delay held by",
            "0 10 798.51 ms 42.37 ms server",
            "stream 0: 10.0.0.1:37382 -> 10.0.0.2:80; Wireshark: tcp.stream eq 0",
            "server-nagle-delayed-ack (proven, high confidence)",
        ],
    );
    assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
}

#[test]
fn a_relay_run_prints_its_legs_findings_and_verdict() {
    let text = text(&proxy());
    says(
        &text,
        80,
        &[
            "nodelay proxy 127.0.0.1:9000 -> 127.0.0.1:8080: 10 exchanges on 1 connection in 1.46 s \
             (stopped after 10 exchanges)",
            "per exchange min p50 p90 p99 max",
            "upstream (responses) 10 9 43.32 ms 389.88 ms upstream",
            "client (requests) 10 0 - - -",
            "connections: 1 accepted, 0 closed, 1 open at the end",
            "statuses: 200 ×10",
            "server-nagle-delayed-ack (proven, high confidence)",
        ],
    );
    assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
    let mut idle = proxy();
    idle["exchanges"] = json!(0);
    idle["findings"] = json!([]);
    idle["verdict"] = json!("nothing-relayed");
    let idle = super::text_of_saved_run("x", &idle, 80).unwrap();
    assert!(
        !idle.contains("per exchange") && idle.trim_end().ends_with("verdict: nothing-relayed"),
        "{idle}"
    );
}

#[test]
fn a_compare_prints_each_targets_p50_and_the_verdict() {
    says(
        &text(&compare()),
        80,
        &[
            "nodelay compare: 2 targets, 5 of 5 rounds each",
            "A: http://127.0.0.1:8080/",
            "target req/s p50 p90 p99 errors",
            "A 23.8 44.00 ms",
            "B 23.8 0.20 ms",
            "verdict: B is faster than A at p50: 0.0045× (p = 0.008)",
        ],
    );
    assert!(!text(&compare()).contains("p99 verdict"), "the verdict is p50's");
}

#[test]
fn a_merge_prints_its_logs_and_latency() {
    says(
        &text(&merge()),
        80,
        &[
            "2 interval logs: a.hlog, b.hlog",
            "400 responses in 2.00 s (all logs): 200.0 req/s",
            "p50 4.00 ms",
        ],
    );
}

#[test]
fn every_kind_fits_the_width_asked_and_never_less_than_the_least() {
    for run in [bench(), doctor(), pcap(), proxy(), compare(), merge()] {
        for width in [60, 72, 100] {
            says(&text_of_saved_run("run.json", &run, width).unwrap(), width, &[]);
        }
        says(&text_of_saved_run("run.json", &run, 20).unwrap(), crate::text::MIN_WIDTH, &[]);
    }
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
