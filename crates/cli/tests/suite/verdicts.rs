//! Verdicts a user can act on (issue 31): never `healthy` for a slow response, error pages
//! named and failing the gate, findings ranked by what they cost. Real servers on loopback.

use crate::common;

use crate::common::*;

/// Four 10 ms pauses and two 20 ms pauses: every pause is under a stall's 25 ms, the
/// responses take 40 ms. Not healthy: the time the body spends pausing is named.
#[test]
fn a_body_in_short_pauses_that_add_up_is_slow_not_healthy() {
    for (pieces, pause_ms) in [("5", "10"), ("3", "20")] {
        let peer = python_peer("trickle_server.py", &["--pieces", pieces, "--pause-ms", pause_ms]);
        let run = nodelay(&["doctor", "--json", &peer.url("/")]);
        let report = run.json();
        let ids = finding_ids(&report);
        assert_eq!(ids[0], "slow-response-body", "{pieces} pieces: {report:#}");
        assert!(!ids.contains(&"healthy".to_string()), "{report:#}");
        assert_eq!(run.code(), 3, "{report:#}");
        let finding = &report["findings"][0];
        assert!(evidence(finding, "median pauses of 1 ms or more, added up") >= 35.0, "{finding:#}");
        assert_eq!(finding["proven"], true, "the quick-ACK experiment ran and left it: {finding:#}");
    }
}

