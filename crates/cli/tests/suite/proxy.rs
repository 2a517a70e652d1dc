//! `nodelay proxy` between real clients and real upstreams on loopback (port 0 everywhere):
//! it names the leg that stalls and who held the data, relays every byte unchanged under
//! load, survives an upstream that refuses and a client that vanishes, listens only on
//! loopback unless told otherwise, and reports on Ctrl-C. Every wait is on an event (a line
//! printed, a process exiting, bytes echoed), never a sleep.

use crate::common::relay::{Proxy, refusing_port, reset};
use crate::common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `nodelay bench ARGS URL`, which must succeed.
fn bench_through(proxy: &Proxy, args: &[&str]) {
    let url = proxy.url();
    let run = nodelay(&[&["bench", "-q"], args, &[url.as_str()]].concat());
    assert_eq!(run.code(), 0, "bench through the proxy failed:\n{}{}", run.stdout(), run.stderr());
}

fn finding_ids(report: &serde_json::Value) -> Vec<&str> {
    report["findings"].as_array().expect("findings").iter().map(|f| f["id"].as_str().unwrap()).collect()
}

/// The duration at the start of `text` ("43.35 ms, held by ..."), in milliseconds; panics
/// without a unit.
fn leading_ms(text: &str) -> f64 {
    let mut words = text.split_whitespace();
    let value: f64 = words.next().and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("no number: {text}"));
    match words.next().map(|unit| unit.trim_end_matches([',', ';'])) {
        Some("µs") => value / 1e3,
        Some("ms") => value,
        Some("s") => value * 1e3,
        unit => panic!("number without a unit ({unit:?}): {text}"),
    }
}

/// Every number in the text carries a unit or counts something named beside it, and every
/// line fits the 80 columns the tests run at.
fn assert_fits(text: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "over 80 columns: {line:?}\n{text}");
    }
}

#[test]
fn an_upstream_that_stalls_is_named_on_the_upstream_leg() {
    let upstream = python_peer("python_http_server.py", &[]);
    let proxy = Proxy::in_front_of(upstream.port, &["-n", "30"]);
    bench_through(&proxy, &["-c", "1", "-n", "30"]);
    let run = proxy.finish();
    let text = run.stdout();
    assert_eq!(run.code(), 3, "a finding:\n{text}{}", run.stderr());
    assert_fits(&text);
    let flat = squeeze(&text);
    assert!(flat.contains("30 exchanges (HTTP) on 1 connection"), "{text}");
    // The first exchange escapes (a fresh connection ACKs at once); the others wait ≈ 40 ms.
    let stalls = flat.split("stalls: upstream leg ").nth(1).expect("upstream leg first");
    let stalled: u32 = stalls.split(' ').next().unwrap().parse().unwrap();
    assert!((25..=30).contains(&stalled), "{text}");
    let pause_ms = leading_ms(&stalls[stalls.find(", ").unwrap() + 2..]);
    assert!((38.0..=60.0).contains(&pause_ms), "pause {pause_ms} ms:\n{text}");
    assert!(flat.contains("held by the upstream; client leg 0 of 30"), "{text}");
    // Proven when the pauses cluster like a timer's, which a loaded machine can spread.
    assert!(
        flat.contains("server-nagle-delayed-ack (proven, high confidence)")
            || flat.contains("server-nagle-delayed-ack (not proven"),
        "{text}"
    );
    assert!(
        flat.contains("The upstream held the rest of its responses until the relay's delayed ACK"),
        "{text}"
    );
    assert!(
        flat.contains("(seen by the relay)") && !flat.contains("removed it"),
        "no experiment claimed:\n{text}"
    );
    assert!(text.trim_end().ends_with("verdict: server-nagle-delayed-ack"), "{text}");
    // The split: nearly all of it upstream.
    let split = flat.split("split (medians per exchange): ").nth(1).unwrap();
    let upstream_ms = leading_ms(split.split(", ").nth(1).unwrap());
    assert!(upstream_ms >= 38.0, "{text}");
}

