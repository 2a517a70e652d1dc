//! https:// end to end: real TLS servers in Python, Node, Go and nginx on port 0, with
//! certificates the tests make themselves (common::tls). Each stalling server is caught
//! through TLS and its fixed twin is healthy; every way TLS goes wrong is one clear line.

use crate::common::nginx::Nginx;
use crate::common::tls::{CA_NAME, certs};
use crate::common::*;
use std::process::Command;

fn https(peer: &Peer, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", peer.port)
}

/// `nodelay doctor --json --cacert CA URL ...`: the report, checked against the schema.
fn doctor(url: &str, more: &[&str]) -> (Run, serde_json::Value) {
    let run = nodelay(&[&["doctor", "--json", "--cacert", &certs().ca, url], more].concat());
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    (run, report)
}

/// The doctor names the stall through TLS, says the pause falls between TLS records, and
/// proves it by experiment.
fn assert_tls_stall(url: &str) {
    let (run, report) = doctor(url, &[]);
    assert_eq!(finding_ids(&report), STALL, "{report:#}");
    assert_eq!(run.code(), 3);
    let stall = &report["findings"][0];
    assert_eq!(stall["proven"], true, "{stall:#}");
    let labels: Vec<&str> =
        stall["evidence"].as_array().unwrap().iter().map(|e| e["what"].as_str().unwrap()).collect();
    assert!(labels.contains(&"median pause within a response (between TLS records)"), "{labels:?}");
    // Python, Node and Go negotiate TLS 1.3; nginx 1.22 offers 1.2 unless configured.
    let version = report["tls"]["version"].as_str().unwrap_or_default();
    assert!(["TLSv1.3", "TLSv1.2"].contains(&version), "{report:#}");
    assert_eq!(report["tls"]["trust"], "ca_file");
}

/// Healthy, or (as `assert_verdict` allows) the one note a busy machine earns a healthy
/// server: beside three other TLS tests on 2 cores, Node's thread waited for a CPU 56 % of a
/// run and the doctor said CPU-bound at low confidence, unproven.
fn assert_tls_healthy(url: &str) {
    let (run, report) = doctor(url, &[]);
    if contended_cpu_note_only(&report) {
        assert_eq!(run.code(), 3);
        return;
    }
    assert_eq!(finding_ids(&report), HEALTHY, "{report:#}");
    assert_eq!(run.code(), 0);
}

fn python_tls(extra: &[&str]) -> Peer {
    let c = certs();
    python_peer("python_https_server.py", &[&["--cert", &c.cert, "--key", &c.key], extra].concat())
}

#[test]
fn python_ssl_server_stalls_through_tls_and_its_fix_is_healthy() {
    let stalling = python_tls(&[]);
    assert_tls_stall(&https(&stalling, "/"));
    // bench suspects it, and the command it suggests reaches the server as the run did.
    let ca = &certs().ca;
    let bench =
        nodelay(&["bench", "-c", "1", "-n", "20", "--json", "--cacert", ca, &https(&stalling, "/")]).json();
    let prove = format!("nodelay doctor --cacert {ca} {}", https(&stalling, "/"));
    assert_eq!(bench["suggestions"][0]["prove"], prove, "{bench:#}");
    let fixed = python_tls(&["--disable-nagle"]);
    assert_tls_healthy(&https(&fixed, "/"));
}

#[test]
fn the_doctor_text_says_what_tls_settled_on_and_what_a_fresh_connection_costs() {
    let peer = python_tls(&[]);
    let run = nodelay(&["doctor", "--cacert", &certs().ca, &https(&peer, "/")]);
    let text = squeeze(&run.stdout());
    assert!(text.contains("TLSv1.3 TLS_"), "{text}");
    assert!(text.contains("certificate checked against --cacert"), "{text}");
    assert!(text.contains("of which the TLS handshake"), "{text}");
    // The new-connection experiment pays a handshake the keep-alive baseline did not.
    assert!(text.contains("(of which a TLS handshake"), "{text}");
}

