//! The rest of the idle-CPU latency family, each against real servers: a listen queue that
//! overflows (`doctor -c N`), `Expect: 100-continue` left unanswered, keep-alive connections
//! closed when idle (`--idle-probe`), and local ports exhausted by TIME-WAIT; and that none
//! of these findings appears on a healthy server. The tests whose figures are times (SYN
//! retransmissions, curl's 1 s, idle timeouts, the doctor's budget) run one at a time: the
//! backlog peers keep a core busy, and the others' timers would measure that.

use crate::common;

use crate::common::{
    Peer, alone, bench_in_own_network_namespace, evidence, finding, finding_ids, node_peer, nodelay,
    python_peer, validate_against_schema,
};
use std::process::Command;

/// The listen backlog `ss` shows for the peer's listening socket (its Send-Q): a check of
/// nodelay's own reading that does not go through nodelay.
fn backlog_by_ss(peer: &Peer) -> u64 {
    let output = Command::new("ss")
        .args(["-Hltn", &format!("sport = :{}", peer.port)])
        .output()
        .expect("run ss (scripts/setup.sh installs iproute2)");
    let text = String::from_utf8_lossy(&output.stdout);
    let columns: Vec<&str> = text.split_whitespace().collect();
    // State Recv-Q Send-Q Local Peer
    columns.get(2).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("ss printed {text:?}"))
}

fn doctor_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let run = nodelay(&all);
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    report
}

/// A listen queue that overflows at 20 connections: found first, proven both ways (one
/// connection at a time opens without a wait; the kernel counted the overflows), with the
/// backlog `ss` also shows.
fn assert_backlog_overflow_proven(peer: &Peer) {
    assert_eq!(backlog_by_ss(peer), 2);
    let report = doctor_json(&["-c", "20", &peer.url("/")]);
    let overflow = finding(&report, "listen-backlog-overflow");
    // First, unless a slow first byte costs each request more: findings are ranked by what
    // they cost a request. A server that closes its connections (Node under this load: ~1200
    // opens for 20 connections) pays the 1 s waits on a share of its opens, which a busy
    // event loop's 13 ms first byte can match (15 waits in 1199 opens: 12.5 ms a request).
    let ids = finding_ids(&report);
    if ids[0] != "listen-backlog-overflow" {
        let waited = evidence(overflow, "new connections that waited");
        let per_request_ms = waited / evidence(overflow, "connections opened") * 1000.0;
        let slow = finding(&report, "slow-first-byte");
        assert_eq!(ids[0], "slow-first-byte", "{report:#}");
        assert!(evidence(slow, "median first byte") >= per_request_ms, "{report:#}");
    }
    assert_eq!(overflow["proven"], true, "{overflow:#}");
    assert_eq!(evidence(overflow, "the listening socket's backlog"), 2.0);
    assert!(evidence(overflow, "handshakes dropped on a full accept queue") > 0.0, "{overflow:#}");
    // The kernel drops the SYN (a wait at its retransmission times) or, when the queue fills
    // between the two, the handshake's last ACK (a wait off them): either is counted.
    assert!(evidence(overflow, "new connections that waited") >= 1.0, "{overflow:#}");
    let sequential = overflow["proof"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "experiment")
        .unwrap_or_else(|| panic!("no one-at-a-time proof in {overflow:#}"));
    assert_eq!(sequential["removed"], true, "{sequential:#}");
    assert_eq!(report["phases"][0]["description"], "baseline: keep-alive, 20 connections");
    assert_eq!(report["server_view"]["listen_queue"]["backlog"], 2);
}

/// The same server with a deep queue, or asked one connection at a time: no overflow.
fn assert_no_backlog_finding(report: &serde_json::Value) {
    assert!(!finding_ids(report).contains(&"listen-backlog-overflow".to_string()), "{report:#}");
    assert_eq!(report["phases"][0]["slow_opens"], 0, "{report:#}");
}

