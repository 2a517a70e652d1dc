//! `nodelay compare` against real servers on loopback: a stalling server against the same
//! server with TCP_NODELAY, the same server twice, a target nobody listens on, and bad
//! arguments.

use crate::common::*;

/// `nodelay compare --json` with short rounds: the report, validated against its schema.
fn compare(args: &[&str]) -> (Run, serde_json::Value) {
    let run = nodelay(&[&["compare", "--json", "-q", "-t", "1", "-c", "1", "-d", "400ms"], args].concat());
    let report = run.json();
    validate_against_schema("compare.schema.json", &report);
    (run, report)
}

fn comparison<'a>(report: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} comparison in {report:#}"))
}

#[test]
fn the_stalling_server_is_named_slower_by_its_factor_and_every_round_agrees() {
    let _alone = alone();
    let fixed = python_peer("python_http_server.py", &["--disable-nagle"]);
    let stalling = python_peer("python_http_server.py", &[]);
    let (run, report) =
        compare(&["--rounds", "5", "--labels", "fixed,stalling", &fixed.url("/"), &stalling.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    for target in report["targets"].as_array().unwrap() {
        assert_eq!(target["rounds"].as_array().unwrap().len(), 5, "{target:#}");
        // Each target's own settings, not only the first's.
        assert_eq!(target["settings"]["url"], target["url"], "{target:#}");
    }
    assert_eq!(report["rounds_completed"], 5);
    assert_eq!(report["interrupted_round"], serde_json::Value::Null);
    let p50 = comparison(&report, "p50_ms");
    assert_eq!(p50["label"], "stalling");
    assert_eq!(p50["against"], "fixed");
    assert_eq!(p50["significant"], true, "{p50:#}");
    assert_eq!(p50["every_round_agrees"], true, "{p50:#}");
    // A 40 ms stall against well under a millisecond.
    let ratio = p50["ratio"].as_f64().unwrap();
    assert!(ratio > 20.0, "{p50:#}");
    assert!(
        p50["interval_low"].as_f64().unwrap() <= ratio && ratio <= p50["interval_high"].as_f64().unwrap()
    );
    assert!(p50["p_value"].as_f64().unwrap() < 0.05, "{p50:#}");
    let verdict = p50["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("stalling is ") && verdict.contains("× slower at p50 than fixed"),
        "{verdict}"
    );
    let rate = comparison(&report, "requests_per_second");
    assert!(rate["ratio"].as_f64().unwrap() < 0.1 && rate["significant"] == true, "{rate:#}");
    // The target's verdict names every figure that differs, p50 and requests/s among them.
    let whole = report["verdicts"][0].as_str().unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        whole.starts_with("stalling is ")
            && whole.contains("slower at p50")
            && whole.contains("slower in requests/s")
            && whole.contains(" than fixed"),
        "{whole}"
    );

    // The text says the same, and fits 80 columns.
    let text =
        nodelay(&["compare", "-q", "-t", "1", "-c", "1", "-d", "200ms", &fixed.url("/"), &stalling.url("/")]);
    assert_eq!(text.code(), 0, "{}", text.stderr());
    let out = text.stdout();
    assert!(out.lines().all(|line| line.chars().count() <= 80), "wider than 80 columns:\n{out}");
    let verdict = out.lines().find(|l| l.starts_with("verdict: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(verdict.contains("B is ") && verdict.contains("slower at p50"), "{out}");
    assert!(out.contains("Mann-Whitney U"), "{out}");

    // Two rounds that agree cannot be significant: said so, not "no difference".
    let (_, few) = compare(&["--rounds", "2", &fixed.url("/"), &stalling.url("/")]);
    let verdict = comparison(&few, "p50_ms")["verdict"].as_str().unwrap().to_string();
    assert!(
        verdict.starts_with("too few rounds for a verdict: B was ") && verdict.contains("in every round"),
        "{verdict}"
    );
}

#[test]
fn the_same_server_twice_is_no_difference() {
    // Rounds that share the cores with the other tests' servers differ by that, not by target.
    let _alone = alone();
    let server = python_peer("python_http_server.py", &["--disable-nagle"]);
    let same_twice = || {
        let (run, report) = compare(&["--rounds", "5", &server.url("/?first"), &server.url("/?second")]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        comparison(&report, "p50_ms").clone()
    };
    // The test rejects a true "no difference" by chance as often as its p < 0.05 allows (and
    // a loaded machine's rounds are not independent: 1.07-1.63x once, every round agreeing).
    // One such call is chance; two in a row would be a bias.
    let first = same_twice();
    let p50 = if first["significant"] == true { same_twice() } else { first.clone() };
    assert_eq!(p50["significant"], false, "twice in a row: {first:#}\n{p50:#}");
    assert!(
        p50["verdict"].as_str().unwrap().contains("no difference at p50 beyond round-to-round noise"),
        "{p50:#}"
    );
}

#[test]
fn a_target_nobody_listens_on_is_reported_and_the_other_still_measured() {
    let server = python_peer("python_http_server.py", &["--disable-nagle"]);
    let (_held, closed) = port_nobody_listens_on();
    let (run, report) = compare(&["--rounds", "2", &server.url("/"), &format!("http://127.0.0.1:{closed}/")]);
    assert_eq!(run.code(), 1, "one target could not be measured:\n{}", run.stderr());
    let targets = report["targets"].as_array().unwrap();
    assert_eq!(targets[0]["rounds"].as_array().unwrap().len(), 2);
    assert!(targets[0]["run"]["requests_completed"].as_u64().unwrap() > 0);
    let error = targets[1]["error"].as_str().unwrap();
    assert!(error.contains("cannot connect") && error.contains(&closed.to_string()), "{error}");
    assert!(report["comparisons"].as_array().unwrap().is_empty());

    // Both unreachable: one line, exit 1.
    let both = nodelay(&[
        "compare",
        "-q",
        "-d",
        "200ms",
        &format!("http://127.0.0.1:{closed}/"),
        &format!("http://127.0.0.1:{closed}/x"),
    ]);
    assert_eq!(both.code(), 1);
    assert_eq!(both.stderr().trim().lines().count(), 1, "{}", both.stderr());
    assert!(both.stderr().contains("no target could be measured"), "{}", both.stderr());
}

/// A server that takes connections and never answers: no figures to compare, said on stderr,
/// and exit 1 (bench's exit for the same server), while the report is still printed.
#[test]
fn a_target_that_never_answers_fails_the_comparison() {
    let server = python_peer("python_http_server.py", &["--disable-nagle"]);
    // The kernel completes the handshakes into the backlog; nobody reads or writes.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let (run, report) = compare(&["--rounds", "2", &server.url("/"), &silent_url]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert_eq!(report["targets"][1]["run"]["requests_completed"], 0, "{report:#}");
    let stderr = run.stderr();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no request succeeded on") && stderr.contains(&silent_url), "{stderr}");
    assert!(stderr.contains("still waiting for a response when the run ended"), "{stderr}");
    // The text says so under its figures, where "errors 0" alone would read as healthy.
    let text = nodelay(&[
        "compare",
        "-q",
        "-t",
        "1",
        "-c",
        "1",
        "-d",
        "300ms",
        "--rounds",
        "2",
        &server.url("/"),
        &silent_url,
    ]);
    assert_eq!(text.code(), 1, "{}", text.stderr());
    let said = squeeze(&text.stdout());
    assert!(
        said.contains("B: no response in any round; 2 requests were still waiting when its rounds stopped"),
        "{}",
        text.stdout()
    );
    assert!(!said.contains("A: no response"), "{}", text.stdout());
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        vec!["compare"],
        vec!["compare", "--baseline", "http://127.0.0.1:1/"],
        vec!["compare", "--rounds", "1", "http://127.0.0.1:1/", "http://127.0.0.1:2/"],
        vec!["compare", "--labels", "a", "http://127.0.0.1:1/", "http://127.0.0.1:2/"],
        vec!["compare", "--labels", "a,a", "http://127.0.0.1:1/", "http://127.0.0.1:2/"],
        vec!["compare", "http://127.0.0.1:1/", "ftp://127.0.0.1:2/"],
    ] {
        let run = nodelay(&args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(run.stdout().is_empty(), "{args:?}");
    }
    // A label wider than the table fits in 80 columns (CJK characters take two each).
    for label in ["yyyyyyyyyyyyyyyyy", "日本語ラベル長い名"] {
        let labels = format!("{label},b");
        fails_with(
            &["compare", "--labels", &labels, "http://127.0.0.1:1/", "http://127.0.0.1:2/"],
            2,
            &["--labels: label 1 is wider than 16 columns"],
        );
    }
}

#[test]
fn ctrl_c_stops_the_rounds_and_reports_what_was_measured() {
    let mut peer = python_peer("chunked_server.py", &[]);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(["compare", "-q", "-c", "1", "-d", "60s", &peer.url("/a"), &peer.url("/b")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first target's first round has its connection: stop there.
    peer.wait_for_line("CONNECTED");
    let started = std::time::Instant::now();
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 5, "stopping took {:?}", started.elapsed());
    let text = String::from_utf8_lossy(&output.stdout);
    // The round was cut before it was whole: nothing is compared.
    assert!(
        squeeze(&text).contains(
            "interrupted (Ctrl-C) in round 1 of 5: that round was cut short and is left out; no round was complete: nothing to compare"
        ),
        "{text}"
    );
    assert!(!text.contains("spread across rounds"), "{text}");
    assert!(text.lines().all(|line| line.chars().count() <= 80), "{text}");
}

/// Ctrl-C in the third of many long rounds, against two real servers: the two whole rounds
/// are compared, the third is left out, and the JSON and the page say so. The stderr line of
/// the second round's end says when to stop: from then on a stop cuts the third.
#[test]
fn a_round_cut_short_by_ctrl_c_is_left_out_and_said() {
    use std::io::BufReader;
    let fixed = python_peer("python_http_server.py", &["--disable-nagle"]);
    let stalling = python_peer("python_http_server.py", &[]);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-interrupted");
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("interrupted.html");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(["compare", "--json", "-c", "1", "-t", "1", "-d", "1s", "--rounds", "20"])
        .args(["--labels", "fixed,stalling", "--html", html.to_str().unwrap()])
        .args([fixed.url("/"), stalling.url("/")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let said = std::cell::RefCell::new(Vec::new());
    read_until(&mut stderr, "nodelay compare", |line| {
        said.borrow_mut().push(line.to_string());
        line.starts_with("round 2 of 20 done: fixed p50 ")
    });
    let said = said.into_inner();
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(said.len(), 2, "one line per round: {said:?}");
    assert!(
        said[0].starts_with("round 1 of 20 done: fixed p50 ") && said[0].contains(", stalling p50 "),
        "{said:?}"
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the report, as JSON");
    validate_against_schema("compare.schema.json", &report);
    assert_eq!(report["interrupted"], true, "{report:#}");
    assert_eq!(report["rounds"], 20);
    assert_eq!(report["rounds_completed"], 2);
    assert_eq!(report["interrupted_round"], 3);
    for target in report["targets"].as_array().unwrap() {
        let rounds = target["rounds"].as_array().unwrap();
        let numbers: Vec<u64> = rounds.iter().map(|r| r["round"].as_u64().unwrap()).collect();
        assert_eq!(numbers, [1, 2], "{target:#}");
        // The cut run's responses are in no figure.
        let in_rounds: u64 = rounds.iter().map(|r| r["requests_completed"].as_u64().unwrap()).sum();
        let run = &target["run"];
        assert_eq!(run["requests_completed"].as_u64().unwrap(), in_rounds, "{target:#}");
        let in_timeline: u64 =
            run["timeline"].as_array().unwrap().iter().map(|p| p["requests"].as_u64().unwrap()).sum();
        assert_eq!(in_timeline, in_rounds, "{target:#}");
    }
    assert!(report["comparisons"].as_array().unwrap().iter().any(|c| c["metric"] == "p50_ms"), "{report:#}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(
            "Interrupted (Ctrl-C) in round 3 of 20: that round was cut short and is left out; 2 complete rounds are compared."
        ),
        "{page}"
    );
}
