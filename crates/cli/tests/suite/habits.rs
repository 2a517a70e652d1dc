//! What a wrk, oha or hey user types from habit, and output they compare against: bare-second
//! durations, -z, a numeric -q, an unwritable --export-json, a run where nothing completed.

use crate::common;

use crate::common::{canned_server, compiled, nodelay, python_peer, squeeze, start_peer};
use std::net::TcpListener;
use std::time::Duration;

#[test]
fn a_bare_duration_is_seconds_and_z_is_d() {
    let peer = start_peer(&compiled("go_http_server.go"), &[]);
    for flag in ["-d", "-z"] {
        let run = nodelay(&["bench", &peer.url("/"), "-c", "1", flag, "1", "--json"]);
        assert_eq!(run.code(), 0, "{flag}: {}", run.stderr());
        assert_eq!(run.json()["settings"]["duration_s"], 1.0, "{flag}");
    }
}

#[test]
fn a_numeric_q_points_at_rate() {
    let run = nodelay(&["bench", "-q", "100", "http://127.0.0.1:9/"]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("use --rate 100"), "{}", run.stderr());
    assert_eq!(run.stderr().lines().count(), 1, "{}", run.stderr());
}

#[test]
fn an_unwritable_export_path_is_refused_before_any_load() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    let run = nodelay(&["bench", &url, "-d", "30s", "--export-json", "/nonexistent-dir/run.json"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(
        run.stderr().contains("--export-json: cannot write /nonexistent-dir/run.json"),
        "{}",
        run.stderr()
    );
    assert!(run.elapsed < Duration::from_secs(5), "refused at once, not after the run: {:?}", run.elapsed);
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "no connection was made");
}

#[test]
fn no_percentile_header_when_nothing_completed() {
    let peer = python_peer("bad_server.py", &["silent"]);
    let run = nodelay(&["bench", &peer.url("/"), "-c", "1", "-n", "1", "--timeout", "200ms"]);
    assert_eq!(run.code(), 1);
    let text = run.stdout();
    assert!(text.contains("no response completed"), "{text}");
    assert!(!text.contains("p50"), "{text}");
}

fn not_found_server() -> String {
    let response = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec();
    format!("http://{}/missing", canned_server(b"\r\n\r\n", response))
}

#[test]
fn error_pages_are_counted_apart_and_fail_the_run_when_nothing_else_came() {
    let url = not_found_server();
    let run = nodelay(&["bench", &url, "-c", "1", "-n", "50"]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(
        squeeze(&run.stdout()).contains("non-success 50 of 50 responses are not 2xx,3xx"),
        "{}",
        run.stdout()
    );
    assert!(run.stderr().contains("every response was outside 2xx,3xx (404 ×50)"), "{}", run.stderr());
    let json = nodelay(&["bench", &url, "-c", "1", "-n", "50", "--json"]).json();
    assert_eq!(json["non_success_responses"], 50);
    assert_eq!(json["settings"]["success_status"], "2xx,3xx");
    common::validate_against_schema("bench.schema.json", &json);
    let accepted = nodelay(&["bench", &url, "-c", "1", "-n", "50", "--success-status", "2xx,404", "--json"]);
    assert_eq!(accepted.code(), 0, "{}", accepted.stderr());
    assert_eq!(accepted.json()["non_success_responses"], 0);
}

#[test]
fn the_doctor_says_it_diagnosed_an_error_page() {
    let url = not_found_server();
    let run = nodelay(&["doctor", &url, "--budget", "3s"]);
    let text = squeeze(&run.stdout());
    // An error page is a finding of its own, never healthy, and fails a gate.
    assert!(text.contains("error-responses (proven, high confidence)"), "{text}");
    assert!(text.contains("verdict: error-responses (of an error page: 404 ×"), "{text}");
    assert_eq!(run.code(), 3, "{text}");
    let json = nodelay(&["doctor", &url, "--budget", "3s", "--json"]).json();
    assert_eq!(json["error_page"]["responses"], json["error_page"]["of"], "{json}");
    common::validate_against_schema("doctor.schema.json", &json);
}

#[test]
fn an_open_loop_that_cannot_keep_up_says_so_and_how_to_fix_it() {
    // 50 ms per response on 2 connections: at most 40 req/s of the 100 asked.
    let peer = python_peer("python_http_server.py", &["--delay-ms", "50", "--disable-nagle"]);
    let run = nodelay(&["bench", &peer.url("/"), "-c", "2", "--rate", "100", "-d", "2s"]);
    let text = squeeze(&run.stdout());
    assert!(text.contains("missed rate:") && text.contains("never sent"), "{text}");
    let advice = text.split("raise -c:").nth(1).unwrap_or_else(|| panic!("{text}"));
    let needed: u64 = advice
        .split("needs about ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("a count");
    // About 50 ms per request: 100 req/s needs about 5-6 connections, not hundreds.
    assert!((4..=9).contains(&needed), "{advice}");
    let json = nodelay(&["bench", &peer.url("/"), "-c", "2", "--rate", "100", "-d", "2s", "--json"]).json();
    let missed = json["requests_due_not_sent"].as_u64().expect("a count");
    assert!((60..=190).contains(&missed), "about 120 of 200 due requests never sent: {missed}");
    let closed = nodelay(&["bench", &peer.url("/"), "-c", "2", "-d", "1s", "--json"]).json();
    assert_eq!(closed["requests_due_not_sent"], 0, "closed loop owes nothing");
}

#[test]
fn keep_alive_reuse_is_shown_and_a_server_closing_every_connection_is_not_called_keep_alive() {
    let peer = start_peer(&compiled("go_http_server.go"), &[]);
    let text = squeeze(&nodelay(&["bench", &peer.url("/"), "-c", "1", "-n", "50"]).stdout());
    assert!(
        text.contains("keep-alive 49 of 50 responses reused a connection; 1 connection opened"),
        "{text}"
    );
    let closing = python_peer("python_http_server.py", &["--http10", "--disable-nagle"]);
    let text = squeeze(&nodelay(&["bench", &closing.url("/"), "-c", "1", "-n", "20"]).stdout());
    assert!(text.contains("keep-alive asked, but the server closed every connection"), "{text}");
    assert!(
        text.contains("keep-alive 0 of 20 responses reused a connection; 20 connections opened"),
        "{text}"
    );
}

#[test]
fn url_credentials_are_sent_as_basic_auth_and_never_printed() {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://alice:s%3Acret@{}/private", listener.local_addr().expect("address"));
    let client = std::thread::spawn(move || nodelay(&["bench", &url, "-c", "1", "-n", "1", "--json"]));
    let (mut stream, _) = listener.accept().expect("nodelay connects");
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buffer).expect("read request");
        assert!(n > 0, "request ended early");
        request.extend_from_slice(&buffer[..n]);
    }
    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").expect("respond");
    let run = client.join().expect("nodelay thread");
    let request = String::from_utf8_lossy(&request);
    assert!(request.contains("\r\nAuthorization: Basic YWxpY2U6czpjcmV0\r\n"), "{request}");
    assert!(request.starts_with("GET /private HTTP/1.1\r\n"), "{request}");
    let printed = format!("{}{}", run.stdout(), run.stderr());
    assert!(!printed.contains("cret"), "the password was printed: {printed}");
    assert!(run.json()["settings"]["url"].as_str().unwrap_or_default().contains("alice:***@"), "{printed}");
}