#[test]
fn a_python_listen_2_server_overflows_at_20_connections_and_the_doctor_proves_it() {
    let _alone = alone();
    let peer = python_peer("backlog_server.py", &["--backlog", "2", "--work-ms", "2"]);
    assert_backlog_overflow_proven(&peer);
    // A budget of 1 s: the baseline (40 % of it) ends before the SYNs' first retry, with the
    // dropped connects unanswered, and those are the sign.
    let report = doctor_json(&["-c", "20", "--budget", "1s", &peer.url("/")]);
    let overflow = finding(&report, "listen-backlog-overflow");
    assert_eq!(overflow["proven"], true, "{overflow:#}");
    assert!(report["phases"][0]["unanswered_opens"].as_u64().unwrap() >= 1, "{report:#}");
    assert!(
        evidence(overflow, "new connections still unanswered when the baseline ended") >= 1.0,
        "{overflow:#}"
    );
    // One connection (the default -c 1) never fills a queue of two.
    assert_no_backlog_finding(&doctor_json(&[&peer.url("/")]));
}

#[test]
fn a_node_server_with_backlog_2_and_a_busy_event_loop_overflows_too() {
    let _alone = alone();
    let peer = node_peer("node_backlog_server.js", &["--backlog", "2", "--work-ms", "3"]);
    assert_backlog_overflow_proven(&peer);
}

#[test]
fn a_deep_listen_queue_does_not_overflow_at_20_connections() {
    let _alone = alone();
    let peer = python_peer("backlog_server.py", &["--backlog", "128", "--work-ms", "2"]);
    let report = doctor_json(&["-c", "20", &peer.url("/")]);
    assert_no_backlog_finding(&report);
    assert_eq!(report["server_view"]["listen_queue"]["backlog"], 128);
}

/// Run inside a network namespace of its own (`unshare -n`), so the narrowed port range and
/// `tcp_tw_reuse=0` never touch the machine's: a line-protocol server, and a bench that opens
/// a new connection per request and closes it first (so its ports go to TIME-WAIT).
const PORT_EXHAUSTION: &str = r#"
sysctl -q -w net.ipv4.ip_local_port_range="40000 40049"
sysctl -q -w net.ipv4.tcp_tw_reuse=0
exec 3< <(exec node "$PEER")
server=$!
read -r _ port <&3
"$NODELAY" bench --json --no-keepalive -n 200 -c 1 --send 'get x\n' --frame line "tcp://127.0.0.1:$port" || true
kill "$server"
"#;

#[test]
fn a_narrowed_port_range_runs_out_and_bench_names_the_time_wait_sockets_and_the_fix() {
    let report = bench_in_own_network_namespace(
        PORT_EXHAUSTION,
        &[("PEER", common::peer_script("node_line_server.js"))],
    );
    // 50 ports, one of them the server's own: at most 49 connections, then no port is free.
    let exhausted = report["errors"]["ports_exhausted"].as_u64().unwrap();
    let completed = report["requests_completed"].as_u64().unwrap();
    assert!(exhausted >= 100 && completed <= 50 && exhausted + completed == 200, "{report:#}");
    let ports = &report["local_ports"];
    assert_eq!((ports["range_low"].as_u64(), ports["range_high"].as_u64()), (Some(40000), Some(40049)));
    assert_eq!(ports["tcp_tw_reuse"], 0);
    assert!(ports["time_wait_to_target"].as_u64().unwrap() >= 40, "{ports:#}");
    let ids: Vec<&str> =
        report["suggestions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"ephemeral-port-exhaustion"), "{ids:?}");
    assert!(report["error_examples"]["ports_exhausted"].as_str().unwrap().contains("EADDRNOTAVAIL"));
}

/// curl's own time for a 2000-byte POST that asks `Expect: 100-continue`: the ground truth
/// the doctor's probe must agree with.
fn curl_expect_seconds(peer: &Peer, body: &std::path::Path) -> f64 {
    let output = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{time_total}", "-H", "Expect: 100-continue", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .arg(peer.url("/up"))
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&output.stdout).trim().parse().expect("curl's time_total")
}

fn body_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("nodelay-{name}-{}", std::process::id()));
    std::fs::write(&path, vec![b'x'; 2000]).unwrap();
    path
}

