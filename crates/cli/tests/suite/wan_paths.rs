//! The doctor across real network paths (`nodelay-path`: two namespaces, a link of
//! 2, 10 or 40 ms round trip, real TCP on both ends). The same Python server with Nagle on
//! (head and body in two sends) and its TCP_NODELAY twin; an independent client (Python's
//! http.client) takes the ground truth first, then the doctor must agree with it: the twin
//! is `healthy` with the network's share named, never `slow-first-byte`; the Nagle server's
//! hold is named, with the round trip it costs.

use crate::common;

use crate::common::wan::Link;
use crate::common::{evidence, finding, finding_ids, squeeze, validate_against_schema};

/// The ground truth on one path: the Nagle server's median against its twin's.
fn ground_truth(link: &Link, nagle: u16, twin: u16) -> (f64, f64) {
    let (nagle_ms, twin_ms) = (link.client_median_ms(nagle, 15), link.client_median_ms(twin, 15));
    // What the tests rest on: over a path, Nagle on the server costs a round trip or more.
    assert!(nagle_ms >= twin_ms * 1.6, "ground truth: Nagle server {nagle_ms:.2} ms, twin {twin_ms:.2} ms");
    (nagle_ms, twin_ms)
}

fn doctor(link: &Link, port: u16) -> serde_json::Value {
    let run = link.nodelay(&["doctor", "--json", &format!("http://{}:{port}/", common::wan::SERVER_IP)]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert!(run.elapsed.as_secs_f64() <= 10.5, "the doctor took {:?} of its 10 s budget", run.elapsed);
    report
}

/// One path: ground truth, then the doctor on both servers.
fn across(rtt_ms: f64) {
    across_with(rtt_ms, &[]);
}

/// The same across a path with nodelay-path's `extra` options (jitter, loss).
fn across_with(rtt_ms: f64, extra: &[&str]) {
    // Latencies, on 2 cores with a user-space link: one path at a time.
    let _alone = common::alone();
    let link = Link::up(&format!("{rtt_ms}ms"), extra);
    let nagle = link.python_server("python_http_server.py", &[]);
    let twin = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let (nagle_ms, twin_ms) = ground_truth(&link, nagle.port, twin.port);

    let lossy = extra.contains(&"--loss");
    let healthy = doctor(&link, twin.port);
    let ids = finding_ids(&healthy);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // On a lossy path a lost segment may cost the twin a retransmission timeout, named as
    // such (a lost SYN and a lost response are two findings); nothing else may be said of it.
    let only_losses = lossy && !ids.is_empty() && ids.iter().all(|id| *id == "retransmission-timeout");
    assert!(ids == ["healthy"] || only_losses, "twin at {rtt_ms} ms ({twin_ms:.2} ms): {ids:?}\n{healthy:#}");
    if ids != ["healthy"] {
        return;
    }
    let verdict = finding(&healthy, "healthy");
    let path = evidence(verdict, "path round trip");
    // min_rtt is the least of the samples: with jitter, down to the round trip less it.
    assert!((path - rtt_ms).abs() <= rtt_ms * 0.25 + 1.5, "path round trip {path} ms on a {rtt_ms} ms link");
    let server_time = evidence(verdict, "median first byte less the round trip");
    assert!(server_time < 5.0, "the server's own time is {server_time} ms");
    assert!(verdict["title"].as_str().unwrap().contains("network's round trip"), "{verdict:#}");
    assert_eq!(healthy["phases"][0]["path_rtt_ms"].as_f64().map(|p| p > rtt_ms * 0.75), Some(true));
    // The text says the round trip under the phases, beside the figures it is part of.
    let url = format!("http://{}:{}/", common::wan::SERVER_IP, twin.port);
    let text = link.nodelay(&["doctor", &url]).stdout();
    assert!(text.contains("path round trip") && text.contains("(client TCP_INFO min_rtt)"), "{text}");

    let stalled = doctor(&link, nagle.port);
    let ids = finding_ids(&stalled);
    // Beside the hold, a lossy path's retransmission timeouts: a lost SYN, lost responses.
    assert!(
        !ids.is_empty()
            && (lossy || ids.len() == 1)
            && ids[1..].iter().all(|id| id == "retransmission-timeout"),
        "Nagle server at {rtt_ms} ms ({nagle_ms:.2} ms): {ids:?}\n{stalled:#}"
    );
    assert!(
        ["server-nagle-delayed-ack", "server-nagle-round-trip"].contains(&ids[0].as_str()),
        "Nagle server at {rtt_ms} ms: {ids:?}\n{stalled:#}"
    );
    let hold = &stalled["findings"][0];
    assert_eq!(hold["proven"], true, "{hold:#}");
    // The fix says what it saves: at least the round trip a client that ACKs at once waits.
    let fix = hold["fix_summary"].as_str().unwrap();
    assert!(fix.contains("saves") && fix.contains("round trip"), "{fix}");
}

#[test]
fn a_2ms_path() {
    across(2.0);
}

#[test]
fn a_10ms_path() {
    across(10.0);
}

#[test]
fn a_40ms_path() {
    across(40.0);
}

#[test]
fn a_10ms_path_with_jitter_and_loss() {
    // 1 ms of jitter each way and 2 % of the packets lost in each direction: the medians
    // still tell the path from the server, and the hold from a slow body.
    across_with(10.0, &["--jitter", "1ms", "--loss", "2"]);
}

/// Ground truth for large responses: the median time in ms of a warm keep-alive request, of
/// one on a fresh connection less its handshake, and of one after `idle_s` of idle.
fn large_response_truth(link: &Link, port: u16, idle_s: f64) -> (f64, f64, f64) {
    let script = format!(
        "import http.client, socket, statistics, time\n\
         def get(c):\n\
         \x20   t = time.perf_counter(); c.request('GET', '/'); c.getresponse().read()\n\
         \x20   return (time.perf_counter() - t) * 1000\n\
         c = http.client.HTTPConnection('{ip}', {port})\n\
         warm = [get(c) for _ in range(12)][2:]\n\
         idle = []\n\
         for _ in range(3):\n\
         \x20   time.sleep({idle_s}); idle.append(get(c))\n\
         fresh = []\n\
         for _ in range(3):\n\
         \x20   t = time.perf_counter(); f = http.client.HTTPConnection('{ip}', {port}); f.connect()\n\
         \x20   handshake = (time.perf_counter() - t) * 1000; fresh.append(get(f) ); f.close()\n\
         print(statistics.median(warm), statistics.median(fresh), statistics.median(idle))\n",
        ip = common::wan::SERVER_IP
    );
    let out = link.client_python(&script);
    let figures: Vec<f64> = out.split_whitespace().map(|f| f.parse().unwrap()).collect();
    (figures[0], figures[1], figures[2])
}

/// The note of `id` in a doctor report; the test fails without it.
fn note<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    let notes = report["notes"].as_array().unwrap_or_else(|| panic!("no notes array in {report:#}"));
    notes.iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no note {id} in {report:#}"))
}

/// 200 KB at 10 ms: a warm window sends it in one flight, a fresh one in about five. The
/// doctor's client keeps its connection alive, as the user's does, so it pays none of that:
/// healthy (exit 0), with what a fresh connection would cost as a note under the verdict.
#[test]
fn a_fresh_connections_window_is_a_note_for_a_keep_alive_client() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    let server = link.python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", "200000"]);
    let (warm, fresh, _) = large_response_truth(&link, server.port, 0.0);
    assert!(
        fresh >= warm + 20.0,
        "ground truth: warm {warm:.1} ms, fresh {fresh:.1} ms (less its handshake)"
    );
    let url = format!("http://{}:{}/", common::wan::SERVER_IP, server.port);
    let run = link.nodelay(&["doctor", "--json", &url]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!((run.code(), finding_ids(&report)), (0, vec!["healthy".to_string()]), "{report:#}");
    let fresh_note = note(&report, "initial-window-limited");
    assert!(evidence(fresh_note, "extra round trips per response") >= 2.0, "{fresh_note:#}");
    assert_eq!(fresh_note["proof"][0]["kind"], "experiment", "{fresh_note:#}");
    let text = link.nodelay(&["doctor", &url]).stdout();
    assert!(squeeze(&text).contains("verdict: healthy note: A fresh connection would cost"), "{text}");
}

/// The same response from a server that closes after each one (HTTP/1.0): every response
/// pays the window's round trips, which is a finding, timed from first byte to last.
#[test]
fn a_server_that_closes_each_connection_pays_the_initial_window() {
    // 200 KB at 10 ms take about four more flights; 25 KB at 40 ms one.
    for (rtt, body_bytes, least_rounds) in [("10ms", "200000", 2.0), ("40ms", "25000", 1.0)] {
        pays_the_initial_window(rtt, body_bytes, least_rounds);
    }
}

fn pays_the_initial_window(rtt: &str, body_bytes: &str, least_rounds: f64) {
    let _alone = common::alone();
    let link = Link::up(rtt, &[]);
    let server = link
        .python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", body_bytes, "--http10"]);
    let report = doctor(&link, server.port);
    let limited = finding(&report, "initial-window-limited");
    assert!(evidence(limited, "extra round trips per response") >= least_rounds, "{rtt}: {limited:#}");
    let rtt = evidence(limited, "path round trip (client TCP_INFO min_rtt)");
    let body = evidence(limited, "median time from first byte to last");
    assert!(body >= 0.9 * least_rounds * rtt, "{limited:#}");
    assert!(report["notes"].as_array().is_some_and(Vec::is_empty), "{report:#}");
}

#[test]
fn an_idle_keep_alive_connection_restarts_slow_start_unless_the_server_says_not() {
    let _alone = common::alone();
    for restart in [true, false] {
        let link = Link::up("10ms", &[]);
        // BBR keeps its window across idle; Reno (allowed in a namespace) restarts slow start,
        // as CUBIC does, where net.ipv4.tcp_slow_start_after_idle asks for it.
        link.server_sysctl("net.ipv4.tcp_congestion_control", "reno");
        link.server_sysctl("net.ipv4.tcp_slow_start_after_idle", if restart { "1" } else { "0" });
        let server =
            link.python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", "200000"]);
        let (warm, _, after_idle) = large_response_truth(&link, server.port, 1.0);
        let report = doctor(&link, server.port);
        let ids = finding_ids(&report);
        if restart {
            assert!(
                after_idle >= warm + 15.0,
                "ground truth: warm {warm:.1} ms, after idle {after_idle:.1} ms"
            );
            // The doctor's client keeps its connection busy: a note, not a finding.
            assert!(!ids.contains(&"slow-start-after-idle".to_string()), "{ids:?}\n{report:#}");
            let restarted = note(&report, "slow-start-after-idle");
            assert_eq!(restarted["proof"][0]["kind"], "experiment", "{restarted:#}");
            assert!(restarted["title"].as_str().unwrap().contains("tcp_slow_start_after_idle=0"));
        } else {
            assert!(
                after_idle < warm + 5.0,
                "ground truth: warm {warm:.1} ms, after idle {after_idle:.1} ms"
            );
            let notes = report["notes"].as_array().expect("a notes array");
            assert!(notes.iter().all(|n| n["id"] != "slow-start-after-idle"), "{report:#}");
        }
    }
}

/// Ground truth for a split-writing client: the median ms of a POST whose head and body go
/// in two sends with Nagle on, and of the same POST in one send, each on a keep-alive socket.
fn split_request_truth(link: &Link, port: u16) -> (f64, f64) {
    let script = format!(
        "import socket, statistics, time\n\
         head = b'POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 11\\r\\n\\r\\n'; body = b'hello=world'\n\
         def run(split):\n\
         \x20   s = socket.create_connection(('{ip}', {port})); times = []\n\
         \x20   for i in range(12):\n\
         \x20       t = time.perf_counter()\n\
         \x20       if split: s.sendall(head); s.sendall(body)\n\
         \x20       else: s.sendall(head + body)\n\
         \x20       data = b''\n\
         \x20       while not data.endswith(b'Hello, world!'): data += s.recv(65536)\n\
         \x20       times.append((time.perf_counter() - t) * 1000)\n\
         \x20   s.close(); return statistics.median(times[2:])\n\
         print(run(True), run(False))\n",
        ip = common::wan::SERVER_IP
    );
    let out = link.client_python(&script);
    let figures: Vec<f64> = out.split_whitespace().map(|f| f.parse().unwrap()).collect();
    (figures[0], figures[1])
}

#[test]
fn a_split_writing_client_waits_one_round_trip_for_a_server_that_acks_at_once() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    let server = link.python_server("quickack_server.py", &[]);
    let (split, whole) = split_request_truth(&link, server.port);
    assert!(
        (split - whole - 10.0).abs() <= 4.0,
        "ground truth: split {split:.1} ms, one write {whole:.1} ms"
    );
    let run = link.nodelay(&[
        "doctor",
        "--json",
        "-b",
        "hello=world",
        &format!("http://{}:{}/", common::wan::SERVER_IP, server.port),
    ]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let held = finding(&report, "client-nagle-round-trip");
    assert_eq!(held["proven"], true, "{held:#}");
    assert!(held["fix_summary"].as_str().unwrap().contains("saves one round trip"), "{held:#}");
    assert!(!finding_ids(&report).contains(&"slow-first-byte".to_string()), "{report:#}");
}

#[test]
fn a_response_whose_first_part_fills_a_segment_waits_one_round_trip() {
    let _alone = common::alone();
    // 3000 bytes after the head: two full segments leave at once, the client ACKs them at
    // once (more than a segment unacknowledged), and the held tail waits exactly one round
    // trip, with or without the client's delayed ACKs.
    let link = Link::up("10ms", &[]);
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "3000"]);
    let twin = link.python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", "3000"]);
    let (nagle_ms, twin_ms) = (link.client_median_ms(nagle.port, 15), link.client_median_ms(twin.port, 15));
    assert!(
        (nagle_ms - twin_ms - 10.0).abs() <= 4.0,
        "ground truth: Nagle server {nagle_ms:.2} ms, twin {twin_ms:.2} ms"
    );
    let report = doctor(&link, nagle.port);
    assert_eq!(finding_ids(&report), ["server-nagle-round-trip"], "{report:#}");
    let held = finding(&report, "server-nagle-round-trip");
    assert_eq!(held["proven"], true, "{held:#}");
    let hold = evidence(held, "median pause within a response");
    assert!((hold - 10.0).abs() <= 3.5, "a hold of {hold} ms on a 10 ms path");
    assert!(held["fix_summary"].as_str().unwrap().contains("saves one round trip"), "{held:#}");
    assert_eq!(finding_ids(&doctor(&link, twin.port)), ["healthy"]);
}