#[test]
fn healthy_peers_on_both_sides_are_healthy() {
    let upstream = python_peer("python_http_server.py", &["--disable-nagle"]);
    let proxy = Proxy::in_front_of(upstream.port, &["-n", "30"]);
    bench_through(&proxy, &["-c", "1", "-n", "30"]);
    let run = proxy.finish();
    let text = run.stdout();
    assert_eq!(run.code(), 0, "healthy:\n{text}{}", run.stderr());
    assert_fits(&text);
    let flat = squeeze(&text);
    assert!(flat.contains("stalls: upstream leg 0 of 30; client leg 0 of 30"), "{text}");
    assert!(text.trim_end().ends_with("verdict: healthy"), "{text}");
}

#[test]
fn a_client_that_writes_its_request_in_two_pieces_is_named_on_the_client_leg() {
    let upstream = python_peer("python_http_server.py", &["--disable-nagle"]);
    let proxy = Proxy::in_front_of(upstream.port, &["-n", "20", "--json"]);
    // Head and body in two writes with Nagle on: the second waits for the relay's ACK.
    bench_through(&proxy, &["-c", "1", "-n", "20", "-b", "name=value", "--write-split", "40,rest"]);
    let run = proxy.finish();
    let report = run.json();
    assert_eq!(finding_ids(&report), ["client-nagle-delayed-ack"], "{report:#}");
    assert_eq!(report["client_leg"]["held_by"], "client");
    assert!(report["client_leg"]["stalled"].as_u64().unwrap() >= 15, "{report:#}");
    assert_eq!(report["upstream_leg"]["stalled"], 0, "{report:#}");
    assert_eq!(run.code(), 3);
}

/// A random stream per connection: small messages echoed one at a time (turns), and on
/// every fifth connection a message over 1 MB streamed in the middle. Returns the bytes sent
/// after checking that exactly they came back.
fn echo_conversation(address: &str, seed: u64) -> u64 {
    let mut rng = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut stream = TcpStream::connect(address).expect("connect through the proxy");
    let mut reader = stream.try_clone().unwrap();
    let received = Arc::new((Mutex::new(0u64), Condvar::new()));
    let progress = received.clone();
    let reading = std::thread::spawn(move || {
        let mut back = Vec::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = reader.read(&mut buffer).expect("read the echo");
            if n == 0 {
                return back;
            }
            back.extend_from_slice(&buffer[..n]);
            *progress.0.lock().unwrap() = back.len() as u64;
            progress.1.notify_all();
        }
    });
    let mut sent = Vec::new();
    for message in 0..30 {
        let size = if seed.is_multiple_of(5) && message == 15 {
            1_048_576 + (next() % 200_000) as usize
        } else {
            1 + (next() % 4096) as usize
        };
        let bytes: Vec<u8> = (0..size).map(|_| next() as u8).collect();
        stream.write_all(&bytes).expect("write through the proxy");
        sent.extend_from_slice(&bytes);
        // Wait for the echo, so that each message is one turn of the conversation.
        let (count, echoed) = &*received;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut got = count.lock().unwrap();
        while *got < sent.len() as u64 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "connection {seed}: {} of {} bytes echoed after 60 s", *got, sent.len());
            got = echoed.wait_timeout(got, left).unwrap().0;
        }
    }
    stream.shutdown(Shutdown::Write).unwrap();
    let back = reading.join().expect("reader");
    let checksum =
        |bytes: &[u8]| bytes.iter().fold(0u64, |sum, &b| sum.wrapping_mul(31).wrapping_add(u64::from(b)));
    assert!(
        back == sent,
        "connection {seed}: {} bytes back (checksum {:x}) for {} sent (checksum {:x}); first difference at {:?}",
        back.len(),
        checksum(&back),
        sent.len(),
        checksum(&sent),
        back.iter().zip(&sent).position(|(a, b)| a != b)
    );
    sent.len() as u64
}

