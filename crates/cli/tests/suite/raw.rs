//! Raw TCP request/response protocols: length-prefixed binary (Go), a line protocol
//! (Node), a real Redis; clients that write in pieces; framing violations; usage errors.

use crate::common::*;
use std::io::BufReader;
use std::process::{Child, Command, Stdio};

const HELLO_LEN32: &str = r"\x00\x00\x00\x05hello";

fn tcp_url(peer: &Peer) -> String {
    format!("tcp://127.0.0.1:{}", peer.port)
}

fn lenprefix_peer() -> Peer {
    start_peer(&compiled("go_lenprefix_server.go"), &[])
}

fn total_errors(report: &serde_json::Value) -> u64 {
    report["errors"].as_object().unwrap().values().filter_map(|v| v.as_u64()).sum()
}

#[test]
fn length_prefixed_binary_protocol() {
    let peer = lenprefix_peer();
    let run = nodelay(&[
        "bench",
        "-c",
        "2",
        "-n",
        "500",
        "--send",
        HELLO_LEN32,
        "--frame",
        "len32be",
        "--json",
        &tcp_url(&peer),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["requests_completed"], 500);
    assert_eq!(total_errors(&report), 0);
    // Each reply is the 4-byte prefix and the 5 reversed payload bytes.
    assert_eq!(report["response_bytes"], 500 * 9);
    assert_eq!(report["settings"]["protocol"], "tcp");
    assert_eq!(report["status_counts"], serde_json::json!({}));
    assert!(report["connections"][0]["tcp_info"]["rtt_us"].is_u64());
}

#[test]
fn line_protocol_in_text_output() {
    let peer = node_peer("node_line_server.js", &[]);
    let run = nodelay(&[
        "bench",
        "-c",
        "2",
        "-n",
        "300",
        "--send",
        r"GET key\n",
        "--frame",
        "line",
        &tcp_url(&peer),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = run.stdout();
    assert!(text.contains("300 responses in"), "{text}");
    assert!(text.contains("raw, --frame line"), "{text}");
    assert!(!text.contains("status "), "raw protocols have no status line: {text}");
    assert_eq!(latency_column_ms(&text, "total").len(), 9);
}

/// A real Redis on a free port; reads its log until it accepts connections.
struct Redis {
    child: Child,
    port: u16,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_redis() -> Redis {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-server (scripts/setup.sh installs it)");
    let mut log = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut log, "redis-server", |line| line.contains("Ready to accept connections"));
    Redis { child, port }
}

#[test]
fn real_redis_with_crlf_framing() {
    let redis = start_redis();
    let url = format!("tcp://127.0.0.1:{}", redis.port);
    let set = r"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
    let run = nodelay(&["bench", "-c", "4", "-n", "2000", "--send", set, "--frame", "crlf", "--json", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    assert_eq!(report["requests_completed"], 2000);
    assert_eq!(report["response_bytes"], 2000 * 5, "each reply is +OK\\r\\n");
    let doctor = nodelay(&["doctor", "--send", r"PING\r\n", "--frame", "crlf", "--json", &url]);
    assert_eq!(doctor.code(), 0, "{}", doctor.stdout());
    assert_eq!(doctor.json()["findings"][0]["id"], "healthy");
}

#[test]
fn split_writing_client_is_client_nagle_and_one_write_is_healthy() {
    let peer = lenprefix_peer();
    let url = tcp_url(&peer);
    let split = nodelay(&[
        "doctor",
        "--json",
        "--send",
        HELLO_LEN32,
        "--frame",
        "len32be",
        "--write-split",
        "4,rest",
        &url,
    ]);
    assert_eq!(split.code(), 3, "{}", split.stdout());
    let report = split.json();
    validate_against_schema("doctor.schema.json", &report);
    let finding = &report["findings"][0];
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(finding["id"], "client-nagle-delayed-ack", "{report:#}");
    assert_eq!(finding["proven"], true);
    let proofs = finding["proof"].as_array().unwrap();
    assert!(
        proofs.iter().any(|p| p["experiment"] == "request in one write" && p["removed"] == true),
        "{proofs:?}"
    );
    // The Nagling client's smoothed RTT carries the server's ACK delay; min_rtt does not.
    let rtt = |what: &str| {
        let evidence = finding["evidence"].as_array().unwrap();
        evidence.iter().find(|e| e["what"].as_str().unwrap().contains(what)).unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert!(rtt("rtt (smoothed)") > 100.0 * rtt("min_rtt").max(0.001), "{finding:#}");
    let one_write = nodelay(&["doctor", "--json", "--send", HELLO_LEN32, "--frame", "len32be", &url]);
    assert_eq!(one_write.code(), 0, "{}", one_write.stdout());
    assert_eq!(one_write.json()["findings"][0]["id"], "healthy");
}

#[test]
fn bench_write_split_reproduces_the_stall() {
    let peer = lenprefix_peer();
    let run = nodelay(&[
        "bench",
        "-c",
        "1",
        "-n",
        "10",
        "--json",
        "--send",
        HELLO_LEN32,
        "--frame",
        "len32be",
        "--write-split",
        "4,rest",
        &tcp_url(&peer),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    assert_eq!(report["settings"]["write_split"], serde_json::json!([4]));
    let p50 = ms(&report, "first_byte_ms", "p50");
    assert!((35.0..60.0).contains(&p50), "whole response late: first byte p50 {p50} ms");
}

#[test]
fn framing_violations_are_malformed_and_bounded() {
    let huge = python_peer("bad_server.py", &["huge-length"]);
    let run = nodelay(&["bench", "-c", "1", "-n", "3", "--send", "x", "--frame", "len32be", &tcp_url(&huge)]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr().contains("malformed_response ×3: response larger than 1048576 bytes"),
        "{}",
        run.stderr()
    );
    let endless = python_peer("bad_server.py", &["no-delimiter"]);
    let run = nodelay(&[
        "bench",
        "-c",
        "1",
        "-n",
        "2",
        "--send",
        r"x\n",
        "--frame",
        "line",
        "--max-response",
        "65536",
        &tcp_url(&endless),
    ]);
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("response larger than 65536 bytes"), "{}", run.stderr());
}

#[test]
fn raw_usage_errors() {
    let check = |args: &[&str], needle: &str| {
        let run = nodelay(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(run.stderr().contains(needle), "{args:?}: {}", run.stderr());
    };
    check(&["bench", "tcp://127.0.0.1:1"], "needs --send");
    check(&["bench", "--send", "x", "http://127.0.0.1:1/"], "for tcp:// targets");
    check(&["bench", "--send", "x", "--frame", "len64", "tcp://127.0.0.1:1"], "unknown framing");
    check(&["bench", "--send", r"\q", "--frame", "line", "tcp://127.0.0.1:1"], "unknown escape");
    check(
        &["bench", "--send", "x", "--frame", "line", "-m", "POST", "tcp://127.0.0.1:1"],
        "for http:// targets",
    );
    check(&["bench", "--send", "x", "--frame", "line", "tcp://127.0.0.1"], "no port");
    check(&["doctor", "--write-split", "0,rest", "http://127.0.0.1:1/"], "byte counts");
}