#[test]
fn a_server_that_closes_every_connection_across_40ms_is_not_slow() {
    let _alone = common::alone();
    // Each request opens a connection: its first byte waits the handshake and the request,
    // two round trips, none of them the server's.
    let link = Link::up("40ms", &[]);
    let closing = link.python_server("python_http_server.py", &["--disable-nagle", "--http10"]);
    let report = doctor(&link, closing.port);
    assert_eq!(finding_ids(&report), ["connection-per-request"], "{report:#}");
}

/// Head, then a large body, from a server with Nagle on: the full segments leave at once,
/// and the body's sub-segment tail waits for the client's ACK of the small head, so every
/// response ends one round trip after its first byte. The pause before the tail is shorter
/// than a round trip (the full segments went meanwhile), and no stall; the ACK clock finds
/// it, with the tail's exact size. The TCP_NODELAY twin serving the same bytes is `healthy`
/// (exit 0), with what a fresh connection would cost as a note.
fn a_tail_held_for_the_heads_ack(rtt_ms: f64, body_sizes: &[u32]) {
    let _alone = common::alone();
    let link = Link::up(&format!("{rtt_ms}ms"), &[]);
    for &body_bytes in body_sizes {
        let size = body_bytes.to_string();
        let nagle = link.python_server("python_http_server.py", &["--body-bytes", &size]);
        let twin = link.python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", &size]);
        // The ground truth is the test's precondition: at 0.5 ms, beside the suite, the two
        // medians of 15 calls came out 1.84 and 1.88 ms once (a clean clone's CI run). Three
        // tries at most, as the two-write test at 0.5 ms has.
        eprintln!("ground truth, {body_bytes} B at {rtt_ms} ms: the Nagle server on {}", nagle.port);
        let (_, twin_ms) = link.slower_by(nagle.port, twin.port, 15, rtt_ms / 4.0);

        let url = format!("http://{}:{}/", common::wan::SERVER_IP, nagle.port);
        let run = link.nodelay(&["doctor", "--json", &url]);
        let report = run.json();
        validate_against_schema("doctor.schema.json", &report);
        assert_eq!(
            (run.code(), finding_ids(&report)),
            (3, vec!["server-nagle-round-trip".to_string()]),
            "{body_bytes} B at {rtt_ms} ms: {report:#}"
        );
        let held = finding(&report, "server-nagle-round-trip");
        assert_eq!(held["proven"], true, "{held:#}");
        assert_eq!(held["proof"][0]["kind"], "experiment", "{held:#}");
        // The tail is what is left of the body after its full segments.
        let mss = evidence(held, "segment size (client TCP_INFO rcv_mss)");
        let tail = evidence(held, "median size of that last part (under one segment)");
        assert_eq!(tail, f64::from(body_bytes) % mss, "{held:#}");
        let waited =
            evidence(held, "what the last part waited for: the ACK of the first segment, one round trip");
        assert!((waited - rtt_ms).abs() <= rtt_ms * 0.25 + 1.5, "{held:#}");
        let pause = evidence(held, "median pause before it (the round trip less the rest's transfer)");
        // The round trip less the rest's transfer: at 0.5 ms the transfer is nothing beside
        // the reader's wake-up, and the pause about the round trip.
        assert!(pause < waited + rtt_ms * 0.25 && pause >= waited / 4.0, "{held:#}");
        let fix = held["fix_summary"].as_str().unwrap();
        assert!(fix.contains("saves the pause before the tail"), "{fix}");
        // bench suspects it from its figures alone (a body of one flight, whose end keeps
        // the round trip's time), and not in the twin.
        let suggested = |url: &str| {
            let bench = link.nodelay(&["bench", "--json", "-q", "-c", "1", "-n", "40", url]).json();
            bench["suggestions"].as_array().unwrap().iter().map(|s| s["id"].to_string()).collect::<Vec<_>>()
        };
        if body_bytes <= 25_000 {
            assert_eq!(suggested(&url), ["\"server-nagle-round-trip\""], "{body_bytes} B at {rtt_ms} ms");
        }
        let twin_url = format!("http://{}:{}/", common::wan::SERVER_IP, twin.port);
        assert!(suggested(&twin_url).is_empty(), "twin, {body_bytes} B at {rtt_ms} ms");

        let twin_url = format!("http://{}:{}/", common::wan::SERVER_IP, twin.port);
        let run = link.nodelay(&["doctor", "--json", &twin_url]);
        let report = run.json();
        assert_eq!(
            (run.code(), finding_ids(&report)),
            (0, vec!["healthy".to_string()]),
            "twin, {body_bytes} B at {rtt_ms} ms ({twin_ms:.2} ms): {report:#}"
        );
        note(&report, "initial-window-limited");
    }
}