#[test]
fn every_experiment_runs_through_tls_including_the_split_request() {
    // A POST with a body to the stalling server: every experiment runs, the split request
    // too, its head and body then being two TLS records in two writes.
    let peer = python_tls(&[]);
    let body = "x".repeat(2000);
    let (_, report) = doctor(&https(&peer, "/"), &["-m", "POST", "-b", &body]);
    // Written in two pieces with Nagle on, the client stalls too, as in plain HTTP.
    assert_eq!(finding_ids(&report), ["server-nagle-delayed-ack", "client-nagle-delayed-ack"], "{report:#}");
    let phases: Vec<(&str, u64)> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["responses"].as_u64().unwrap()))
        .collect();
    for wanted in ["quick-ack", "new-connection-per-request", "split-request-nagle"] {
        let phase = phases.iter().find(|(id, _)| id.contains(wanted));
        assert!(phase.is_some_and(|(_, responses)| *responses > 0), "{wanted} in {phases:?}");
    }
}

#[test]
fn node_https_server_with_nodelay_false_stalls_and_with_it_on_is_healthy() {
    let c = certs();
    let stalling = node_peer("node_https_server.js", &["--cert", &c.cert, "--key", &c.key]);
    assert_tls_stall(&https(&stalling, "/"));
    let fixed = node_peer("node_https_server.js", &["--cert", &c.cert, "--key", &c.key, "--nodelay"]);
    assert_tls_healthy(&https(&fixed, "/"));
}

#[test]
fn go_crypto_tls_with_set_no_delay_false_stalls_on_a_large_body() {
    let c = certs();
    let binary = compiled("go_https_server.go");
    let stalling = start_peer(&binary, &["-cert", &c.cert, "-key", &c.key]);
    assert_tls_stall(&https(&stalling, "/"));
    let fixed = start_peer(&binary, &["-cert", &c.cert, "-key", &c.key, "-nodelay"]);
    assert_tls_healthy(&https(&fixed, "/"));
}

// ---- nginx: the ground truth first ----------------------------------------------------------

/// 20 000 bytes: measured here, nginx with TLS and `tcp_nodelay off` stalls on it (its last
/// record's tail waits for the client's delayed ACK), while a 13-byte answer (one record) and
/// a 100 000-byte one (the client ACKs full segments at once) do not.
const NGINX_BODY_BYTES: usize = 20_000;

fn nginx_tls(tcp_nodelay: &str) -> Nginx {
    let c = certs();
    let www = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("www-tls-{tcp_nodelay}"));
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("body.txt"), "n".repeat(NGINX_BODY_BYTES)).unwrap();
    Nginx::start_tls(&format!(
        "server {{ ssl_certificate {}; ssl_certificate_key {}; tcp_nodelay {tcp_nodelay}; root {}; }}",
        c.cert,
        c.key,
        www.display()
    ))
}

