//! Hostile input through the real binary: descriptor limits, a closed stdout, absurd values,
//! request injection, endless input files and memory bounds. Each test is a case that crashed,
//! hung, injected bytes or ran out of memory before.

use crate::common::{Peer, canned_server, compiled, fails_with, nodelay, start_peer};
use std::ffi::OsStr;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::Duration;

fn go_server() -> Peer {
    start_peer(&compiled("go_http_server.go"), &[])
}

/// Runs nodelay under `sh -c 'ulimit ...; exec nodelay ARGS'`.
fn nodelay_with_ulimit(ulimit: &str, args: &[&str]) -> std::process::Output {
    let script = format!("ulimit {ulimit} && exec \"$0\" \"$@\"");
    Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_nodelay")])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

fn assert_no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked") && !stderr.contains("overflowed"), "{stderr}");
}

#[test]
fn an_argument_that_is_not_utf8_is_a_one_line_usage_error() {
    // It panicked (exit 101, a backtrace) before clap saw it.
    for command in ["inspect", "fix"] {
        let output = Command::new(env!("CARGO_BIN_EXE_nodelay"))
            .arg(command)
            .arg(OsStr::from_bytes(b"\xff"))
            .stdin(Stdio::null())
            .output()
            .expect("run nodelay");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_no_panic(&stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr, "nodelay: argument \"\\xFF\" is not UTF-8 text\n");
    }
}