/// A LAN's round trip is a path too: the tail's wait is a round trip however short.
#[test]
fn a_tail_held_for_the_heads_ack_across_a_lans_half_millisecond() {
    a_tail_held_for_the_heads_ack(0.5, &[25_000]);
}

/// At 0.5 ms, a 2 KB body written after its head: one full segment leaves, the rest waits for
/// the ACK of the head, a round trip mid-response; the TCP_NODELAY twin is healthy.
#[test]
fn a_two_write_response_across_a_lans_half_millisecond_waits_one_round_trip() {
    let _alone = common::alone();
    let link = Link::up("0.5ms", &[]);
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "2000"]);
    let twin = link.python_server("python_http_server.py", &["--disable-nagle", "--body-bytes", "2000"]);
    // The ground truth is the test's precondition, not its claim: beside two busy loops, the
    // forwarder's jitter brought two medians of 15 calls within 0.25 ms (1.79 and 1.54 ms),
    // and of 41 calls once more (1.55 and 1.33). 41 calls each, three tries at most.
    link.slower_by(nagle.port, twin.port, 41, 0.25);
    for (port, expected) in [(nagle.port, (3, "server-nagle-round-trip")), (twin.port, (0, "healthy"))] {
        let url = format!("http://{}:{}/", common::wan::SERVER_IP, port);
        // A round trip of 0.5 ms is within the user-space forwarder's jitter on a busy
        // machine: one CI run's doctor saw the tail 0.2 ms after the rest and called it a
        // low-confidence slow-response-body. The Nagle server gets a second run when the first
        // is not the proven finding; the twin must be healthy at once.
        let doctor = || {
            let run = link.nodelay(&["doctor", "--json", &url]);
            let report = run.json();
            (run, report)
        };
        let proven = |report: &serde_json::Value| {
            finding_ids(report) == [expected.1] && finding(report, expected.1)["proven"] == true
        };
        let (mut run, mut report) = doctor();
        if expected.1 != "healthy" && !proven(&report) {
            (run, report) = doctor();
        }
        assert_eq!(
            (run.code(), finding_ids(&report)),
            (expected.0, vec![expected.1.to_string()]),
            "{report:#}"
        );
        if expected.1 == "server-nagle-round-trip" {
            let held = finding(&report, expected.1);
            assert_eq!(held["proven"], true, "{held:#}");
            let fix = held["fix_summary"].as_str().unwrap();
            assert!(fix.contains("saves one round trip"), "{fix}");
        }
    }
}