#[test]
fn every_byte_passes_unchanged_on_50_connections_at_once() {
    let echo = start_peer(&compiled("echo_server.c"), &[]);
    let proxy = Proxy::in_front_of(echo.port, &["--json"]);
    let address = proxy.address.clone();
    let conversations: Vec<_> = (0..50u64)
        .map(|seed| {
            let address = address.clone();
            std::thread::spawn(move || echo_conversation(&address, seed))
        })
        .collect();
    let total: u64 = conversations.into_iter().map(|c| c.join().expect("conversation")).sum();
    assert!(total > 10 * 1_048_576, "{total} bytes");
    // Each client saw the relay pass the upstream's end on: the relay has closed them all.
    proxy.interrupt();
    let run = proxy.finish();
    let report = run.json();
    assert!([0, 3].contains(&run.code()), "{}", run.stderr());
    validate_against_schema("proxy.schema.json", &report);
    let connections = &report["connections"];
    assert_eq!(
        (connections["accepted"].as_u64(), connections["closed"].as_u64()),
        (Some(50), Some(50)),
        "{report:#}"
    );
    assert_eq!(connections["failed"], 0, "{report:#}");
    assert_eq!(report["upstream_failures"]["total"], 0);
    // Not HTTP: timed by turns, and every byte belongs to an exchange relayed in full.
    assert_eq!(report["http_exchanges"], 0);
    assert_eq!(report["client_leg"]["bytes"].as_u64(), Some(total), "{report:#}");
    assert_eq!(report["upstream_leg"]["bytes"].as_u64(), Some(total), "{report:#}");
    for why in ["client_gone", "upstream_gone", "in_flight_at_end", "untimed"] {
        assert_eq!(report["incomplete"][why], 0, "{why}: {report:#}");
    }
}

#[test]
fn a_refusing_upstream_is_counted_and_reported() {
    let (_held, port) = refusing_port();
    let upstream = format!("127.0.0.1:{port}");
    let proxy = Proxy::start(&["--listen", "127.0.0.1:0", "--upstream", &upstream]);
    for _ in 0..3 {
        let mut client = TcpStream::connect(&proxy.address).unwrap();
        let _ = client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        // The relay closes the client once the upstream refused: EOF or a reset.
        let mut rest = Vec::new();
        let _ = client.read_to_end(&mut rest);
        assert!(rest.is_empty());
    }
    proxy.interrupt();
    let run = proxy.finish();
    let text = run.stdout();
    assert_fits(&text);
    let flat = squeeze(&text);
    assert!(
        flat.contains(&format!(
            "upstream {upstream} refused 3 connections; their clients' connections were closed"
        )),
        "{text}"
    );
    assert!(flat.contains("Connection refused"), "{text}");
    // Every accepted client is accounted for: closed once its upstream refused.
    assert!(flat.contains("connections: 3 accepted, 3 closed, 0 open at the end"), "{text}");
    assert!(text.trim_end().ends_with("verdict: nothing relayed"), "{text}");
    assert_eq!(run.code(), 1, "nothing relayed");
}

#[test]
fn a_client_that_vanishes_mid_exchange_is_counted_and_the_others_are_served() {
    let upstream = python_peer("python_http_server.py", &["--disable-nagle"]);
    let proxy = Proxy::in_front_of(upstream.port, &["--json"]);
    let mut vanishing = TcpStream::connect(&proxy.address).unwrap();
    vanishing.write_all(b"GET / HTTP/1.1\r\nHost: exa").unwrap();
    reset(vanishing);
    bench_through(&proxy, &["-c", "2", "-n", "40"]);
    proxy.interrupt();
    let run = proxy.finish();
    let report = run.json();
    assert_eq!(run.code(), 0, "the others were served as healthy: {report:#}");
    assert_eq!(report["exchanges"], 40, "{report:#}");
    assert_eq!(report["incomplete"]["client_gone"], 1, "{report:#}");
    assert_eq!(report["connections"]["failed"], 1, "the reset closed both legs: {report:#}");
    assert_eq!(report["connections"]["accepted"], 3);
    assert_eq!(report["connections"]["closed"], 3, "the upstream leg closed with it: {report:#}");
}

/// A client that sends its request and gives up waiting (`curl -m 2`) closed its side first:
/// its exchange is the client's doing, not one in flight when the relay stopped.
#[test]
fn a_client_that_gives_up_before_the_answer_is_not_in_flight_at_the_end() {
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = Proxy::in_front_of(upstream.local_addr().unwrap().port(), &["--json"]);
    let mut client = TcpStream::connect(&proxy.address).unwrap();
    client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    client.shutdown(std::net::Shutdown::Both).unwrap();
    // The relay passes the client's end on once it has read it: the upstream's read of the
    // request then ends, and the relay has seen the client go.
    let (mut relayed, _) = upstream.accept().unwrap();
    let mut request = Vec::new();
    relayed.read_to_end(&mut request).unwrap();
    assert!(request.starts_with(b"GET / HTTP/1.1"), "{request:?}");
    proxy.interrupt();
    let run = proxy.finish();
    let report = run.json();
    assert_eq!(report["incomplete"]["client_gone"], 1, "{report:#}");
    assert_eq!(report["incomplete"]["in_flight_at_end"], 0, "{report:#}");
}