#[test]
fn connections_beyond_the_hard_descriptor_limit_are_refused_before_the_run() {
    let peer = go_server();
    let url = peer.url("/");
    for (limit, connections, bound) in [("256", "2000", ["-d", "2s"]), ("200", "500", ["-n", "40000"])] {
        let output = nodelay_with_ulimit(
            &format!("-n {limit}"),
            &["bench", &url, "-c", connections, bound[0], bound[1]],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("-c {connections} needs about")), "{stderr}");
        assert!(stderr.contains(&format!("at most {limit}")), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
}

#[test]
fn a_low_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let peer = go_server();
    // Soft 256, hard as it was: 500 connections need more than 256 descriptors.
    let output =
        nodelay_with_ulimit("-Sn 256", &["bench", &peer.url("/"), "-c", "500", "-n", "2000", "--json"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["requests_completed"], 2000, "{report}");
    assert_eq!(report["errors"]["out_of_files"], 0);
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_commands_own_status() {
    let peer = go_server();
    for format in ["--json", "--quiet"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
            .args(["bench", &peer.url("/"), "-c", "2", "-n", "50", format])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run nodelay");
        // The reader goes away before nodelay writes anything: its write gets EPIPE.
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_no_panic(&stderr);
        assert_eq!(output.status.code(), Some(0), "{format}: {stderr}");
    }
}

#[test]
fn absurd_durations_and_rates_are_usage_errors() {
    let url = "http://127.0.0.1:9/";
    let huge = "18446744073709551615s";
    let cases: [&[&str]; 9] = [
        &["bench", url, "-d", huge],
        &["bench", url, "-d", "300000000000y"],
        &["bench", url, "--timeout", huge],
        &["bench", url, "--connect-timeout", huge],
        &["bench", url, "--rate", "1e-20"],
        &["bench", url, "--rate", "NaN"],
        &["doctor", url, "--budget", huge],
        &["doctor", url, "--timeout", "300000000000y"],
        &["bench", url, "-d", "366days"],
    ];
    for args in cases {
        let run = nodelay(args);
        assert_no_panic(&run.stderr());
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(
            run.stderr().contains("too long")
                || run.stderr().contains("rate")
                || run.stderr().contains("invalid")
        );
    }
}

#[test]
fn a_year_long_timeout_is_accepted_and_does_not_overflow() {
    let peer = go_server();
    let run = nodelay(&[
        "bench",
        &peer.url("/"),
        "-n",
        "20",
        "-c",
        "1",
        "--timeout",
        "365days",
        "--connect-timeout",
        "365days",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_no_panic(&run.stderr());
}

/// A listener nobody else uses: after nodelay refused the request, nothing connected to it.
fn assert_never_connected(listener: &TcpListener) {
    listener.set_nonblocking(true).expect("nonblocking");
    let accepted = listener.accept();
    assert!(accepted.is_err(), "nodelay connected although it refused the request");
}

#[test]
fn request_injection_is_refused_naming_the_field_and_nothing_is_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    for (args, field) in [
        (vec!["-m", "GET /admin HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET"], "method"),
        (vec!["-m", ""], "method"),
        (vec!["-m", "GET /evil HTTP/1.1"], "method"),
        (vec!["-H", "X Bad: 1"], "name"),
        // Not sent as 'X: a': a space or a line break before the colon is refused, and echoed
        // escaped, on one line.
        (vec!["-H", "X : a"], "'X ' is not a valid header name"),
        (vec!["-H", "X\n: a"], "'X\\n' is not a valid header name"),
        (vec!["-H", "X\r: a"], "'X\\r' is not a valid header name"),
    ] {
        let mut all = vec!["bench", url.as_str(), "-n", "1"];
        all.extend(args.iter().copied());
        let run = nodelay(&all);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        // The message is on the first line (clap's own errors add a --help tip below it).
        let first = run.stderr().lines().next().unwrap_or_default().to_string();
        assert!(first.contains(field), "{args:?}: {}", run.stderr());
    }
    let dir = tempdir("injection");
    for (entry, field) in [
        ("path = \"/a\\r\\nX-Injected: 1\"", "request target"),
        ("path = \"/\"\nmethod = \"GET / HTTP/1.1\\r\\n\"", "method"),
        ("path = \"/\"\nheaders = { X-A = \"1\\r\\nX-Injected: 1\" }", "header 'X-A' value"),
        ("path = \"/\"\nheaders = { \"X:A\" = \"1\" }", "header name"),
    ] {
        let file = dir.join("scenario.toml");
        std::fs::write(&file, format!("[[request]]\nname = \"evil\"\n{entry}\n")).expect("write scenario");
        let run = nodelay(&["bench", &url, "-n", "1", "--scenario", file.to_str().expect("utf-8")]);
        assert_eq!(run.code(), 2, "{entry}: {}", run.stderr());
        assert!(
            run.stderr().contains("scenario request 'evil'") && run.stderr().contains(field),
            "{}",
            run.stderr()
        );
    }
    assert_never_connected(&listener);
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hardening-{name}"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn endless_input_files_are_refused_not_read_until_memory_runs_out() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let http = format!("http://{address}/");
    let tcp = format!("tcp://{address}");
    let cases: [&[&str]; 3] = [
        &["bench", &http, "-n", "1", "-b", "@/dev/zero"],
        &["bench", &tcp, "-n", "1", "--frame", "line", "--send", "@/dev/zero"],
        &["bench", &http, "-n", "1", "--scenario", "/dev/zero"],
    ];
    for args in cases {
        let run = nodelay(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(run.stderr().contains("is larger than") && run.stderr().contains("MiB"), "{}", run.stderr());
        assert!(run.elapsed < Duration::from_secs(5), "{args:?} took {:?}", run.elapsed);
    }
    let dir = tempdir("endless");
    let file = dir.join("scenario.toml");
    std::fs::write(&file, "[[request]]\nname = \"zero\"\npath = \"/\"\nbody = \"@/dev/zero\"\n")
        .expect("write");
    let run = nodelay(&["bench", &http, "-n", "1", "--scenario", file.to_str().expect("utf-8")]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("body file '/dev/zero' is larger than"), "{}", run.stderr());
    assert_never_connected(&listener);
}

/// clap's own errors (a missing argument, an unknown flag, a conflict) are one line that says
/// where the help is, not five to seven lines of usage and tips.
#[test]
fn argument_errors_are_one_line_that_points_at_the_help() {
    for (args, says) in [
        (
            &["exec"][..],
            "the following required arguments were not provided: <PROGRAM>... (see nodelay exec --help)",
        ),
        (&["inspect", "-1"], "unexpected argument '-1' found (see nodelay inspect --help)"),
        (
            &["bench", "--bogus", "http://x/"],
            "unexpected argument '--bogus' found (see nodelay bench --help)",
        ),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate' (see nodelay --help)"),
        // Found by the `arguments` fuzz target: a carriage return echoed raw broke the line.
        (&["-\r"], "unexpected argument '-\\r' found (see nodelay --help)"),
        (&["inspect", "x\ry"], "'x\\ry' is neither a PID"),
    ] {
        fails_with(args, 2, &[says]);
    }
}

/// Two outputs on one file, or a page written over its own input, are refused before anything
/// is created, run or emptied.
#[test]
fn an_output_on_another_output_or_on_an_input_is_refused_and_nothing_is_touched() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let http = format!("http://{}/", listener.local_addr().expect("address"));
    let dir = tempdir("outputs");
    let (out, log) = (dir.join("out"), dir.join("run.hlog"));
    std::fs::write(&log, "a log\n").expect("write");
    let (out, log) = (out.to_str().expect("utf-8"), log.to_str().expect("utf-8"));
    for (args, says) in [
        (
            vec!["bench", &http, "-n", "1", "--export-json", out, "--hdr-log", out],
            "--export-json and --hdr-log",
        ),
        (vec!["report", "merge", log, "--html", log], "an interval log and --html"),
        (vec!["report", log, "--html", log], "a saved run and --html"),
    ] {
        let run = nodelay(&args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert_eq!(run.stderr().trim_end().lines().count(), 1, "{}", run.stderr());
        assert!(run.stderr().contains(&format!("{says} both name")), "{}", run.stderr());
    }
    assert!(!std::path::Path::new(out).exists());
    assert_eq!(std::fs::read_to_string(log).expect("the log"), "a log\n");
    assert_never_connected(&listener);
}

/// Runs nodelay and returns its exit code and peak RSS in MiB (`wait4` on exactly this child,
/// so parallel tests' processes do not count).
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std's Child does not know
fn peak_rss_mib(args: &[&str]) -> (i32, f64, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nodelay");
    // Drained to its end (the child's exit) first, so a full pipe can never block the child.
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, usage.ru_maxrss as f64 / 1024.0, stderr)
}

#[test]
fn memory_does_not_grow_with_scenario_names_times_threads() {
    let peer = go_server();
    let dir = tempdir("memory");
    let file = dir.join("thousand.toml");
    let mut text = String::from("mode = \"weighted\"\n");
    for i in 0..1000 {
        text.push_str(&format!("[[request]]\nname = \"r{i}\"\npath = \"/p{i}\"\n"));
    }
    std::fs::File::create(&file).and_then(|mut f| f.write_all(text.as_bytes())).expect("write scenario");
    // Was 2.3 GB: three hour-wide histograms per name per thread, plus the merge.
    let args = [
        "bench",
        &peer.url("/"),
        "-t",
        "2",
        "-c",
        "2",
        "-d",
        "1s",
        "--scenario",
        file.to_str().expect("utf-8"),
    ];
    let (code, rss, stderr) = peak_rss_mib(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(rss < 200.0, "1000-name scenario at -t 2: peak RSS {rss:.0} MiB");
}

#[test]
fn memory_does_not_grow_with_threads_times_connections() {
    let peer = go_server();
    // Was 1.17 GB at -t 1024 -c 1024: every thread kept a slot for every connection.
    let (code, rss, stderr) = peak_rss_mib(&["bench", &peer.url("/"), "-t", "64", "-c", "10000", "-d", "1s"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(rss < 150.0, "-t 64 -c 10000: peak RSS {rss:.0} MiB");
}

#[test]
fn statuses_outside_100_599_are_malformed_not_silently_completed() {
    for status in ["000", "600", "999"] {
        let response = format!("HTTP/1.1 {status} Odd\r\nContent-Length: 2\r\n\r\nok").into_bytes();
        let address = canned_server(b"\r\n\r\n", response);
        let run = nodelay(&["bench", &format!("http://{address}/"), "-c", "1", "-n", "5", "--json"]);
        assert_eq!(run.code(), 1, "{status}: {}", run.stderr());
        let report = run.json();
        assert_eq!(report["requests_completed"], 0, "{status}: {report}");
        assert_eq!(report["errors"]["malformed_response"], 5, "{status}: {report}");
        let example = report["error_examples"]["malformed_response"].as_str().unwrap_or_default();
        assert!(
            example
                .contains(&format!("status {}", status.trim_start_matches('0').parse::<u16>().unwrap_or(0))),
            "{example}"
        );
    }
}

#[test]
fn max_response_holds_for_http_and_for_a_raw_response_read_at_once() {
    let body = vec![b'x'; 2000];
    let mut response = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    response.extend_from_slice(&body);
    let http = format!("http://{}/", canned_server(b"\r\n\r\n", response));
    let bounded = nodelay(&["bench", &http, "-c", "1", "-n", "3", "--max-response", "100", "--json"]);
    assert_eq!(bounded.json()["errors"]["malformed_response"], 3, "{}", bounded.stdout());
    let unbounded = nodelay(&["bench", &http, "-c", "1", "-n", "3", "--json"]);
    assert_eq!(unbounded.json()["requests_completed"], 3, "no default bound on http://");

    // One 2002-byte line, arriving in one read, passed --max-response 100 before.
    let mut line = vec![b'y'; 2001];
    line.push(b'\n');
    let tcp = format!("tcp://{}", canned_server(b"\n", line));
    let run = nodelay(&[
        "bench",
        &tcp,
        "--send",
        "PING\\n",
        "--frame",
        "line",
        "-c",
        "1",
        "-n",
        "3",
        "--max-response",
        "100",
        "--json",
    ]);
    let report = run.json();
    assert_eq!(report["requests_completed"], 0, "{report}");
    assert_eq!(report["errors"]["malformed_response"], 3, "{report}");
}

#[test]
fn chunk_sizes_with_leading_zeros_are_valid() {
    let response =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nok\r\n0\r\n\r\n".to_vec();
    let address = canned_server(b"\r\n\r\n", response);
    let run = nodelay(&["bench", &format!("http://{address}/"), "-c", "1", "-n", "5", "--json"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(run.json()["requests_completed"], 5);
}