#[test]
fn a_tail_held_for_the_heads_ack_across_10ms() {
    a_tail_held_for_the_heads_ack(10.0, &[25_000, 100_000]);
}

#[test]
fn a_tail_held_for_the_heads_ack_across_40ms() {
    a_tail_held_for_the_heads_ack(40.0, &[25_000, 100_000]);
}

/// uWSGI on its HTTP/1.1 socket in the server's namespace, serving `uwsgi_large_app.py` (a
/// 25 KB body handed over in two parts), killed with its workers when dropped.
struct Uwsgi {
    child: std::process::Child,
    port: u16,
}

impl Drop for Uwsgi {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created for uWSGI and its worker.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Starts `uwsgi --http11-socket SERVER_IP:0` with `extra` options, or `None` when uWSGI is
/// not installed (scripts/setup.sh installs it).
fn uwsgi_on(link: &Link, extra: &[&str]) -> Option<Uwsgi> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    if !std::path::Path::new("/usr/lib/uwsgi/plugins/python3_plugin.so").exists() {
        return None;
    }
    let socket = format!("{}:0", common::wan::SERVER_IP);
    let mut child = link
        .server_command("uwsgi")
        .args(["--plugins", "http,python3", "--http11-socket", &socket, "--disable-logging"])
        .args(["--env", "BODY_BYTES=25000", "--wsgi-file"])
        .arg(common::peer_script("uwsgi_large_app.py"))
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start uwsgi");
    let mut log = std::io::BufReader::new(child.stderr.take().unwrap());
    let (mut port, mut line) = (None, String::new());
    while log.read_line(&mut line).expect("uwsgi's log") > 0 {
        // "uwsgi socket 0 bound to TCP address 10.211.0.2:44993 (port auto-assigned) fd 3"
        if let Some(address) = line.split("bound to TCP address ").nth(1) {
            port = address.split_whitespace().next().and_then(|a| a.rsplit(':').next()?.parse::<u16>().ok());
        }
        if line.starts_with("spawned uWSGI worker") {
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    let port = port.expect("uWSGI's 'bound to TCP address' line");
    Some(Uwsgi { child, port })
}

/// uWSGI writes the head with a response's first part, then the rest: with Nagle on, the
/// rest's sub-segment tail waits for the ACK of the first write. Found across 10 ms, and
/// `healthy` once uWSGI runs with `--tcp-nodelay`, as the independent client agrees.
#[test]
fn uwsgi_holding_the_tail_across_10ms_is_found_and_healthy_with_tcp_nodelay() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    let (Some(held), Some(fixed)) = (uwsgi_on(&link, &[]), uwsgi_on(&link, &["--tcp-nodelay"])) else {
        eprintln!(
            "skipped: uWSGI is not installed (scripts/setup.sh installs uwsgi-core uwsgi-plugin-python3)"
        );
        return;
    };
    let (held_ms, fixed_ms) = (link.client_median_ms(held.port, 15), link.client_median_ms(fixed.port, 15));
    assert!(
        held_ms - fixed_ms >= 2.5,
        "ground truth: uWSGI {held_ms:.2} ms, with --tcp-nodelay {fixed_ms:.2} ms"
    );
    let report = doctor(&link, held.port);
    assert_eq!(finding_ids(&report), ["server-nagle-round-trip"], "{report:#}");
    let finding = finding(&report, "server-nagle-round-trip");
    let mss = evidence(finding, "segment size (client TCP_INFO rcv_mss)");
    // The second part: 24,000 bytes, so its tail is what its full segments leave.
    assert_eq!(evidence(finding, "median size of that last part (under one segment)"), 24_000.0 % mss);
    assert_eq!(finding_ids(&doctor(&link, fixed.port)), ["healthy"]);
}

/// nginx with `tcp_nodelay off` in front of a Go backend, both in the server's namespace: a
/// 100 KB response is more than nginx's proxy buffers hold, so nginx writes it in parts, and
/// with Nagle on the last part's sub-segment tail waits for the ACK of an earlier small
/// write. Found across 10 ms; with `tcp_nodelay on` (nginx's default) `healthy`, as the
/// independent client agrees.
#[test]
fn nginx_with_tcp_nodelay_off_holding_the_tail_across_10ms_is_found() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    let backend = common::start_command(
        link.server_command(&common::compiled("go_http_server.go")).args(["-body-bytes", "100000"]),
    );
    let namespace = format!("{}-s", link.name);
    let proxy = |nodelay: &str| {
        let snippet = common::nginx::proxy_to(backend.port, "1.1", true)
            .replace("server {\n", &format!("server {{\n    tcp_nodelay {nodelay};\n"));
        common::nginx::Nginx::start_in_namespace(&snippet, &namespace, common::wan::SERVER_IP)
    };
    let (held, fixed) = (proxy("off"), proxy("on"));
    let (held_ms, fixed_ms) = (link.client_median_ms(held.port, 15), link.client_median_ms(fixed.port, 15));
    assert!(held_ms - fixed_ms >= 2.5, "ground truth: tcp_nodelay off {held_ms:.2} ms, on {fixed_ms:.2} ms");
    let report = doctor(&link, held.port);
    assert_eq!(finding_ids(&report), ["server-nagle-round-trip"], "{report:#}");
    assert_eq!(finding(&report, "server-nagle-round-trip")["proven"], true, "{report:#}");
    assert_eq!(finding_ids(&doctor(&link, fixed.port)), ["healthy"]);
}

