//! `bench --io-uring`: the same requests and times as the epoll loop against real servers, with
//! responses timed by their arrival; closed sockets released at once; and a machine that
//! refuses io_uring (here a seccomp filter) gets a warning and the epoll loop.

mod common;

use common::nginx::Nginx;
use common::tls::certs;
use common::{
    OK_RESPONSE, alone, ms, node_peer, nodelay, python_peer, read_request_head, squeeze,
    validate_against_schema,
};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn a_stalled_response_is_timed_by_its_arrival_under_io_uring() {
    let _alone = alone();
    // Nagle on in the server: the head comes at once, the body ~40 ms later, when the client's
    // delayed ACK lets it go. Two reads, each timed by the kernel's arrival stamp.
    let peer = python_peer("python_http_server.py", &[]);
    let run = nodelay(&["bench", "--io-uring", "--json", "-c", "2", "-n", "12", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["io_uring"], true, "io_uring refused here: {}", run.stderr());
    assert_eq!(report["requests_completed"], 12);
    let (total, first_byte, gap) = (
        ms(&report, "latency_ms", "p50"),
        ms(&report, "first_byte_ms", "p50"),
        ms(&report, "read_gap_ms", "p50"),
    );
    assert!((30.0..90.0).contains(&total), "p50 total {total} ms");
    assert!(first_byte < 10.0, "p50 first byte {first_byte} ms");
    assert!((30.0..90.0).contains(&gap), "p50 read gap {gap} ms");
}

/// A keep-alive HTTP server whose first connection is answered at once and the others
/// `slow_ms` later, each connection by a thread of its own.
fn one_fast_connection_server(slow_ms: u64) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (number, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                stream.set_nodelay(true).unwrap();
                let mut pending = Vec::new();
                let mut buffer = [0u8; 4096];
                loop {
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if number > 0 {
                            std::thread::sleep(Duration::from_millis(slow_ms));
                        }
                        if stream.write_all(OK_RESPONSE).is_err() {
                            return;
                        }
                    }
                    match stream.read(&mut buffer) {
                        Ok(n @ 1..) => pending.extend_from_slice(&buffer[..n]),
                        _ => return,
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_response_held_by_the_batched_wait_is_timed_by_its_arrival() {
    let _alone = alone();
    // -t 1 -c 4, one fast connection and three answered 50 ms late: the responses come one at
    // a time, so the wait learns to hold out for one, but for a probe for two in every eight
    // waits, which holds the fast response that came for 500 µs. Timed when the loop woke,
    // those (an eighth of them) would put the p90 near 0.5 ms.
    let bench = |flags: &[&str]| {
        // A server of its own for each run: its first connection is the fast one.
        let url = format!("http://127.0.0.1:{}/", one_fast_connection_server(50));
        let mut args = vec!["bench", "--json", "-t", "1", "-c", "4", "-d", "1s"];
        args.extend(flags);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        run.json()
    };
    let unheld = bench(&[])["requests_per_second"].as_f64().unwrap();
    let report = bench(&["--io-uring"]);
    assert_eq!(report["settings"]["io_uring"], true);
    let (rate, p90) = (report["requests_per_second"].as_f64().unwrap(), ms(&report, "latency_ms", "p90"));
    assert!(rate < 0.95 * unheld, "{rate} req/s against {unheld} with epoll: no wait held a response");
    // Held at every wait, the fast connection could not pass 2000 a second (one response per
    // 500 µs); learnt, only the probes hold it.
    assert!(rate > 4000.0, "{rate} req/s: the waits did not learn to hold out for one");
    assert!(p90 < 0.3, "p90 {p90} ms: the held responses were timed when the loop woke");
}

#[test]
fn every_request_completes_against_a_fast_server_and_the_text_says_io_uring() {
    let peer = node_peer("node_http_server.js", &[]);
    let run = nodelay(&["bench", "--io-uring", "--json", "-c", "16", "-n", "3000", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["io_uring"], true);
    assert_eq!(report["requests_completed"], 3000);
    let errors: u64 = report["errors"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(errors, 0, "{:#}", report["errors"]);
    assert_eq!(report["connections_opened"], 16);
    let text = nodelay(&["bench", "--io-uring", "-c", "2", "-n", "20", &peer.url("/")]).stdout();
    assert!(squeeze(&text).contains("io_uring (batched waits, kernel arrival times)"), "{text}");
    let both = nodelay(&["bench", "--io-uring", "--busy-poll", "-n", "1", &peer.url("/")]);
    assert_eq!(both.code(), 2, "--io-uring waits, --busy-poll never does: {}", both.stderr());
}

#[test]
fn tls_runs_over_the_same_waits_on_kept_and_fresh_connections() {
    let c = certs();
    let www = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("www-tls-io-uring");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("body.txt"), "n".repeat(3000)).unwrap();
    let nginx = Nginx::start_tls(&format!(
        "server {{ ssl_certificate {}; ssl_certificate_key {}; root {}; }}",
        c.cert,
        c.key,
        www.display()
    ));
    let url = nginx.https_url("/body.txt");
    for (more, opened) in [(None, 4), (Some("--no-keepalive"), 100)] {
        let mut args = vec!["bench", "--io-uring", "--json", "-c", "4", "-n", "100", "--cacert", &c.ca];
        args.extend(more);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{more:?}: {}", run.stderr());
        let report = run.json();
        assert_eq!(report["settings"]["io_uring"], true);
        assert_eq!(report["requests_completed"], 100, "{more:?}: {:#}", report["errors"]);
        assert_eq!(report["connections_opened"], opened, "{more:?}");
        // Plaintext: the 3000-byte body and nginx's head, not TLS records.
        let per_response = report["response_bytes"].as_u64().unwrap() / 100;
        assert!((3100..3500).contains(&per_response), "{more:?}: {per_response} bytes per response");
    }
}

#[test]
fn open_loop_under_io_uring_sends_on_time_and_reaps_without_blocking() {
    let _alone = alone();
    let nginx = Nginx::start("server { location / { return 200 'ok'; } }");
    // Open loop holds out for nothing, and at 10 k req/s the pacer's next slot is always under
    // a millisecond away, so the loop mostly polls without blocking: the rate and the times
    // must be epoll's (nginx here: p50 0.03 ms either way; 0.7 ms with both cores loaded).
    let url = nginx.url("/");
    let run = |flags: &[&str]| {
        let mut args = vec!["bench", "--json", "--rate", "10000", "-c", "20", "-d", "1s"];
        args.extend(flags);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let report = run.json();
        let rate = report["requests_per_second"].as_f64().unwrap();
        assert!((rate - 10_000.0).abs() < 100.0, "{flags:?}: {rate} req/s");
        ms(&report, "latency_ms", "p50")
    };
    let epoll = run(&[]);
    let uring = run(&["--io-uring"]);
    assert!(uring < 2.0 * epoll + 0.1, "p50 {uring} ms with --io-uring, {epoll} ms with epoll");
}

/// A server that answers each request with `Connection: close` framing left to the client:
/// it keeps its end open until the client's FIN, and counts the connections open at once.
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let most_open = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicUsize::new(0));
    let most = most_open.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (open, most) = (open.clone(), most.clone());
            most.fetch_max(open.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                read_request_head(&mut stream);
                let _ = stream.write_all(OK_RESPONSE);
                // Until the client's FIN (or reset): what the count is about.
                let mut buffer = [0u8; 64];
                while matches!(stream.read(&mut buffer), Ok(1..)) {}
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, most_open)
}

#[test]
fn a_connection_closed_under_io_uring_is_released_at_once() {
    // A poll holds a reference to its socket: were it not removed when the worker closes the
    // socket, no FIN would leave until the run ends, and the server would hold all 200 open.
    let (port, most_open) = counting_server();
    let url = format!("http://127.0.0.1:{port}/");
    let run = nodelay(&["bench", "--io-uring", "--json", "--no-keepalive", "-c", "4", "-n", "200", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    assert_eq!(report["settings"]["io_uring"], true);
    assert_eq!(report["requests_completed"], 200);
    assert_eq!(report["connections_opened"], 200);
    // A connection counts until the server's thread for it sees the FIN, so a few closed ones
    // overlap the next ones: the epoll loop, too, peaks at 7 to 9 here.
    let most = most_open.load(Ordering::SeqCst);
    assert!(most <= 16, "the server had {most} connections open at once for -c 4");
}

#[test]
fn a_machine_that_refuses_io_uring_gets_a_warning_and_the_epoll_loop() {
    let peer = node_peer("node_http_server.js", &[]);
    let output = common::seccomp::refuse(
        Command::new(env!("CARGO_BIN_EXE_nodelay"))
            .args(["bench", "--io-uring", "--json", "-c", "2", "-n", "50", &peer.url("/")])
            .stdin(Stdio::null()),
        libc::SYS_io_uring_setup,
        None,
    )
    .output()
    .expect("run nodelay");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "nodelay: warning: --io-uring: not available here (Operation not permitted (os error 1)); waiting with epoll"
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["settings"]["io_uring"], false);
    assert_eq!(report["requests_completed"], 50);
}
