//! Conventions other tools taught their users, each checked on the real binary: a URL typed
//! without its scheme, flags typed from wrk's, ab's and oha's habits, misspellings, and
//! `report` of saved runs without --html.

use crate::common;

use crate::common::{canned_server, fails_with, nodelay, squeeze};

#[test]
fn a_url_without_its_scheme_is_refused_with_the_url_it_means() {
    let local = "missing http:// — did you mean http://127.0.0.1:9200/?";
    for text in ["127.0.0.1:9200/", "localhost:9200", ":9200", "9200"] {
        let expected = if text == "localhost:9200" { "did you mean http://localhost:9200/?" } else { local };
        fails_with(&["bench", "-n", "1", text], 2, &[expected]);
        fails_with(&["doctor", text], 2, &[expected]);
        // compare names the target the text is.
        fails_with(&["compare", "-n", "1", "http://127.0.0.1:9/", text], 2, &["target B", expected]);
    }
}

/// A server that answers every request with 200 "ok", for runs that must succeed.
fn ok_server() -> String {
    format!("http://{}/", canned_server(b"\r\n\r\n", common::OK_RESPONSE.to_vec()))
}

#[test]
fn flags_from_wrk_ab_and_oha_point_to_ours() {
    fails_with(&["bench", "-R", "2000", "http://127.0.0.1:9/"], 2, &["-R is wrk2's rate: use --rate 2000"]);
    for command in ["bench", "doctor"] {
        fails_with(&[command, "-d", r#"{"a":1}"#, "http://127.0.0.1:9/"], 2, &[r#"use -b '{"a":1}'"#]);
        fails_with(&[command, "-d", "@body.json", "http://127.0.0.1:9/"], 2, &["use -b @body.json"]);
    }
    fails_with(&["bench", "-p", "post.txt", "http://127.0.0.1:9/"], 2, &["ab's body file: use -b @post.txt"]);
    fails_with(&["bench", "-T", "text/plain", "http://127.0.0.1:9/"], 2, &["-H 'Content-Type: text/plain'"]);
    fails_with(
        &["bench", "-s", "pipeline.lua", "http://127.0.0.1:9/"],
        2,
        &["wrk's Lua script", "--scenario FILE"],
    );
    // The flags nodelay names are nodelay's.
    let help = nodelay(&["bench", "--help"]).stdout();
    for ours in ["--rate", "--body", "--header", "--scenario"] {
        assert!(help.contains(ours), "{ours} is not in bench --help");
    }
}

#[test]
fn misspelled_flags_and_commands_get_a_did_you_mean_in_their_one_line() {
    fails_with(&["bench", "--conections", "5", "http://127.0.0.1:9/"], 2, &["did you mean '--connections'?"]);
    fails_with(
        &["bnech", "http://127.0.0.1:9/"],
        2,
        &["unrecognized subcommand 'bnech'; did you mean 'bench'?"],
    );
}

#[test]
fn wrk_latency_is_accepted_silently_and_ab_k_with_a_note() {
    let url = ok_server();
    let run = nodelay(&["bench", "--latency", "-c", "1", "-n", "5", "--json", &url]);
    assert_eq!((run.code(), run.stderr().as_str()), (0, ""), "{}", run.stderr());
    assert!(run.json()["latency_ms"]["p99"].is_number(), "percentiles are always shown");
    let run = nodelay(&["compare", "--latency", "-q", "-c", "1", "-n", "5", "--rounds", "2", &url, &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let run = nodelay(&["bench", "-k", "-c", "1", "-n", "5", "-q", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(
        run.stderr().trim(),
        "nodelay: -k ignored: keep-alive (ab's -k) is the default; here -k is --insecure"
    );
    assert!(
        squeeze(&run.stdout()).contains("keep-alive 4 of 5 responses reused a connection"),
        "{}",
        run.stdout()
    );
}

/// Issue 31's item 6: `report RUN.json...` without --html prints each saved run as text, in
/// the order given, a blank line apart, no line wider than 80 columns. A file that is no
/// saved run is refused in one line naming it, exit 1 as with --html (the file is bad, not the
/// arguments), and nothing of the other runs is printed.
#[test]
fn report_of_saved_runs_without_html_prints_their_text() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("saved-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let url = ok_server();
    let run = nodelay(&["bench", "-c", "1", "-n", "20", "--export-json", &path("canned.json"), &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = nodelay(&["report", &path("canned.json")]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    let text = squeeze(&report.stdout());
    let header = format!("nodelay bench GET {url}");
    for needle in [header.as_str(), "20 responses in", "p50", "p99"] {
        assert!(text.contains(needle), "{needle:?} not in:\n{}", report.stdout());
    }

    // A bench run and a diagnosis of Python's http.server as shipped, saved with --json.
    let peer = common::python_peer("python_http_server.py", &[]);
    let bench = nodelay(&["bench", "-c", "1", "-n", "10", "--json", &peer.url("/")]);
    assert_eq!(bench.code(), 0, "{}", bench.stderr());
    std::fs::write(path("bench.json"), bench.stdout()).unwrap();
    let doctor = nodelay(&["doctor", "--json", &peer.url("/")]);
    assert!(matches!(doctor.code(), 0 | 3), "{}", doctor.stderr());
    std::fs::write(path("doctor.json"), doctor.stdout()).unwrap();
    let report = nodelay(&["report", &path("bench.json"), &path("doctor.json")]);
    assert_eq!((report.code(), report.stderr().as_str()), (0, ""), "{}", report.stderr());
    let stdout = report.stdout();
    for line in stdout.lines() {
        assert!(line.chars().count() <= 80, "wider than 80 columns: {line:?}");
    }
    let (bench_text, doctor_text) =
        stdout.split_once("\n\nnodelay doctor ").expect("bench, a blank line, doctor");
    assert!(bench_text.starts_with(&format!("nodelay bench GET {}", peer.url("/"))), "{stdout}");
    for needle in ["10 responses in", "req/s", "p50", "p90", "p99", "max", "status 200 ×10", "errors none"] {
        assert!(squeeze(bench_text).contains(needle), "{needle:?} not in:\n{bench_text}");
    }
    let doctor_text = squeeze(doctor_text);
    let ids = common::finding_ids(&doctor.json());
    for needle in ["p50 total", "1st byte", "baseline: keep-alive", " ms", "evidence:"] {
        assert!(doctor_text.contains(needle), "{needle:?} not in:\n{stdout}");
    }
    for id in &ids {
        assert!(doctor_text.contains(&format!("{id} (")), "finding {id} not in:\n{stdout}");
    }
    assert!(doctor_text.ends_with(&format!("verdict: {}", ids.join(", "))), "{stdout}");

    std::fs::write(path("package.json"), r#"{"name": "left-pad"}"#).unwrap();
    let refused = nodelay(&["report", &path("bench.json"), &path("package.json")]);
    assert_eq!((refused.code(), refused.stdout().as_str()), (1, ""), "{}", refused.stderr());
    fails_with(&["report", &path("package.json")], 1, &["package.json is not a nodelay report"]);
}