/// nginx in front of a Python backend that holds its body with Nagle (head and body in two
/// sends, 13 bytes): nginx's delayed ACK on the hop makes every first byte wait the 40 ms
/// timer. Across a path the doctor cannot see that hop, says so under the verdict, and says
/// what the client tells: a steady wait of the timer's length beyond the round trip, a hop's.
#[test]
fn a_proxy_across_a_path_says_its_hops_are_unseen_and_names_a_hops_stall() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    let namespace = format!("{}-s", link.name);
    let front = |backend: u16| {
        let snippet =
            common::nginx::proxy_to(backend, "1.1", true).replace("127.0.0.1", common::wan::SERVER_IP);
        common::nginx::Nginx::start_in_namespace(&snippet, &namespace, common::wan::SERVER_IP)
    };
    let held = link.python_server("python_http_server.py", &[]);
    let twin = link.python_server("python_http_server.py", &["--disable-nagle"]);
    let (stalled_front, quick_front) = (front(held.port), front(twin.port));
    let (stalled_ms, quick_ms) =
        (link.client_median_ms(stalled_front.port, 15), link.client_median_ms(quick_front.port, 15));
    assert!(
        stalled_ms - quick_ms >= 30.0,
        "ground truth: through nginx to the Nagle backend {stalled_ms:.2} ms, to its twin {quick_ms:.2} ms"
    );
    let report = doctor(&link, stalled_front.port);
    let unseen = note(&report, "proxy-hop-stall");
    let title = unseen["title"].as_str().unwrap();
    assert!(
        title.contains("cannot follow the hops") && title.contains("a stall behind the front, on a hop"),
        "{title}"
    );
    let url = format!("http://{}:{}/", common::wan::SERVER_IP, stalled_front.port);
    let text = link.nodelay(&["doctor", &url]).stdout();
    assert!(squeeze(&text).contains("note: The server answers as nginx"), "{text}");
    // Through the quick backend nothing stalls: the note still says the hops are not in view.
    let quick = doctor(&link, quick_front.port);
    assert_eq!(finding_ids(&quick), ["healthy"], "{quick:#}");
    let title = note(&quick, "proxy-hop-stall")["title"].as_str().unwrap().to_string();
    assert!(title.contains("would be a stall behind the front"), "{title}");
}

