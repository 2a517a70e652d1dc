//! The generator itself: the exact bytes it puts on the wire (so a server sees what the
//! docs/bench.md says it sees), curl's `-H 'Name:'` removal, and `--busy-poll` really spinning.

use crate::common::{OK_RESPONSE, nodelay, python_peer, read_request_head, squeeze, validate_against_schema};
use std::io::Write;
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// The head of the one request `nodelay bench -n 1` sends with these extra arguments.
fn request_head(extra: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let head = read_request_head(&mut stream);
        let _ = stream.write_all(OK_RESPONSE);
        sender.send(String::from_utf8_lossy(&head).into_owned()).unwrap();
    });
    let url = format!("http://127.0.0.1:{port}/path?q=1");
    let args: Vec<&str> = ["bench", "-q", "-n", "1", "-c", "1"]
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .chain([url.as_str()])
        .collect();
    let run = nodelay(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let head = received.recv_timeout(Duration::from_secs(10)).expect("the server saw a request");
    head.replace(&port.to_string(), "PORT")
}

#[test]
fn the_request_on_the_wire_is_exactly_the_documented_one() {
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        request_head(&[]),
        format!("GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nUser-Agent: nodelay/{version}\r\n\r\n")
    );
    assert_eq!(
        request_head(&["-H", "X-A: b", "-H", "User-Agent:"]),
        "GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nX-A: b\r\n\r\n",
        "'User-Agent:' removes nodelay's own header, as curl's -H 'Name:' does"
    );
    assert_eq!(
        request_head(&["-H", "user-agent: wrk"]),
        "GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nuser-agent: wrk\r\n\r\n"
    );
}

/// User plus system CPU seconds of `nodelay bench ARGS`, from bash's `times` (its children),
/// so the figure does not come from nodelay itself. Without the server view: its sampler reads
/// /proc/net/tcp every 2 ms, which costs more the more sockets the machine has (CI leaves
/// thousands in TIME-WAIT), and this test is about the generator.
fn bench_cpu_seconds(args: &str) -> f64 {
    let script = format!("\"$NODELAY\" bench -q --no-server-view {args} >/dev/null || exit 1; times");
    let output = Command::new("bash")
        .args(["-c", &script])
        .env("NODELAY", env!("CARGO_BIN_EXE_nodelay"))
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    // `times` prints the shell's user and system time, then its children's: "0m0.012s 0m0.004s".
    let children = text.lines().last().expect("times printed two lines");
    children
        .split_whitespace()
        .map(|field| {
            let (minutes, seconds) = field.trim_end_matches('s').split_once('m').expect("NmS.SSSs");
            minutes.parse::<f64>().unwrap() * 60.0 + seconds.parse::<f64>().unwrap()
        })
        .sum()
}

#[test]
fn busy_poll_spins_a_core_where_the_default_sleeps() {
    // Nagle on: every response stalls ~40 ms, so the generator has almost nothing to do.
    let peer = python_peer("python_http_server.py", &[]);
    let run = format!("-c 1 -d 1s {}", peer.url("/"));
    let sleeping = bench_cpu_seconds(&run);
    let spinning = bench_cpu_seconds(&format!("--busy-poll {run}"));
    // ~23 responses, each followed by 50 µs of spinning: about a millisecond in all.
    let briefly = bench_cpu_seconds(&format!("--busy-poll=50us {run}"));
    assert!(sleeping < 0.15, "a sleeping generator used {sleeping:.3} s of CPU in a 1 s run");
    assert!(spinning > 0.3, "a busy-polling generator used only {spinning:.3} s of CPU in a 1 s run");
    assert!(briefly < 0.15, "spinning 50 µs after each event used {briefly:.3} s of CPU in a 1 s run");

    let report = nodelay(&["bench", "--json", "--busy-poll", "-c", "1", "-n", "5", &peer.url("/")]).json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["busy_poll"], true);
    assert!(report["settings"]["busy_poll_after_us"].is_null(), "--busy-poll alone never sleeps");
    let bounded =
        nodelay(&["bench", "--json", "--busy-poll=50us", "-c", "1", "-n", "2", &peer.url("/")]).json();
    validate_against_schema("bench.schema.json", &bounded);
    assert_eq!(bounded["settings"]["busy_poll_after_us"], 50.0);
    let refused = nodelay(&["bench", "--busy-poll=0us", &peer.url("/")]);
    assert_eq!(refused.code(), 2);
    assert!(refused.stderr().contains("use 1us to 1s, or always"), "{}", refused.stderr());
    assert_eq!(report["requests_completed"], 5);
    // Spinning is on purpose: not a generator saturated by the load.
    let ids: Vec<&str> =
        report["suggestions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&"generator-saturated"), "{ids:?}");
    let text = nodelay(&["bench", "--busy-poll", "-c", "1", "-n", "2", &peer.url("/")]).stdout();
    assert!(squeeze(&text).contains("busy-polling (a whole core per thread)"), "{text}");
}