/// An independent client, Python's http.client over ssl on one keep-alive connection: the
/// median time of requests 2 to 10, in ms.
fn ground_truth_ms(url: &str) -> f64 {
    let script = r#"
import http.client, ssl, statistics, sys, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
context = ssl.create_default_context(cafile=sys.argv[2])
connection = http.client.HTTPSConnection(url.hostname, url.port, context=context)
times = []
for _ in range(10):
    started = time.perf_counter()
    connection.request("GET", url.path)
    response = connection.getresponse()
    response.read()
    times.append((time.perf_counter() - started) * 1000)
print(statistics.median(times[1:]))
"#;
    let output = Command::new("python3").args(["-c", script, url, &certs().ca]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().parse().unwrap()
}

#[test]
fn nginx_tls_with_tcp_nodelay_off_stalls_as_an_independent_client_measures() {
    let nginx = nginx_tls("off");
    let url = nginx.https_url("/body.txt");
    let truth = ground_truth_ms(&url);
    assert!(truth >= 30.0, "ground truth: Python's client waits {truth:.2} ms per request");
    assert_tls_stall(&url);
}

#[test]
fn nginx_tls_with_tcp_nodelay_on_is_healthy_as_an_independent_client_measures() {
    let nginx = nginx_tls("on");
    let url = nginx.https_url("/body.txt");
    let truth = ground_truth_ms(&url);
    assert!(truth < 10.0, "ground truth: Python's client waits {truth:.2} ms per request");
    assert_tls_healthy(&url);
}

#[test]
fn session_resumption_is_on_by_default_and_visible() {
    let nginx = nginx_tls("on");
    let url = nginx.https_url("/body.txt");
    let ca = &certs().ca;
    let bench = |more: &[&str]| {
        let run = nodelay(
            &[
                &["bench", "--json", "-c", "1", "-n", "60", "--no-keepalive", "--cacert", ca],
                more,
                &[url.as_str()],
            ]
            .concat(),
        );
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let report = run.json();
        validate_against_schema("bench.schema.json", &report);
        report
    };
    let resumed = bench(&[]);
    let tls = &resumed["tls"];
    let (full, again) =
        (tls["full_handshakes"].as_u64().unwrap(), tls["resumed_handshakes"].as_u64().unwrap());
    assert_eq!(full + again, 60, "{tls:#}");
    assert!(full >= 1 && again >= 50, "a new connection resumes the last session: {tls:#}");
    assert_eq!(resumed["settings"]["tls"]["resume"], true);
    let full_p50 = tls["full_handshake_ms"]["p50"].as_f64().unwrap();
    let resumed_p50 = tls["resumed_handshake_ms"]["p50"].as_f64().unwrap();
    assert!(full_p50 > 0.0 && resumed_p50 > 0.0, "{tls:#}");
    assert!(resumed["tls_handshake_ms"]["max"].as_f64().unwrap() >= full_p50.min(resumed_p50));

    let fresh = bench(&["--no-tls-resume"]);
    assert_eq!(fresh["tls"]["resumed_handshakes"], 0, "{:#}", fresh["tls"]);
    assert_eq!(fresh["tls"]["full_handshakes"], 60);
    assert_eq!(fresh["settings"]["tls"]["resume"], false);
    // Resumption skips the certificate: over 60 handshakes each, the median resumed one is the
    // cheaper (nginx answers both in microseconds; the difference is the certificate's).
    let fresh_p50 = fresh["tls"]["full_handshake_ms"]["p50"].as_f64().unwrap();
    assert!(resumed_p50 < fresh_p50, "resumed p50 {resumed_p50} ms, full p50 {fresh_p50} ms");
}

#[test]
fn bench_text_names_version_cipher_and_the_handshake_column() {
    let nginx = nginx_tls("on");
    let run =
        nodelay(&["bench", "-c", "2", "-n", "40", "--cacert", &certs().ca, &nginx.https_url("/body.txt")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = run.stdout();
    assert!(text.contains("TLS, certificate checked against --cacert, sessions resumed"), "{text}");
    assert!(text.contains("TLS handshake"), "{text}");
    assert!(squeeze(&text).contains("TLS TLSv1."), "{text}");
    assert!(text.contains("ALPN http/1.1"), "nginx answers ALPN: {text}");
}

// ---- what goes wrong -------------------------------------------------------------------------

#[test]
fn an_untrusted_issuer_is_named_with_what_to_do() {
    let peer = python_tls(&[]);
    let url = https(&peer, "/");
    fails_with(
        &["bench", "-n", "5", "-q", &url],
        1,
        &[
            &format!("certificate not trusted: issued by CN={CA_NAME}"),
            "system's trust store",
            "--cacert",
            "--insecure",
        ],
    );
    fails_with(&["doctor", &url], 1, &["certificate not trusted"]);
}

#[test]
fn a_self_signed_certificate_is_refused_unless_given_with_cacert() {
    let c = certs();
    let peer =
        python_peer("python_https_server.py", &["--cert", &c.self_signed_cert, "--key", &c.self_signed_key]);
    let url = https(&peer, "/");
    fails_with(&["bench", "-n", "5", "-q", &url], 1, &["self-signed by CN=self-signed localhost"]);
    let run = nodelay(&["bench", "-n", "5", "-q", "--cacert", &c.self_signed_cert, &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // Another CA does not vouch for it.
    fails_with(&["bench", "-n", "5", "-q", "--cacert", &c.ca, &url], 1, &["not in the --cacert file"]);
}

#[test]
fn a_name_mismatch_lists_the_certificate_names_and_sni_or_insecure_get_through() {
    let c = certs();
    let peer =
        python_peer("python_https_server.py", &["--cert", &c.wrong_name_cert, "--key", &c.wrong_name_key]);
    let url = https(&peer, "/");
    fails_with(
        &["bench", "-n", "5", "-q", "--cacert", &c.ca, &url],
        1,
        &["name mismatch: the certificate is for: other.example (not 127.0.0.1)", "--sni"],
    );
    // A wrong --sni against the right certificate lists every name it has, as typed.
    let right = python_tls(&[]);
    let sni = ["bench", "-n", "5", "-q", "--cacert", &c.ca, "--sni", "a.example", &https(&right, "/")];
    fails_with(&sni, 1, &["the certificate is for: localhost, 127.0.0.1 (not a.example)"]);
    let run = nodelay(&["bench", "-n", "5", "-q", "--cacert", &c.ca, "--sni", "other.example", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let run = nodelay(&["bench", "-n", "5", "--json", "--insecure", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(run.json()["settings"]["tls"]["trust"], "insecure");
    let text = nodelay(&["bench", "-n", "5", "-k", &url]).stdout();
    assert!(text.contains("certificate NOT checked (--insecure)"), "{text}");
}

#[test]
fn a_plain_http_server_on_an_https_url_and_the_reverse_are_named() {
    let plain = python_peer("python_http_server.py", &[]);
    let url = format!("https://127.0.0.1:{}/", plain.port);
    fails_with(&["bench", "-n", "5", "-q", &url], 1, &["the server answered in plain", "not TLS", "http://"]);
    let tls = python_tls(&[]);
    let http_url = tls.url("/");
    fails_with(&["bench", "-n", "5", "-q", &http_url], 1, &["speaks TLS on this port", &https(&tls, "/")]);
    fails_with(&["doctor", &http_url], 1, &["speaks TLS on this port"]);
    // nginx answers plain HTTP on its TLS port with a 400 page: the same advice.
    let nginx = nginx_tls("on");
    fails_with(&["bench", "-n", "5", "-q", &nginx.url("/body.txt")], 1, &["speaks TLS on this port"]);
}

/// An http:// URL on a TLS port is told at the first answer, in one line, not after a run
/// of failures (Python closes; nginx answers 400 "plain HTTP request was sent to HTTPS port").
#[test]
fn an_http_url_on_a_tls_port_stops_at_the_first_answer() {
    let python = python_tls(&[]);
    let nginx = nginx_tls("on");
    for url in [python.url("/"), nginx.url("/body.txt")] {
        let run = nodelay(&["bench", "-c", "2", "-d", "20s", &url]);
        let https_url = url.replacen("http://", "https://", 1);
        assert_eq!(run.code(), 1, "{}", run.stderr());
        assert_eq!(
            run.stderr().trim(),
            format!("nodelay: the server speaks TLS on this port: use {https_url}"),
            "{}",
            run.stdout()
        );
        assert!(!run.stdout().contains("responses in"), "no report: {}", run.stdout());
        assert!(run.elapsed.as_secs() < 5, "told after {:?}, not at the first answer", run.elapsed);
    }
}

/// compare stops the target the same way, at its first answer, and says why; the other
/// target is still compared.
#[test]
fn compare_of_an_http_url_on_a_tls_port_stops_at_the_first_answer() {
    let python = python_tls(&[]);
    let plain = python_peer("python_http_server.py", &["--disable-nagle"]);
    let run = nodelay(&["compare", "--rounds", "2", "-d", "2s", &plain.url("/"), &python.url("/")]);
    let all = squeeze(&format!("{}{}", run.stdout(), run.stderr()));
    let https_url = python.url("/").replacen("http://", "https://", 1);
    assert!(
        all.contains(&format!("B: not measured: the server speaks TLS on this port: use {https_url}")),
        "{all}"
    );
    assert!(!all.contains("closed_early"), "{all}");
    // A's two rounds take 4 s; B's would have taken 4 s more.
    assert!(run.elapsed.as_secs_f64() < 7.0, "told after {:?}, not at the first answer", run.elapsed);
}

#[test]
fn tls_options_are_validated_where_they_are_parsed() {
    let peer = python_tls(&[]);
    let url = https(&peer, "/");
    fails_with(
        &["bench", "-n", "1", "--cacert", "/nonexistent/ca.pem", &url],
        2,
        &["cannot read --cacert /nonexistent/ca.pem"],
    );
    let not_pem = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("not-a-cert.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    fails_with(
        &["bench", "-n", "1", "--cacert", not_pem.to_str().unwrap(), &url],
        2,
        &["holds no PEM certificate"],
    );
    // An endless file stops at the cap, not when memory runs out.
    fails_with(
        &["bench", "-n", "1", "--cacert", "/dev/zero", &url],
        2,
        &["--cacert /dev/zero is larger than 16 MiB: not a certificate file"],
    );
    fails_with(&["bench", "-n", "1", "--insecure", &peer.url("/")], 2, &["are for https:// URLs"]);
    fails_with(&["bench", "-n", "1", "--sni", "bad name!", &url], 2, &["not a valid TLS server name"]);
    // clap's own message for conflicting options, in one line.
    let run = nodelay(&["bench", "-n", "1", "--insecure", "--cacert", &certs().ca, &url]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("'--insecure' cannot be used with '--cacert <FILE>'"), "{}", run.stderr());
}

#[test]
fn compare_takes_https_urls_and_names_the_stalling_one() {
    let c = certs();
    let stalling = python_tls(&[]);
    let fixed = python_tls(&["--disable-nagle"]);
    let run = nodelay(&[
        "compare",
        "--json",
        "-q",
        "-c",
        "1",
        "-d",
        "300ms",
        "--rounds",
        "5",
        "--cacert",
        &c.ca,
        &https(&fixed, "/"),
        &https(&stalling, "/"),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("compare.schema.json", &report);
    let text = report.to_string();
    assert!(text.contains("TLSv1.3"), "each target's TLS is reported: {report:#}");
    let p50 = |index: usize| report["targets"][index]["run"]["latency_ms"]["p50"].as_f64().unwrap();
    assert!(p50(1) > 30.0 && p50(0) < 10.0, "{report:#}");
}

#[test]
fn the_html_report_of_an_https_run_shows_the_handshake_and_the_cipher() {
    let nginx = nginx_tls("on");
    let page = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tls-{}.html", std::process::id()));
    let run = nodelay(&[
        "bench",
        "-q",
        "-c",
        "2",
        "-n",
        "40",
        "--no-keepalive",
        "--cacert",
        &certs().ca,
        "--html",
        page.to_str().unwrap(),
        &nginx.https_url("/body.txt"),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("TLS handshake"), "the latency table has the column");
    assert!(html.contains("TLSv1."), "the cipher is among the figures");
    std::fs::remove_file(&page).ok();
}