/// nginx without upstream keep-alive in front of a server that holds its responses (Nagle):
/// advising upstream keep-alive alone would expose the stall the doctor proved on the hop.
/// The advice orders the fixes: the hop's Nagle first, then reuse connections.
#[test]
fn a_fix_that_would_expose_a_proven_stall_comes_after_the_stalls_fix() {
    let _alone = alone();
    let backend = python_peer("python_http_server.py", &[]);
    let nginx = common::nginx::Nginx::start(&common::nginx::proxy_to(backend.port, "1.0", false));
    let url = nginx.url("/");
    assert_eq!(nodelay(&["bench", "-q", "-c", "1", "-n", "300", "--no-server-view", &url]).code(), 0);
    let run = nodelay(&["doctor", "--json", &url]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    let hop = format!("127.0.0.1:{}", backend.port);
    assert_eq!(finding_ids(&report["hops"][0]["report"])[0], "server-nagle-delayed-ack", "{report:#}");
    let findings = report["findings"].as_array().unwrap();
    let churn = findings
        .iter()
        .find(|f| f["id"] == "upstream-connection-per-request")
        .unwrap_or_else(|| panic!("{report:#}"));
    let summary = churn["fix_summary"].as_str().unwrap();
    assert!(summary.starts_with(&format!("In this order: 1. fix the hop at {hop}")), "{churn:#}");
    assert!(summary.contains("2. then reuse connections"), "{churn:#}");
    assert_eq!(churn["fix"][0]["stack"], "Python http.server / socketserver", "{churn:#}");
    assert!(
        churn["proof"].as_array().unwrap().iter().any(|p| p["kind"] == "upstream-diagnosis"),
        "{churn:#}"
    );
    let text = squeeze(&nodelay(&["doctor", &url]).stdout());
    assert!(text.contains("Fix the hop first"), "{text}");
}

/// Error pages are a finding of their own and fail the gate; past a share of them the
/// verdict is about them alone. The curl to see one sends what the run sent.
#[test]
fn error_responses_are_a_finding_that_fails_the_gate() {
    let all = python_peer("trickle_server.py", &["--status", "500"]);
    let run = nodelay(&["doctor", "--json", "-b", r#"{"id":7}"#, &all.url("/orders")]);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!(finding_ids(&report), ["error-responses"], "{report:#}");
    assert_eq!(run.code(), 3, "{report:#}");
    let finding = &report["findings"][0];
    assert!(finding["title"].as_str().unwrap().contains("(500 ×"), "{finding:#}");
    let summary = finding["fix_summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(r#"`curl -i --data-binary '{{"id":7}}' {}`"#, all.url("/orders"))),
        "{summary}"
    );

    let some = python_peer("trickle_server.py", &["--status", "503", "--error-every", "4"]);
    let run = nodelay(&["doctor", &some.url("/")]);
    let text = squeeze(&run.stdout());
    assert_eq!(run.code(), 3, "{text}");
    assert!(text.contains("verdict: error-responses"), "{text}");
    assert!(text.contains("so the verdict is about them"), "{text}");
    assert!(!text.contains("healthy"), "{text}");

    // bench's suggestion shows the same request.
    let bench =
        nodelay(&["bench", "--json", "-c", "1", "-n", "40", "-m", "PUT", "-b", "x=1", &some.url("/")]);
    let prove: Vec<String> = bench.json()["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == "error-responses")
        .map(|s| s["prove"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prove, [format!("curl -i -X PUT --data-binary x=1 {}", some.url("/"))]);
}

/// A handler that sleeps 50 ms: the server view shows almost no CPU per request, so the
/// advice is that it waits and how to find on what, not "profile the handler".
#[test]
fn a_handler_that_waits_is_told_to_look_for_what_it_waits_on() {
    let sleeper = python_peer("work_server.py", &["--mode", "sleep", "--ms", "50"]);
    let report = nodelay(&["doctor", "--json", &sleeper.url("/")]).json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!(finding_ids(&report), ["slow-first-byte"], "{report:#}");
    let finding = &report["findings"][0];
    let summary = finding["fix_summary"].as_str().unwrap();
    assert!(summary.starts_with("The server waits: "), "{summary}");
    assert!(summary.contains("off-CPU"), "{summary}");
    assert!(!serde_json::to_string(finding).unwrap().contains("profile the handler"), "{finding:#}");
    assert_eq!(finding["fix"][0]["stack"], "Python", "the detected stack first: {finding:#}");
    assert!(evidence(finding, "CPU as a share of the time before its first byte") < 25.0, "{finding:#}");
    // Python's threads share one core (the GIL): its ceiling is one core's.
    let view = &report["server_view"];
    if view["ceiling_one_thread"] == false {
        assert_eq!(view["ceiling_one_core"], true, "{view:#}");
    }
}

/// A 50 ms handler that closes every connection: the handshakes cost a fraction of a
/// millisecond of each 50 ms request, so the verdict names only what costs the time.
#[test]
fn what_costs_nothing_is_left_out_of_the_verdict() {
    let peer = python_peer("python_http_server.py", &["--http10", "--disable-nagle", "--delay-ms", "50"]);
    let report = nodelay(&["doctor", "--json", "--no-server-view", &peer.url("/")]).json();
    assert_eq!(finding_ids(&report), ["slow-first-byte"], "{report:#}");
}

/// The fix list: the detected stack's fix first, with the real port; the other stacks behind
/// one line. A C server is known by the library it links (libevent), a Node one by its
/// command (it sends no Server header).
#[test]
fn the_fix_list_shows_the_detected_stack_and_the_real_port() {
    let evhttp = start_peer(&compiled("evhttp_server.c"), &["--body-bytes", "25086"]);
    let (node, node_args) = script_command("node", "node_net_server.js", &[]);
    let node_args: Vec<&str> = node_args.iter().map(String::as_str).collect();
    let node = start_peer(&node, &node_args);
    for (peer, stack) in [(&evhttp, "libevent evhttp"), (&node, "Node.js net")] {
        let run = nodelay(&["doctor", &peer.url("/")]);
        let text = squeeze(&run.stdout());
        assert!(text.contains("server-nagle-delayed-ack (proven"), "{text}");
        assert!(text.contains(&format!("{stack} ")), "{stack}: {text}");
        assert!(text.contains("(your server's stack)"), "{stack}: {text}");
        assert!(text.contains("other stacks: --json lists them)"), "{stack}: {text}");
        assert!(text.contains(&format!("nodelay fix :{}", peer.port)), "{stack}: {text}");
        assert!(!text.contains(":PORT"), "{stack}: {text}");
        assert!(!text.contains("Erlang gen_tcp"), "the other stacks are folded: {text}");
    }
}
