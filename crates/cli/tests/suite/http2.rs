//! `bench` over HTTP/2 against real servers (Go net/http, grpc-go, Node http2, hypercorn,
//! nghttpd, nginx): h2c by prior knowledge, h2 by ALPN over TLS, streams per connection and
//! the server's stream limit, flow-control windows, gRPC calls and their statuses, and the
//! mistakes refused in words. Every run is bounded by -n or -d.

use crate::common;

use crate::common::capture::Capture;
use crate::common::h2::{
    go_h2c, grpc_call, grpc_server, hypercorn, nghttpd, nginx_body_server, nginx_h2c, node_h2,
};
use crate::common::tls::certs;
use crate::common::{evidence, fails_with, finding, finding_ids, nodelay, squeeze, validate_against_schema};
use serde_json::Value;

/// `bench --json` with `args`, which must succeed: the report, checked against its schema.
fn bench(args: &[&str]) -> Value {
    let run = nodelay(&[&["bench", "--json", "-q", "--no-server-view"], args].concat());
    assert_eq!(run.code(), 0, "{}\n{}", run.stderr(), run.stdout());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    report
}

fn errors(report: &Value) -> u64 {
    report["errors"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum()
}

/// Every request answered 200 over HTTP/2 with prior knowledge, nothing failed.
fn assert_all_h2c(report: &Value, requests: u64) {
    assert_eq!(report["requests_completed"], requests, "{report:#}");
    assert_eq!(errors(report), 0, "{report:#}");
    assert_eq!(report["status_counts"]["200"], requests);
    assert_eq!(report["settings"]["http_version"], "2");
    assert_eq!(report["settings"]["http2"]["negotiated_by"], "prior-knowledge");
    assert_eq!(report["http2"]["streams_completed"], requests);
}

#[test]
fn every_h2c_peer_answers_every_stream_of_a_multiplexed_run() {
    let go = go_h2c(&[]);
    let node = node_h2(&[]);
    let python = hypercorn(&[]);
    let nghttp2 = nghttpd(&[]);
    let nginx = nginx_h2c(&nginx_body_server(13, None));
    for url in [go.url("/"), node.url("/"), python.url("/"), nghttp2.url("/"), nginx.url("/")] {
        let report = bench(&["--h2", "-c", "2", "--streams", "4", "-n", "200", &url]);
        assert_all_h2c(&report, 200);
        assert_eq!(report["settings"]["http2"]["streams_per_connection"], 4);
        // Two connections carried the 200 streams, up to 4 at once each.
        assert_eq!(report["connections_opened"], 2, "{url}");
        let open = report["http2"]["max_open_streams"].as_u64().unwrap();
        assert!((1..=4).contains(&open), "{url}: {open}");
    }
}

#[test]
fn a_server_that_ends_its_connections_with_goaway_is_followed_onto_new_ones_without_errors() {
    // nginx ends an HTTP/2 connection after keepalive_requests streams: GOAWAY NO_ERROR with
    // the last stream it will answer. Requests queued behind it go on the next connection.
    let nginx = nginx_h2c(&format!("    keepalive_requests 10;\n{}", nginx_body_server(13, None)));
    let report = bench(&["--h2", "-c", "2", "--streams", "4", "-n", "200", &nginx.url("/")]);
    assert_all_h2c(&report, 200);
    let opened = report["connections_opened"].as_u64().unwrap();
    assert!((20..=22).contains(&opened), "10 streams a connection: {opened} connections\n{report:#}");
    assert!(report["http2"]["goaways"].as_u64().unwrap() >= 19, "{report:#}");
}

#[test]
fn streams_beyond_the_servers_limit_queue_and_the_report_names_the_limit() {
    // Each answer takes 20 ms; 6 streams asked on one connection, 2 allowed at once.
    let limited = go_h2c(&["--max-streams", "2", "--delay-ms", "20"]);
    let report = bench(&["--h2", "-c", "1", "--streams", "6", "-n", "36", &limited.url("/")]);
    assert_all_h2c(&report, 36);
    assert_eq!(report["http2"]["peer_max_concurrent_streams"], 2, "{report:#}");
    assert_eq!(report["http2"]["max_open_streams"], 2);
    // Two of six run at once: a stream waits for two rounds of 20 ms before its HEADERS leave.
    let queued_p50 = report["http2"]["queued_ms"]["p50"].as_f64().unwrap();
    assert!(queued_p50 >= 15.0, "queued p50 {queued_p50} ms");
    // Suspected without an experiment, with the command that proves it.
    let suggestion =
        report["suggestions"].as_array().unwrap().iter().find(|s| s["id"] == "h2-stream-limit-queueing");
    let suggestion = suggestion.unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(suggestion["prove"], format!("nodelay doctor --h2 --streams 6 {}", limited.url("/")));
    // Control: the same server without the limit sends every stream at once.
    let open = go_h2c(&["--max-streams", "100", "--delay-ms", "20"]);
    let control = bench(&["--h2", "-c", "1", "--streams", "6", "-n", "36", &open.url("/")]);
    assert_eq!(control["http2"]["peer_max_concurrent_streams"], 100);
    assert_eq!(control["http2"]["max_open_streams"], 6);
    let control_p50 = control["http2"]["queued_ms"]["p50"].as_f64().unwrap();
    assert!(control_p50 < 5.0, "unlimited: queued p50 {control_p50} ms");
}

#[test]
fn requests_queued_behind_the_limit_at_the_end_are_not_called_running() {
    // One stream allowed, 8 asked, each answer 300 ms: when the time is up one request is on
    // the wire and seven never left the client.
    let limited = go_h2c(&["--max-streams", "1", "--delay-ms", "300"]);
    let args = ["--h2", "-c", "1", "--streams", "8", "-d", "0.5s", &limited.url("/")];
    let report = bench(&args);
    assert_eq!(report["requests_unfinished"], 8, "{report:#}");
    assert_eq!(report["http2"]["streams_unsent_at_end"], 7, "{:#}", report["http2"]);
    let text = squeeze(&nodelay(&[&["bench", "--no-server-view"], &args[..]].concat()).stdout());
    assert!(
        text.contains(
            "in flight 1 request was still running and 7 queued behind the server's stream limit, never sent, \
             when the time was up (not counted)"
        ),
        "{text}"
    );
}

#[test]
fn queued_runs_from_the_previous_responses_end_as_tcpdump_sees_it() {
    // One stream at a time: each next HEADERS could leave once the previous response's last
    // frame arrived, so its queue is our own turnaround. tcpdump, on the wire, is the witness:
    // from the server's segment that ended stream N to ours that opened N + 2. Measured here
    // before the fix: nodelay 20-30 µs against tcpdump's 106-174 µs (it started the clock at
    // its own wake-up, after the arrival); after it, within 12 µs of each other.
    // Not alone: a busy machine moves both witnesses of the same gaps alike.
    let server = go_h2c(&["--nagle"]);
    let capture = Capture::start("h2-queued", server.port, "lo", true);
    let report = bench(&["--h2", "-c", "1", "-n", "30", &server.url("/")]);
    assert_all_h2c(&report, 30);
    // Per stream at least our HEADERS, the server's HEADERS and its DATA.
    let path = capture.finish(90);
    let decode = format!("tcp.port=={},http2", server.port);
    let frames = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-d", &decode, "-T", "fields"])
        .args(["-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "http2.type", "-e", "http2.flags"])
        .output()
        .expect("tshark (scripts/setup.sh installs it)");
    std::fs::remove_file(&path).ok();
    let mut turnarounds_us = wire_turnarounds_us(&String::from_utf8_lossy(&frames.stdout), server.port);
    assert_eq!(turnarounds_us.len(), 29, "{}", String::from_utf8_lossy(&frames.stdout));
    turnarounds_us.sort_by(f64::total_cmp);
    let wire_p50_us = turnarounds_us[turnarounds_us.len() / 2];
    let queued_p50_us = report["http2"]["queued_ms"]["p50"].as_f64().unwrap() * 1000.0;
    // The two time the same 29 gaps a few µs apart (our write() begins just before the
    // segment reaches the wire); a busy machine moves both alike.
    assert!(
        (queued_p50_us - wire_p50_us).abs() <= 30.0 + 0.2 * wire_p50_us,
        "queued p50 {queued_p50_us:.1} µs, tcpdump's p50 {wire_p50_us:.1} µs: {turnarounds_us:?}"
    );
}

/// From tshark's fields (time, source port, frame types, frame flags), each gap from a server
/// segment carrying END_STREAM to the client's next segment carrying HEADERS, in µs.
fn wire_turnarounds_us(fields: &str, server_port: u16) -> Vec<f64> {
    let mut ended_at: Option<f64> = None;
    let mut gaps = Vec::new();
    for line in fields.lines() {
        let [time, source, types, flags] = line.split('\t').collect::<Vec<_>>()[..] else { continue };
        let (Ok(time), Ok(source)) = (time.parse::<f64>(), source.parse::<u16>()) else { continue };
        let frames = types.split(',').zip(flags.split(','));
        if source == server_port {
            let ends = |(kind, flag): (&str, &str)| {
                let flag = u8::from_str_radix(flag.trim_start_matches("0x"), 16).unwrap_or(0);
                matches!(kind, "0" | "1") && flag & 0x1 != 0
            };
            if frames.clone().any(ends) {
                ended_at = Some(time);
            }
        } else if types.split(',').any(|kind| kind == "1")
            && let Some(ended) = ended_at.take()
        {
            gaps.push((time - ended) * 1e6);
        }
    }
    gaps
}

#[test]
fn a_grpc_reply_larger_than_the_window_waits_on_it_and_a_larger_window_removes_the_wait() {
    // grpc-go answers 300 kB, more than the 65,535 bytes a default window lets it send.
    let server = grpc_server(&["--reply-bytes", "300000"]);
    // Ground truth from grpc-go's own client: the server answers as configured.
    assert!(grpc_call(server.port, &["--calls", "2"]).contains("reply 300000 bytes"));
    let call = ["--grpc", "/helloworld.Greeter/SayHello", "--grpc-message", "\\x0a\\x05world", "-c", "1"];
    let url = format!("http://127.0.0.1:{}", server.port);
    // The protocol's window, as a client that changes nothing (the doctor's) advertises it.
    let report = bench(&[&call[..], &["--h2-window", "65535", "-n", "50", &url]].concat());
    assert_eq!(report["requests_completed"], 50, "{report:#}");
    assert_eq!(report["http2"]["grpc_status_counts"]["0"], 50);
    assert_eq!(report["settings"]["http2"]["grpc_method"], "/helloworld.Greeter/SayHello");
    assert_eq!(report["settings"]["http2"]["stream_window_bytes"], 65535);
    // Every reply stopped at least once on a used-up window, the stream's or the connection's.
    assert_eq!(report["http2"]["window_blocked_streams"], 50, "{report:#}");
    assert!(report["http2"]["connection_window_stalls"].as_u64().unwrap() >= 50);
    let wider = bench(&[&call[..], &["--h2-window", "16777216", "-n", "50", &url]].concat());
    assert_eq!(wider["http2"]["grpc_status_counts"]["0"], 50);
    assert_eq!(wider["http2"]["window_blocked_streams"], 0, "{wider:#}");
    assert_eq!(wider["http2"]["connection_window_stalls"], 0);
    // bench's own default is h2load's, so the two agree out of the box: no wait either.
    let default = bench(&[&call[..], &["-n", "50", &url]].concat());
    let h2load = std::process::Command::new("h2load").arg("--help").output().expect("h2load");
    let h2load_bits = h2load_default_window_bits(&String::from_utf8_lossy(&h2load.stdout));
    assert_eq!(h2load_bits, [30, 30], "h2load's -w and -W defaults");
    for (field, bits) in ["stream_window_bytes", "connection_window_bytes"].iter().zip(h2load_bits) {
        assert_eq!(default["settings"]["http2"][field], (1u64 << bits) - 1, "{field}");
    }
    assert_eq!(default["http2"]["window_blocked_streams"], 0, "{default:#}");
}

/// h2load's default `--window-bits` and `--connection-window-bits`, from its help.
fn h2load_default_window_bits(help: &str) -> [u32; 2] {
    let default_after = |option: &str| {
        let from = help.find(option).unwrap_or_else(|| panic!("{option} in h2load's help"));
        let default = help[from..].find("Default:").expect("a default") + from + "Default:".len();
        help[default..].split_whitespace().next().unwrap().parse().expect("bits")
    };
    [default_after("--window-bits"), default_after("--connection-window-bits")]
}

#[test]
fn a_request_body_larger_than_the_servers_window_waits_for_its_window_update() {
    // A 300 kB name (helloworld's field 1): more than grpc-go's fixed 64 KiB window lets us send.
    let name_bytes = 300_000usize;
    let mut message = vec![0x0a];
    let mut length = name_bytes;
    while length >= 0x80 {
        message.push((length & 0x7f) as u8 | 0x80);
        length >>= 7;
    }
    message.push(length as u8);
    message.extend(std::iter::repeat_n(b'x', name_bytes));
    let file = std::env::temp_dir().join(format!("nodelay-h2-upload-{}.pb", std::process::id()));
    std::fs::write(&file, &message).unwrap();
    let body = format!("@{}", file.display());
    for (window, waits) in [(65_536, true), (16_777_216, false)] {
        let server = grpc_server(&["--window", &window.to_string(), "--reply-bytes", "10"]);
        let url = format!("http://127.0.0.1:{}", server.port);
        let call = ["--grpc", "/helloworld.Greeter/SayHello", "--grpc-message", &body, "-c", "1", "-n", "20"];
        let report = bench(&[&call[..], &[&url]].concat());
        let h2 = &report["http2"];
        assert_eq!(h2["grpc_status_counts"]["0"], 20, "{report:#}");
        // What the server said it allows, as its SETTINGS came.
        assert_eq!(h2["peer_initial_window_bytes"], window, "{h2:#}");
        if waits {
            // 300 kB through 64 KiB of credit: four stops or more for each request.
            assert!(h2["request_window_stalls"].as_u64().unwrap() >= 80, "{h2:#}");
            assert_eq!(h2["request_window_blocked_streams"], 20, "{h2:#}");
            assert!(h2["request_window_blocked_total_ms"].as_f64().unwrap() > 0.0);
        } else {
            // Only the first body may stop once, when it leaves before the server's SETTINGS
            // and its connection WINDOW_UPDATE: until then the protocol's 65,535 bytes hold.
            assert!(h2["request_window_stalls"].as_u64().unwrap() <= 1, "{h2:#}");
            assert!(h2["request_window_blocked_streams"].as_u64().unwrap() <= 1, "{h2:#}");
        }
    }
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_failed_grpc_call_is_an_error_response_beside_its_http_200() {
    // NOT_FOUND (5) on every call: HTTP 200, the failure is in the trailers.
    let server = grpc_server(&["--status", "5"]);
    let url = format!("http://127.0.0.1:{}", server.port);
    // Ground truth from grpc-go's own client: the call fails with NotFound.
    let truth = std::process::Command::new("timeout")
        .args(["20", &common::h2::grpc_server_binary(), "--client", &format!("127.0.0.1:{}", server.port)])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&truth.stderr);
    assert!(!truth.status.success() && said.contains("code = NotFound"), "{said}");
    let args =
        ["bench", "--json", "-q", "--no-server-view", "--grpc", "/helloworld.Greeter/SayHello", "-c", "1"];
    let run = nodelay(&[&args[..], &["-n", "20", &url]].concat());
    // As every response a 404 would: nothing succeeded (exit 1), said with the status.
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let said = run.stderr();
    assert!(said.contains("no request succeeded: every call failed (grpc-status 5 ×20)"), "{said}");
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["status_counts"]["200"], 20, "{report:#}");
    assert_eq!(report["http2"]["grpc_status_counts"]["5"], 20);
    assert_eq!(report["non_success_responses"], 20, "{report:#}");
    let suggestion = &report["suggestions"][0];
    assert_eq!(suggestion["id"], "error-responses", "{report:#}");
    assert!(suggestion["why"].as_str().unwrap().contains("grpc-status 5 ×20"), "{suggestion:#}");
    let text = nodelay(&[
        "bench",
        "-q",
        "--no-server-view",
        "--grpc",
        "/helloworld.Greeter/SayHello",
        "-n",
        "5",
        &url,
    ]);
    let out = text.stdout();
    assert!(
        out.contains("grpc-status  5 ×5") && squeeze(&out).contains("failed calls (non-OK grpc-status)"),
        "{out}"
    );
}

/// A method the server does not have: grpc-go answers UNIMPLEMENTED (12) on every call. bench
/// names the errors and the command that proves them; run as shown, the doctor names the
/// status, ranks it first and exits 3, with the counts in its JSON.
#[test]
fn calls_to_a_missing_method_fail_the_gate_and_the_hint_runs_as_shown() {
    let server = grpc_server(&[]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let method = "/helloworld.Greeter/NoSuchMethod";
    let run = nodelay(&[
        "bench",
        "--json",
        "-q",
        "--no-server-view",
        "--grpc",
        method,
        "-c",
        "1",
        "-n",
        "20",
        &url,
    ]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let report = run.json();
    assert_eq!(report["http2"]["grpc_status_counts"]["12"], 20, "{report:#}");
    let prove = report["suggestions"][0]["prove"].as_str().unwrap().to_string();
    assert_eq!(prove, format!("nodelay doctor --grpc {method} {url}/"));
    let words: Vec<&str> = prove.split_whitespace().skip(1).collect();
    let doctor = nodelay(&[&words[..], &["--json"]].concat());
    assert_eq!(doctor.code(), 3, "{}", doctor.stderr());
    let diagnosis = doctor.json();
    validate_against_schema("doctor.schema.json", &diagnosis);
    assert_eq!(finding_ids(&diagnosis)[0], "error-responses", "{diagnosis:#}");
    let errors = finding(&diagnosis, "error-responses");
    assert!(errors["title"].as_str().unwrap().contains("grpc-status 12"), "{errors:#}");
    assert!(evidence(errors, "grpc-status 12 (UNIMPLEMENTED)") > 0.0, "{errors:#}");
    let baseline = &diagnosis["phases"][0];
    assert_eq!(baseline["grpc_status_counts"]["12"], baseline["responses"], "{baseline:#}");
    assert_ne!(diagnosis["verdict"], "healthy");
    // "See one": the same call by curl, run in a shell as shown, shows the server's words.
    let fix = errors["fix_summary"].as_str().unwrap();
    let (_, shown) = fix.split_once("See one: `").unwrap_or_else(|| panic!("{fix}"));
    let command = shown.trim_end_matches('`');
    assert!(command.contains(&format!("{url}{method}")), "{command}");
    // Up to five tries: in loaded full-suite runs curl once printed nothing, and once ended
    // three times with exit 92 (an HTTP/2 stream error); the hint is what is under test, not
    // that one call. `-S` (after the URL, where curl still reads options) says why in the
    // panic if every try fails.
    let mut tries = Vec::new();
    for _ in 0..5 {
        let curl = std::process::Command::new("sh").args(["-c", &format!("{command} -S")]).output().unwrap();
        let said = String::from_utf8_lossy(&curl.stdout).to_string();
        if said.contains("grpc-status: 12") && said.contains("unknown method NoSuchMethod") {
            return;
        }
        tries.push(format!("exit {:?}: {said}{}", curl.status.code(), String::from_utf8_lossy(&curl.stderr)));
    }
    panic!("{command}\n{tries:#?}");
}

#[test]
fn protobuf_text_without_its_proto_is_refused_with_a_hint() {
    let run = nodelay(&[
        "bench",
        "--grpc",
        "/helloworld.Greeter/SayHello",
        "--grpc-message",
        "name: \"x\"",
        "-n",
        "1",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let error = run.stderr();
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("looks like protobuf text") && error.contains("--grpc-proto"), "{error}");
}

#[test]
fn https_speaks_http2_when_the_server_chooses_it_by_alpn_and_http11_when_asked() {
    let certs = certs();
    let go = go_h2c(&["--cert", &certs.cert, "--key", &certs.key]);
    let url = format!("https://localhost:{}/", go.port);
    let report = bench(&["--cacert", &certs.ca, "-c", "2", "--streams", "3", "-n", "60", &url]);
    assert_eq!(report["requests_completed"], 60, "{report:#}");
    assert_eq!(report["settings"]["http_version"], "2");
    assert_eq!(report["settings"]["http2"]["negotiated_by"], "alpn");
    assert_eq!(report["http2"]["streams_completed"], 60);
    let http11 = bench(&["--cacert", &certs.ca, "--http1.1", "-c", "2", "-n", "60", &url]);
    assert_eq!(http11["requests_completed"], 60, "{http11:#}");
    assert_eq!(http11["settings"]["http_version"], "1.1");
    assert_eq!(http11["http2"], Value::Null);
    assert_eq!(http11["tls"]["alpn"], "http/1.1", "{:#}", http11["tls"]);
    assert_eq!(report["tls"]["alpn"], "h2", "{:#}", report["tls"]);
}

#[test]
fn a_tls_server_without_http2_is_spoken_to_in_http11_unless_h2_is_required() {
    let certs = certs();
    let python = common::python_peer("python_https_server.py", &["--cert", &certs.cert, "--key", &certs.key]);
    let url = format!("https://localhost:{}/", python.port);
    let report = bench(&["--cacert", &certs.ca, "-c", "1", "-n", "10", &url]);
    assert_eq!(report["settings"]["http_version"], "1.1", "{report:#}");
    assert_eq!(report["requests_completed"], 10);
    // The server's choice, not a bad argument: nothing measured, exit 1.
    fails_with(
        &["bench", "--h2", "--cacert", &certs.ca, "-n", "10", &url],
        1,
        &["the server did not choose HTTP/2 by ALPN"],
    );
    fails_with(
        &["bench", "--streams", "4", "--cacert", &certs.ca, "-n", "10", &url],
        1,
        &["--streams is for HTTP/2, and the server chose HTTP/1.1 by ALPN"],
    );
}

#[test]
fn http2_options_are_validated_where_they_are_parsed() {
    let url = "http://127.0.0.1:9/";
    fails_with(&["bench", "--streams", "4", "-n", "1", url], 2, &["--streams is for HTTP/2: add --h2"]);
    fails_with(&["bench", "--h2", "--streams", "0", "-n", "1", url], 2, &["--streams"]);
    fails_with(
        &["bench", "--h2", "--h2-window", "1000", "-n", "1", url],
        2,
        &["a window is 65535 to 2147483647 bytes"],
    );
    fails_with(
        &["bench", "--grpc", "Greeter/SayHello", "-n", "1", url],
        2,
        &["a gRPC method is /package.Service/Method"],
    );
    fails_with(&["bench", "--grpc-message", "x", "-n", "1", url], 2, &["--grpc"]);
    fails_with(&["bench", "--h2", "--no-keepalive", "-n", "1", url], 2, &["--no-keepalive is HTTP/1.1's"]);
    fails_with(&["bench", "--http1.1", "-n", "1", url], 2, &["--http1.1 is for https:// URLs"]);
    fails_with(
        &["bench", "--h2", "-n", "1", "--send", "x", "--frame", "line", "tcp://127.0.0.1:9"],
        2,
        &["are for http:// and https:// URLs"],
    );
    fails_with(
        &["bench", "--grpc", "/a.B/C", "-n", "1", "http://127.0.0.1:9/path"],
        2,
        &["--grpc names the path (/a.B/C): give the URL without one, not /path"],
    );
    fails_with(&["doctor", "--streams", "2", url], 2, &["--streams is for HTTP/2: add --h2"]);
}

/// `doctor --json` with `args`: the report (checked against its schema), its finding ids in
/// order, and the exit status.
fn doctor(args: &[&str]) -> (Value, Vec<String>, i32) {
    let run = nodelay(&[&["doctor", "--json"], args].concat());
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    (report.clone(), common::finding_ids(&report), run.code())
}

#[test]
fn the_doctor_proves_a_grpc_reply_waits_on_the_window_and_a_client_with_a_larger_one_is_healthy() {
    let server = grpc_server(&["--reply-bytes", "300000"]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let call = ["--grpc", "/helloworld.Greeter/SayHello", "--grpc-message", "\\x0a\\x05world"];
    let (report, ids, code) = doctor(&[&call[..], &[&url]].concat());
    assert_eq!(ids, ["h2-flow-control-window"], "{report:#}");
    assert_eq!(code, 3);
    let finding = common::finding(&report, "h2-flow-control-window");
    assert_eq!(finding["proven"], true);
    assert_eq!(finding["proof"][0]["removed"], true);
    assert!(finding["fix"].as_array().unwrap().iter().any(|f| f["stack"] == "Go grpc"));
    // Whose window it is, and which clients pay it: not the service's fault.
    let title = finding["title"].as_str().unwrap();
    for words in
        ["The client's own HTTP/2 window", "protocol's 64 KiB default", "h2load, Go net/http and browsers"]
    {
        assert!(title.contains(words), "{words}: {title}");
    }
    assert!(
        finding["fix_summary"]
            .as_str()
            .unwrap()
            .starts_with("The window is the receiver's, here the client's")
    );
    // The fix, on the client's side: a window larger than a reply.
    let (report, ids, code) = doctor(&[&call[..], &["--h2-window", "16777216", &url]].concat());
    assert_eq!(ids, ["healthy"], "{report:#}");
    assert_eq!(code, 0);
}

#[test]
fn the_doctor_proves_streams_queue_behind_the_servers_limit() {
    let limited = go_h2c(&["--max-streams", "2", "--delay-ms", "20"]);
    let (report, ids, _) = doctor(&["--h2", "--streams", "6", &limited.url("/")]);
    assert_eq!(report["phases"][0]["description"], "baseline: HTTP/2, 6 streams on one connection");
    let finding = common::finding(&report, "h2-stream-limit-queueing");
    assert_eq!(finding["proven"], true, "{report:#}");
    assert!(finding["title"].as_str().unwrap().contains("allows 2 at once"), "{finding:#}");
    // The server's own 20 ms is its first byte, the queue's time is not.
    if let Some(slow) = report["findings"].as_array().unwrap().iter().find(|f| f["id"] == "slow-first-byte") {
        let first_byte = slow["evidence"][0]["value"].as_f64().unwrap();
        assert!(first_byte < 35.0, "first byte {first_byte} ms counts the queue: {slow:#}");
    }
    assert!(ids.iter().all(|id| id != "healthy"));
    // Control: a limit above the streams asked queues nothing.
    let open = go_h2c(&["--max-streams", "100", "--delay-ms", "20"]);
    let (_, ids, _) = doctor(&["--h2", "--streams", "6", &open.url("/")]);
    assert!(!ids.contains(&"h2-stream-limit-queueing".to_string()), "{ids:?}");
}

#[test]
fn a_python_http2_server_is_named_by_its_own_stack_not_by_another_pythons() {
    // hypercorn (python-h2) says `server: hypercorn-h2`; its process is python3, which alone
    // would mark every Python stack, grpcio's and http.server's among them.
    let limited = hypercorn(&["--max-streams", "1", "--delay-ms", "50"]);
    let (report, _, _) = doctor(&["--h2", "--streams", "4", &limited.url("/")]);
    let finding = common::finding(&report, "h2-stream-limit-queueing");
    let detected: Vec<&str> = finding["fix"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["detected"] == true)
        .map(|f| f["stack"].as_str().unwrap())
        .collect();
    assert_eq!(detected, ["hypercorn"], "{finding:#}");
    for finding in report["findings"].as_array().unwrap() {
        for fix in finding["fix"].as_array().unwrap() {
            assert!(
                !(fix["detected"] == true
                    && fix["stack"].as_str().unwrap().starts_with("Python http.server")),
                "{finding:#}"
            );
        }
    }
}

#[test]
fn the_doctor_proves_server_nagle_between_headers_and_data_over_http2() {
    // Go and Node writing HEADERS and DATA in two sends with TCP_NODELAY off. The second send
    // waits only when it comes before the first one's ACK: a server starved of a CPU between
    // the two does not stall (beside two busy loops, Node's median was 4.7 ms, and the doctor
    // saw a server waiting for a CPU). It gets a second run when the first finds no stall.
    for peer in [go_h2c(&["--nagle"]), node_h2(&["--nagle"])] {
        let mut run = doctor(&["--h2", &peer.url("/")]);
        if run.1 != ["server-nagle-delayed-ack"] {
            run = doctor(&["--h2", &peer.url("/")]);
        }
        let (report, ids, code) = run;
        assert_eq!(ids, ["server-nagle-delayed-ack"], "{report:#}");
        assert_eq!(report["findings"][0]["proven"], true);
        assert_eq!(code, 3);
    }
    // Control: the same servers as shipped do not stall. Beside two busy loops, Node's thread
    // waited for a CPU 63 % of a run, and the doctor said so as an unproven server-cpu-bound:
    // that, and nothing else, may stand beside a healthy verdict.
    for peer in [go_h2c(&[]), node_h2(&[])] {
        let (report, ids, _) = doctor(&["--h2", &peer.url("/")]);
        let starved = ids == ["server-cpu-bound"] && report["findings"][0]["proven"] == false;
        assert!(ids == ["healthy"] || starved, "{report:#}");
    }
}

/// bench against an h2c-only server that stalls: its hint carries --h2 (without it the server
/// answers "invalid HTTP version"), and run as shown it proves the stall.
#[test]
fn bench_hints_over_http2_carry_h2_and_run_as_shown() {
    let peer = go_h2c(&["--nagle"]);
    let report = bench(&["--h2", "-c", "1", "-n", "30", &peer.url("/")]);
    let hint = report["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["prove"].as_str().is_some_and(|p| p.starts_with("nodelay doctor")))
        .unwrap_or_else(|| panic!("no doctor hint: {report:#}"));
    let prove = hint["prove"].as_str().unwrap();
    assert_eq!(prove, format!("nodelay doctor --h2 {}", peer.url("/")), "{hint:#}");
    let words: Vec<&str> = prove.split_whitespace().skip(1).collect();
    let run = nodelay(&[&words[..], &["--json"]].concat());
    assert_eq!(run.code(), 3, "{}", run.stderr());
    assert_eq!(finding_ids(&run.json()), ["server-nagle-delayed-ack"]);
}

#[test]
fn over_a_40_ms_path_a_grpc_reply_larger_than_the_window_waits_round_trips_and_the_doctor_proves_it() {
    let link = common::wan::Link::up("40ms", &[]);
    let binary = common::h2::grpc_server_binary();
    let mut command = link.server_command(&binary);
    command.args(["--bind", common::wan::SERVER_IP, "--reply-bytes", "300000"]);
    let server = common::start_command(&mut command);
    let address = format!("{}:{}", common::wan::SERVER_IP, server.port);
    // Ground truth from grpc-go's own client over the same path: a fixed 64 KiB window costs
    // round trips that a 16 MiB one does not.
    let median_ms = |window: &str| -> f64 {
        let output = link
            .client_command(&binary)
            .args(["--client", &address, "--calls", "8", "--window", window])
            .output()
            .expect("run the grpc-go client");
        let said = String::from_utf8_lossy(&output.stdout).to_string();
        client_figure(&said, "median")
            .unwrap_or_else(|| panic!("grpc-go client: {said}{}", String::from_utf8_lossy(&output.stderr)))
    };
    let (small, large) = (median_ms("65535"), median_ms("16777216"));
    assert!(small > large + 80.0, "grpc-go: 64 KiB window {small} ms, 16 MiB {large} ms");
    let url = format!("http://{address}");
    let call = ["doctor", "--json", "--no-server-view", "--grpc", "/helloworld.Greeter/SayHello"];
    let run = link.nodelay(&[&call[..], &[&url]].concat());
    let report = run.json();
    assert_eq!(common::finding_ids(&report), ["h2-flow-control-window"], "{report:#}");
    let finding = common::finding(&report, "h2-flow-control-window");
    assert_eq!(finding["proven"], true);
    let proof = &finding["proof"][0];
    let (before, after) =
        (proof["baseline_p50_ms"].as_f64().unwrap(), proof["experiment_p50_ms"].as_f64().unwrap());
    assert!(before > after + 80.0, "{proof:#}");
    let fixed = link.nodelay(&[&call[..], &["--h2-window", "16777216", &url]].concat()).json();
    assert_eq!(common::finding_ids(&fixed), ["healthy"], "{fixed:#}");
}

/// A figure of the grpc-go client's line "OK 900 calls, reply 1000 bytes, median 23.51 ms, p75
/// 41.20 ms, ..., over 30 ms 343 calls": the number after `name`.
fn client_figure(said: &str, name: &str) -> Option<f64> {
    let (_, rest) = said.split_once(&format!("{name} "))?;
    rest.split(' ').next()?.parse().ok()
}

#[test]
fn over_a_lossy_path_a_lost_segment_holds_every_stream_of_its_connection_and_the_doctor_proves_it() {
    let call = ["doctor", "--json", "--no-server-view", "--grpc", "/helloworld.Greeter/SayHello"];
    let binary = common::h2::grpc_server_binary();
    let serve = |link: &common::wan::Link| {
        let mut command = link.server_command(&binary);
        command.args(["--bind", common::wan::SERVER_IP, "--reply-bytes", "1000"]);
        let server = common::start_command(&mut command);
        let address = format!("{}:{}", common::wan::SERVER_IP, server.port);
        (server, address)
    };
    {
        let link = common::wan::Link::up("20ms", &["--loss", "2"]);
        let (_server, address) = serve(&link);
        // Ground truth from grpc-go's own client: with 30 calls in flight on one connection, a
        // third or more wait a round trip more (over 30 ms on this 20 ms path), held together
        // behind each lost segment; spread over 30 connections, only those that lost their own.
        let slow_calls = |connections: &str| -> f64 {
            let output = link
                .client_command(&binary)
                .args(["--client", &address, "--calls", "900", "--concurrent", "30"])
                .args(["--conns", connections, "--over-ms", "30"])
                .output()
                .expect("run the grpc-go client");
            let said = String::from_utf8_lossy(&output.stdout).to_string();
            client_figure(&said, "over 30 ms").unwrap_or_else(|| {
                panic!("grpc-go client: {said}{}", String::from_utf8_lossy(&output.stderr))
            })
        };
        // A busy machine makes calls slow on both (309 and 204 of 900 beside two busy loops,
        // against a ratio of 2.5 or more idle): what one connection adds is held apart.
        let (shared, spread) = (slow_calls("1"), slow_calls("30"));
        assert!(
            shared >= 180.0 && shared - spread >= 60.0,
            "grpc-go, calls over 30 ms of 900: one connection {shared}, 30 connections {spread}"
        );
        let url = format!("http://{address}");
        // The doctor's baseline is 300 calls in about ten flights of the window: a loss of
        // 2 % per packet spares all of them now and then (a run on a busy machine: 300
        // calls, no segment resent), and a loss repaired early costs less than the rule's
        // bar, a fifth of the median (CI: 4 segments lost, 110 calls held 4.57 ms each
        // against a 23.48 ms median, healthy). The claim is about a baseline whose losses
        // cost that much, so the test runs the doctor until one did, six times at most.
        let lost_a_segment = |report: &serde_json::Value| {
            let baseline = &report["phases"][0];
            let median_ms = baseline["total_p50_ms"].as_f64().unwrap_or(f64::INFINITY);
            baseline["loss_holes"].as_u64() > Some(0)
                && baseline["loss_held_p50_ms"].as_f64().is_some_and(|held_ms| held_ms >= median_ms / 5.0)
        };
        let report = (0..6)
            .map(|_| link.nodelay(&[&call[..], &["--streams", "30", &url]].concat()).json())
            .find(lost_a_segment)
            .expect("six doctor runs over a 2 % lossy path and no baseline's losses held calls a fifth of the median");
        assert_eq!(common::finding_ids(&report)[0], "h2-head-of-line-loss", "{report:#}");
        let finding = common::finding(&report, "h2-head-of-line-loss");
        assert_eq!(finding["proven"], true, "{finding:#}");
        let baseline = &report["phases"][0];
        assert!(baseline["loss_holes"].as_u64().unwrap() > 0, "{baseline:#}");
        assert!(baseline["loss_held"].as_u64().unwrap() >= 30, "{baseline:#}");
        let spread_phase = &report["phases"][1];
        assert_eq!(spread_phase["name"], "one-stream-per-connection");
        assert_eq!(spread_phase["loss_held"], 0, "one stream a connection shares no wait");
        // Not the p50s: with a tenth of the calls held, the median is the path's round trip
        // either way, and beside one busy process per core the spread phase's came out 0.9 ms
        // higher (25.4 -> 26.3 ms). The held calls above are what moves.
        // Control on the same path: one stream a connection has nothing to hold.
        let alone = link.nodelay(&[&call[..], &["--streams", "1", &url]].concat()).json();
        assert!(!common::finding_ids(&alone).contains(&"h2-head-of-line-loss".to_string()), "{alone:#}");
    }
    // Control without loss: the same 30 streams on one connection are healthy.
    let link = common::wan::Link::up("20ms", &[]);
    let (_server, address) = serve(&link);
    let clean =
        link.nodelay(&[&call[..], &["--streams", "30", &format!("http://{address}")]].concat()).json();
    assert_eq!(common::finding_ids(&clean), ["healthy"], "{clean:#}");
}

#[test]
fn a_path_that_stalls_without_losing_anything_is_not_called_a_loss() {
    // The path frozen for 500 ms mid-run: every packet waits and arrives, none is lost. A
    // kernel resends what it thinks lost, and its peer reports each duplicate (D-SACK) a
    // round trip after the held replies ended our pause.
    let link = common::wan::Link::up("10ms", &[]);
    let mut command = link.server_command(&common::h2::grpc_server_binary());
    command.args(["--bind", common::wan::SERVER_IP, "--reply-bytes", "1000"]);
    let server = common::start_command(&mut command);
    let run = link
        .client_command(env!("CARGO_BIN_EXE_nodelay"))
        .args(["bench", "--json", "-q", "--no-server-view", "--grpc", "/helloworld.Greeter/SayHello"])
        .args(["--streams", "10", "-c", "2", "-d", "2s"])
        .arg(format!("http://{}:{}", common::wan::SERVER_IP, server.port))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    link.wait_for_server_connections(server.port, 2);
    link.stall(std::time::Duration::from_millis(500));
    let output = run.wait_with_output().unwrap();
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(errors(&report), 0, "{report:#}");
    // The stall held responses, and a kernel resent segments during it. Where the freeze
    // lands decides which end: the client, when a request was on its way; the server, when
    // only responses were (a client whose requests were all acknowledged resends nothing).
    assert!(report["latency_ms"]["max"].as_f64().unwrap() >= 400.0, "{report:#}");
    let client = link.resend_counters('c');
    let server = link.resend_counters('s');
    assert!(client.resent_segments + server.resent_segments >= 1, "nothing resent: {client:?} {server:?}");
    // Nothing was lost, so nothing was held behind a loss.
    assert_eq!(report["http2"]["loss_holes"], 0, "{report:#}");
    assert_eq!(report["http2"]["loss_held_total_ms"], 0.0, "{report:#}");
}

#[test]
fn a_grpc_message_given_as_protobuf_text_reaches_the_server_as_that_message() {
    let server = grpc_server(&[]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let proto = common::repo_root().join("tests/fixtures/helloworld.proto");
    let proto = proto.to_str().unwrap();
    let call = ["--grpc", "/helloworld.Greeter/SayHello", "--grpc-proto", proto, "-c", "1", "-n", "10"];
    let report = bench(&[&call[..], &["--grpc-message", "name: \"nodelay\"", &url]].concat());
    assert_eq!(report["http2"]["grpc_status_counts"]["0"], 10, "{report:#}");
    // The server read the name: "Hello nodelay" (13 bytes) in a HelloReply (2 more) behind
    // gRPC's 5-byte prefix, each time.
    assert_eq!(report["response_bytes"], 10 * 20, "{report:#}");
    fails_with(
        &[&["bench"][..], &call[..], &["--grpc-message", "nmae: \"x\"", &url]].concat(),
        2,
        &["--grpc-message is not a helloworld.HelloRequest in protobuf text format"],
    );
    fails_with(
        &["bench", "--grpc", "/helloworld.Greeter/Nope", "--grpc-proto", proto, "-n", "1", &url],
        2,
        &["has no method Nope"],
    );
}

#[test]
fn h2c_asked_of_a_server_that_speaks_only_http11_is_said_in_words() {
    let node = common::node_peer("node_http_server.js", &[]);
    let run = nodelay(&["bench", "--h2", "-n", "5", "--no-server-view", &node.url("/")]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    let said = run.stderr();
    assert!(
        said.contains("the server did not answer in HTTP/2 (it began \"HTTP/1.1 400 Bad Request\")"),
        "{said}"
    );
    assert!(said.contains("drop --h2"), "{said}");
}

/// The median latency of `-t 1 -c 4 --streams 1` runs against `url`, three rounds
/// interleaved: the classic loop's (`--epoll`) and the batched loop's, with every run's.
fn classic_and_batched_p50(url: &str, flags: &[&str]) -> ([f64; 2], [Vec<f64>; 2]) {
    let run = |loop_flags: &[&str]| {
        bench(&[&["-t", "1", "-c", "4", "--streams", "1", "-d", "0.5s"], flags, loop_flags, &[url]].concat())
    };
    let mut p50: [Vec<f64>; 2] = Default::default();
    for round in 0..3 {
        for which in if round == 1 { [1, 0] } else { [0, 1] } {
            let report = run(if which == 0 { &["--epoll"] } else { &[] });
            assert_eq!(report["settings"]["http_version"], "2");
            assert_eq!(report["settings"]["batched_waits"], which == 1, "{:#}", report["settings"]);
            let why = if which == 0 { "--epoll" } else { "HTTP/2 runs wait with epoll" };
            assert_eq!(report["settings"]["event_loop_why"], why);
            p50[which].push(common::ms(&report, "latency_ms", "p50"));
        }
    }
    (common::median_runs(&p50), p50)
}

#[test]
fn h2c_runs_batch_their_waits_as_http11_runs_do_and_time_each_response_by_its_arrival() {
    // Go answers at once on 4 connections of one stream each: a batched wait holds a lone
    // response up to 0.5 ms on a timer of its own. Timed by its arrival stamp the median is
    // the classic loop's: measured 0.11-0.14 ms against 0.12-0.15 ms (debug build). Timed by
    // the read after the hold (stamps switched off by hand), 0.37-0.40 ms against 0.15-0.23.
    let fast = go_h2c(&[]);
    let ([classic, batched], p50) = classic_and_batched_p50(&fast.url("/"), &["--h2"]);
    assert!(
        batched < 1.3 * classic,
        "batched p50 {batched} ms against the classic loop's {classic} ms: {p50:?}"
    );
    // Over TLS the stamp is that of the socket read which completed the record. The classic
    // loop's time takes in rustls's work on the record too: measured 0.38-0.47 ms against
    // the batched loop's 0.17-0.25 ms, and with the stamps off 0.41-0.49 against 0.52-0.71.
    let certs = certs();
    let tls = go_h2c(&["--cert", &certs.cert, "--key", &certs.key]);
    let url = format!("https://localhost:{}/", tls.port);
    let ([classic, batched], p50) = classic_and_batched_p50(&url, &["--cacert", &certs.ca]);
    assert!(
        batched < 0.8 * classic,
        "TLS: batched p50 {batched} ms against the classic loop's {classic} ms: {p50:?}"
    );
    let slow = go_h2c(&["--delay-ms", "20"]);
    // Fewer than 4 connections on a thread: no batching.
    let few = bench(&["--h2", "-c", "2", "-n", "20", &slow.url("/")]);
    assert_eq!(few["settings"]["batched_waits"], false);
    let text = nodelay(&["bench", "--h2", "-t", "1", "-c", "4", "-n", "20", &slow.url("/")]).stdout();
    assert!(
        text.lines().any(|l| l.contains("epoll loop (HTTP/2 runs wait with epoll): batched waits")),
        "{text}"
    );
}

#[test]
fn every_stream_still_open_when_the_time_is_up_is_counted_as_unfinished() {
    // Go answers after 1 s; the run lasts 0.3 s: each of 2 connections holds 3 open streams.
    let slow = go_h2c(&["--delay-ms", "1000"]);
    let run = nodelay(&[
        "bench",
        "--h2",
        "-c",
        "2",
        "--streams",
        "3",
        "-d",
        "300ms",
        "--no-server-view",
        &slow.url("/"),
    ]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    assert!(run.stderr().contains("6 still waiting for a response when the run ended"), "{}", run.stderr());
}