/// Across a path the server may still run on this machine: in a container, or here at the
/// server's end of the path, in another network namespace. `--try-fix` finds its listener
/// there (its address is local in that namespace only), sets TCP_NODELAY, and the round trip
/// before the tail vanishes: the stronger proof of the hold. Before, it said "nothing
/// listens on TCP port N on this machine". Set back afterwards: an independent client sees
/// the round trip again.
#[test]
fn try_fix_reaches_a_server_in_another_namespace_and_the_round_trip_vanishes() {
    let _alone = common::alone();
    let rtt_ms = 10.0;
    let link = Link::up("10ms", &[]);
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "25000"]);
    let before_ms = link.client_median_ms(nagle.port, 15);
    let url = format!("http://{}:{}/", common::wan::SERVER_IP, nagle.port);
    let run = link.nodelay(&["doctor", "--json", "--try-fix", &url]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!(run.code(), 3, "{report:#}");
    let held = finding(&report, "server-nagle-round-trip");
    let proofs = held["proof"].as_array().unwrap();
    let applied = proofs.iter().find(|p| p["kind"] == "fix-applied").unwrap_or_else(|| panic!("{report:#}"));
    let experiment = applied["experiment"].as_str().unwrap();
    assert!(
        experiment.starts_with("TCP_NODELAY set on PID ") && experiment.ends_with("(python3)"),
        "{applied:#}"
    );
    let saved_ms =
        applied["baseline_p50_ms"].as_f64().unwrap() - applied["experiment_p50_ms"].as_f64().unwrap();
    assert!(saved_ms >= rtt_ms / 4.0, "{applied:#}");
    // At most a quarter of the responses still end a round trip after their first byte, of
    // nearly all before. (Not `removed`, which also wants the fixed body's spread under half
    // the round trip: on a loaded machine the user-space link spread even a 10 KB body to
    // 6.8 ms of 12.7. A tenth was the bound once: a clean clone's CI run had 4 of 39, with the
    // fix saving 6.9 ms of the median.)
    let result = applied["result"].as_str().unwrap();
    let counts: Vec<f64> = result
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(" responses").next())
        .map(|n_of_m| n_of_m.split(" of ").filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_default();
    assert!(counts.len() == 2 && counts[0] <= counts[1] / 4.0, "{applied:#}");
    let try_fix = &report["try_fix"];
    assert_eq!(
        (try_fix["applied"].as_bool(), try_fix["kept"].as_bool()),
        (Some(true), Some(false)),
        "{try_fix:#}"
    );
    assert_eq!(try_fix["sockets_changed"], try_fix["sockets_restored"], "{try_fix:#}");
    let after_ms = link.client_median_ms(nagle.port, 15);
    assert!(
        (after_ms - before_ms).abs() <= rtt_ms / 4.0,
        "set back: {before_ms:.2} ms before, {after_ms:.2} ms after"
    );
}
