//! What a wrk, oha or hey user types from habit, and output they compare against: bare-second
//! durations, -z, a numeric -q, an unwritable --export-json, a run where nothing completed.

mod common;

use common::{compiled, nodelay, python_peer, start_peer};
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