#[test]
fn listening_beyond_loopback_needs_listen_public() {
    let run = nodelay(&["proxy", "--listen", "0.0.0.0:0", "--upstream", "127.0.0.1:9"]);
    assert_eq!(run.code(), 2);
    assert_eq!(run.stdout(), "");
    let error = run.stderr();
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains("refusing to listen on 0.0.0.0:0") && error.contains("--listen-public"),
        "{error}"
    );
    // With the flag it listens there, and stops at -d with nothing relayed.
    let proxy = Proxy::start(&[
        "--listen",
        "0.0.0.0:0",
        "--listen-public",
        "--upstream",
        "127.0.0.1:9",
        "-d",
        "200ms",
        "--json",
    ]);
    assert!(proxy.address.starts_with("0.0.0.0:"), "{}", proxy.address);
    let run = proxy.finish();
    assert_eq!(run.code(), 1, "nothing relayed");
    let report = run.json();
    validate_against_schema("proxy.schema.json", &report);
    assert_eq!(
        (report["stopped_by"].as_str(), report["verdict"].as_str()),
        (Some("duration"), Some("nothing-relayed"))
    );
    assert_eq!(report["findings"], serde_json::json!([]));
    assert!(report["latency_ms"]["total"].is_null());
}

#[test]
fn bad_arguments_are_one_line_usage_errors() {
    for args in [
        &["proxy", "--listen", "127.0.0.1", "--upstream", "127.0.0.1:9"][..],
        &["proxy", "--listen", "127.0.0.1:0", "--upstream", "nowhere"],
        &["proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "-n", "0"],
        &["proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "-d", "0s"],
        &["proxy", "--upstream", "127.0.0.1:9"],
    ] {
        let run = nodelay(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(!run.stderr().contains("panicked"), "{args:?}: {}", run.stderr());
    }
    // A port already taken is an error of its own, not a panic or a hang.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let run = nodelay(&["proxy", "--listen", &address, "--upstream", "127.0.0.1:9"]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(run.stderr().starts_with(&format!("nodelay: cannot listen on {address}: ")), "{}", run.stderr());
}

#[test]
fn json_output_validates_against_the_schema() {
    let upstream = python_peer("python_http_server.py", &[]);
    let proxy = Proxy::in_front_of(upstream.port, &["-n", "12", "--json"]);
    bench_through(&proxy, &["-c", "1", "-n", "12"]);
    let run = proxy.finish();
    let report = run.json();
    validate_against_schema("proxy.schema.json", &report);
    assert_eq!(report["schema"], "nodelay-proxy/1");
    assert_eq!((report["exchanges"].as_u64(), report["http_exchanges"].as_u64()), (Some(12), Some(12)));
    assert_eq!(report["stopped_by"], "exchanges");
    assert_eq!(report["status_counts"]["200"], 12);
    assert_eq!(finding_ids(&report), ["server-nagle-delayed-ack"], "{report:#}");
    assert_eq!(report["findings"][0]["proof"][0]["kind"], "relay-rule");
    assert!(report["upstream_leg"]["stalled"].as_u64().unwrap() >= 8, "{report:#}");
    assert_eq!(report["verdict"], "findings");
}

#[test]
fn ctrl_c_prints_the_summary_and_exits_0() {
    let upstream = python_peer("python_http_server.py", &["--disable-nagle"]);
    let proxy = Proxy::in_front_of(upstream.port, &[]);
    bench_through(&proxy, &["-c", "1", "-n", "10"]);
    proxy.interrupt();
    let run = proxy.finish();
    let text = run.stdout();
    assert_eq!(run.code(), 0, "{text}{}", run.stderr());
    assert!(run.elapsed < Duration::from_secs(30));
    let flat = squeeze(&text);
    assert!(flat.contains("10 exchanges (HTTP) on 1 connection"), "{text}");
    assert!(flat.contains("(interrupted (Ctrl-C))"), "{text}");
    assert!(text.trim_end().ends_with("verdict: healthy"), "{text}");
}