#[test]
fn python_http_server_at_http_1_0_ignores_expect_and_the_doctor_says_so() {
    let _alone = alone();
    let peer = python_peer("expect_server.py", &["--protocol", "HTTP/1.0"]);
    let body = body_file("expect-silent");
    assert!(curl_expect_seconds(&peer, &body) >= 0.9, "curl waits its 1 s on this server");
    let report = doctor_json(&["-b", &format!("@{}", body.display()), &peer.url("/up")]);
    let wait = finding(&report, "expect-100-continue-wait");
    assert_eq!(wait["proven"], true);
    assert!(evidence(wait, "silence after a head with Expect") >= 1100.0, "{wait:#}");
    assert_eq!(report["expect_continue"]["answer"], "silence");
    assert_eq!(report["expect_continue"]["final_status"], 200);
    assert!(
        wait["fix"].as_array().unwrap().iter().any(|f| f["how"].as_str().unwrap().contains("-H 'Expect:'"))
    );
}

#[test]
fn servers_that_answer_100_continue_are_not_flagged() {
    let _alone = alone();
    let body = body_file("expect-answered");
    // Python's http.server at HTTP/1.1 (handle_expect_100), and Node's http (automatic).
    for peer in [
        python_peer("expect_server.py", &["--protocol", "HTTP/1.1"]),
        node_peer("node_http_server.js", &["--body-bytes", "13"]),
    ] {
        assert!(curl_expect_seconds(&peer, &body) < 0.5, "curl does not wait here");
        let report = doctor_json(&["-b", &format!("@{}", body.display()), &peer.url("/up")]);
        assert!(!finding_ids(&report).contains(&"expect-100-continue-wait".to_string()), "{report:#}");
        assert_eq!(report["expect_continue"]["answer"], "continue", "{report:#}");
        assert!(report["expect_continue"]["answered_after_ms"].as_f64().unwrap() < 100.0);
    }
}

/// The doctor's idle probe on a peer, with a budget that leaves it a few seconds.
fn idle_probe(peer: &Peer, budget: &str) -> serde_json::Value {
    doctor_json(&["--idle-probe", "--budget", budget, &peer.url("/")])
}

#[test]
fn an_idle_timeout_is_measured_and_said_announced_or_not() {
    let _alone = alone();
    // Node with a 2 s keepAliveTimeout announces Keep-Alive: timeout=2 and closes a second
    // after it (Node 20's buffer); Python's http.server with a 2 s handler timeout closes after
    // 2 s and announces nothing.
    let node = node_peer("node_idle_server.js", &["--idle-ms", "2000"]);
    let python = python_peer("idle_close_server.py", &["--idle-s", "2"]);
    for (peer, announced, low_s, high_s) in [(&node, Some(2), 1.9, 3.6), (&python, None, 1.9, 2.5)] {
        let report = idle_probe(peer, "7s");
        let idle = &report["idle_keep_alive"];
        let closed = idle["closed_after_s"].as_f64().unwrap_or_else(|| panic!("not closed: {report:#}"));
        assert!((low_s..high_s).contains(&closed), "{idle:#}");
        assert_eq!(idle["announced_timeout_s"].as_u64(), announced);
        let finding = finding(&report, "keepalive-idle-close");
        assert_eq!(finding["proven"], true);
        let said =
            if announced.is_some() { "it announces Keep-Alive: timeout=2" } else { "does not announce it" };
        assert!(finding["title"].as_str().unwrap().contains(said), "{finding:#}");
        assert!(report["elapsed_s"].as_f64().unwrap() <= 7.2, "within the budget");
    }
}

#[test]
fn a_server_that_keeps_idle_connections_is_not_flagged_and_the_probe_stays_in_the_budget() {
    let _alone = alone();
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let report = idle_probe(&peer, "3s");
    assert_eq!(finding_ids(&report), ["healthy"], "{report:#}");
    let idle = &report["idle_keep_alive"];
    assert!(idle["closed_after_s"].is_null(), "{idle:#}");
    assert!(idle["waited_s"].as_f64().unwrap() >= 0.4);
    assert!(report["elapsed_s"].as_f64().unwrap() <= 3.2);
    // Without --idle-probe nothing is left idle.
    assert!(doctor_json(&[&peer.url("/")])["idle_keep_alive"].is_null());
}
