//! `nodelay watch` on loopback against real servers: it names a Nagle server's process and
//! port within 5 s of the traffic starting (by port and by PID, and through --prometheus),
//! stays quiet on a healthy twin, names a split-writing client as the client side, falls back
//! to the sock_diag-only mode without capture rights, refuses a bad interface, and reports an
//! unused port honestly. From the kernel (`--source ebpf`, and auto where allowed) it names
//! the server of connections opened before it started, a split-writing client as the client,
//! counts in Prometheus, and says why it falls back to a capture. Every watch is bounded by --duration and stopped by SIGINT once the
//! test saw what it waits for; every JSON line is checked against schema/watch.schema.json.

use crate::common;

use crate::common::wan::Link;
use crate::common::{Peer, nodelay, port_nobody_listens_on, python_peer, validate_against_schema};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a watch in these tests may run: each is stopped long before.
const WATCH_LIMIT: &str = "30";

/// A running `nodelay watch --json-lines`.
struct Watch {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
    events: Vec<Value>,
}

impl Watch {
    fn start(args: &[&str]) -> Watch {
        Watch::start_as(Command::new(env!("CARGO_BIN_EXE_nodelay")), args)
    }

    fn start_as(mut command: Command, args: &[&str]) -> Watch {
        let mut child = command
            .arg("watch")
            .args(args)
            .args(["--json-lines", "--duration", WATCH_LIMIT])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("nodelay watch");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Watch { child, lines, events: Vec::new() }
    }

    /// The next event; panics if watch ended first.
    fn next(&mut self) -> Value {
        let mut line = String::new();
        let n = self.lines.read_line(&mut line).expect("watch's stdout");
        assert!(n > 0, "watch ended; its events: {:#?}", self.events);
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        validate_against_schema("watch.schema.json", &event);
        self.events.push(event.clone());
        event
    }

    /// Events until one of kind `kind`, which it returns.
    fn until(&mut self, kind: &str) -> Value {
        loop {
            let event = self.next();
            if event["event"] == kind {
                return event;
            }
            assert_ne!(event["event"], "final", "no {kind} before the end: {:#?}", self.events);
        }
    }

    /// Events until one of kind `kind` for which `wanted` holds, among the next ten of that
    /// kind (a summary comes once a second: ten seconds at most).
    fn until_matching(&mut self, kind: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..10 {
            let event = self.until(kind);
            if wanted(&event) {
                return event;
            }
        }
        panic!("no {kind} as wanted in ten: {:#?}", self.events)
    }

    /// Ctrl-C: the final summary, and the exit status.
    fn stop(&mut self) -> (Value, i32) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let last = loop {
            let event = self.next();
            if event["event"] == "final" || event["event"] == "final_survey" {
                break event;
            }
        };
        let status = self.child.wait().unwrap();
        (last, status.code().expect("exited, not killed"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `count` GET requests on one keep-alive connection (curl reuses it), each answered; how
/// long they took in all.
fn curl(port: u16, count: usize) -> Duration {
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let output = Command::new("curl")
        .args(["-s", "--max-time", "20"])
        .args(std::iter::repeat_n(url.as_str(), count))
        .output()
        .expect("curl");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.stdout.len(), 13 * count, "{}", String::from_utf8_lossy(&output.stdout));
    started.elapsed()
}

fn assert_capture_mode(mode: &Value) {
    assert_eq!(mode["event"], "mode", "{mode}");
    assert_eq!(mode["mode"], "capture", "{mode}");
}

#[test]
fn a_nagle_server_is_named_by_process_and_port_within_5_s() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let port = peer.port.to_string();
    let mut watch = Watch::start(&["-i", "lo", "--port", &port]);
    assert_capture_mode(&watch.next());
    // Within 5 s of the stalls: timed from the end of the exchanges, which a busy machine
    // stretches (20 responses of 40 ms each take 0.8 s on an idle one; a CI run's finding
    // came 8.8 s after curl started).
    let curl_took = curl(peer.port, 20);
    let exchanges_ended = Instant::now();
    let finding = watch.until("finding");
    let after_exchanges = exchanges_ended.elapsed();
    assert!(after_exchanges < Duration::from_secs(5), "{after_exchanges:?} after curl's {curl_took:?}");
    assert_eq!(finding["finding"], "server-nagle-delayed-ack", "{finding:#}");
    assert_eq!(finding["side"], "server");
    assert_eq!(finding["process"]["command"], "python3", "{finding:#}");
    assert_eq!(finding["process"]["pid"], peer.pid(), "{finding:#}");
    assert_eq!(finding["holder_is_local"], true);
    assert_eq!(finding["port"], peer.port);
    let mean = finding["mean_stall_ms"].as_f64().unwrap();
    assert!((30.0..100.0).contains(&mean), "the client's 40 ms delayed ACK: {finding:#}");
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "stalls found");
    let stalls = &last["findings"][0];
    assert_eq!(stalls["finding"], "server-nagle-delayed-ack");
    // The first exchange of a connection is quick-ACKed: the rest stall.
    assert!(stalls["stalls"].as_u64().unwrap() >= 15, "{last:#}");
    assert_eq!(stalls["exchanges"], 20, "{last:#}");
    assert_eq!(last["packets"]["dropped"], 0);
}

/// The lines of `ss -Htn ARGS` (no header).
fn ss(args: &[&str]) -> Vec<String> {
    let output = Command::new("ss").arg("-Htn").args(args).output().expect("ss");
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect()
}

#[test]
fn watch_started_on_open_connections_names_the_server_by_its_listening_port() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let url = format!("http://127.0.0.1:{}/", peer.port);
    // Three keep-alive connections exchanging before watch starts (curl reuses each; a
    // response takes the client's 40 ms delayed ACK, so 150 last about 6.6 s).
    let mut clients: Vec<Child> = (0..3)
        .map(|_| {
            Command::new("curl")
                .args(["-s", "-o", "/dev/null", "--max-time", "30"])
                .args(std::iter::repeat_n(url.as_str(), 150))
                .spawn()
                .expect("curl")
        })
        .collect();
    // Ground truth from ss: python3 listens on the port, and the three connections are open.
    let port_filter = format!("sport = :{}", peer.port);
    let listening = Command::new("ss").args(["-Htlnp", &port_filter]).output().expect("ss").stdout;
    assert!(String::from_utf8_lossy(&listening).contains(&format!("pid={}", peer.pid())));
    let deadline = Instant::now() + Duration::from_secs(10);
    while ss(&["state", "established", &format!("dport = :{}", peer.port)]).len() < 3 {
        assert!(Instant::now() < deadline, "the clients did not connect");
        std::thread::yield_now();
    }
    let mut watch = Watch::start(&["-i", "lo", "--port", &peer.port.to_string()]);
    assert_capture_mode(&watch.next());
    let finding = watch.until("finding");
    let (last, code) = watch.stop();
    for client in &mut clients {
        let _ = client.kill();
        let _ = client.wait();
    }
    assert_eq!(code, 3, "{last:#}");
    // Every stall is the server's, named by its process and its listening port: the first
    // packet watch saw of a connection (often a response) does not decide who serves.
    assert_all_the_servers(&finding, &last, &peer);
}

/// The finding event and every finding of the final summary: the local server's delayed-ACK
/// stall, by its pid and its listening port.
fn assert_all_the_servers(finding: &Value, last: &Value, peer: &Peer) {
    for found in std::iter::once(finding).chain(last["findings"].as_array().unwrap()) {
        let named = (&found["finding"], &found["side"], &found["port"], &found["process"]["pid"]);
        let expected =
            (&"server-nagle-delayed-ack".into(), &"server".into(), &peer.port.into(), &peer.pid().into());
        assert_eq!(named, expected, "{found:#}");
        assert_eq!(found["holder_is_local"], true, "{found:#}");
    }
}

/// A server that accepts late: the client's connection completes its handshake and sends
/// its request while the server accepts nothing, and watch starts then (it sees neither the
/// SYN nor the request). The server accepts once watch runs and answers with its Nagle stall.
/// The holds are the server's, named by its process and its listening port: before, the
/// first data watch saw (the response) made the server's end the client's.
#[test]
fn a_server_that_accepts_late_is_named_as_the_local_server() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &["--accept-on-sigusr1"]);
    let port = peer.port.to_string();
    let client = std::thread::spawn(move || curl(peer.port, 20));
    // Ground truth from ss: the connection waits in the listener's accept queue (its Recv-Q),
    // and its request waits unread.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listener = ss(&["state", "listening", &format!("sport = :{port}")]);
        let queued = ss(&["state", "established", &format!("sport = :{port}")]);
        let recv_q =
            |lines: &[String]| lines.first().and_then(|l| l.split_whitespace().next().map(str::to_string));
        if recv_q(&listener).as_deref() == Some("1") && recv_q(&queued).is_some_and(|q| q != "0") {
            break;
        }
        assert!(Instant::now() < deadline, "the client's request never queued: {listener:?} {queued:?}");
        std::thread::yield_now();
    }
    let mut watch = Watch::start(&["-i", "lo", "--port", &port]);
    assert_capture_mode(&watch.next());
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(peer.pid() as i32, libc::SIGUSR1) }, 0);
    let finding = watch.until("finding");
    client.join().unwrap();
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "{last:#}");
    assert_all_the_servers(&finding, &last, &peer);
}

#[test]
fn two_servers_stalling_at_once_are_each_named_by_their_own_process_and_port() {
    let _alone = common::alone();
    let (first, second) =
        (python_peer("python_http_server.py", &[]), python_peer("python_http_server.py", &[]));
    let ports = format!("{},{}", first.port, second.port);
    // The ground truth is the test's precondition: each client's 15 requests waited (14 of
    // them for the delayed ACK). In a clean clone's CI run, both clients' 30 exchanges took
    // 2 s in all and watch saw no stall; whether they stalled was not known. A second try
    // when either client was not held 10 times 30 ms.
    let (last, code) = (1..=2)
        .map(|_| {
            let mut watch = Watch::start(&["-i", "lo", "--port", &ports]);
            assert_capture_mode(&watch.next());
            // Both at once, each on its own keep-alive connection.
            let clients = [first.port, second.port].map(|port| std::thread::spawn(move || curl(port, 15)));
            let took = clients.map(|client| client.join().unwrap());
            (watch.stop(), took)
        })
        .inspect(|(_, took)| eprintln!("the clients took {took:?}"))
        .find(|(_, took)| took.iter().all(|t| *t >= Duration::from_millis(10 * 30)))
        .map(|(stopped, _)| stopped)
        .unwrap_or_else(|| panic!("ground truth: the servers did not stall in two tries"));
    assert_eq!(code, 3, "{last:#}");
    let mut named: Vec<(u64, u64, String)> = last["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (f["port"].as_u64().unwrap(), f["process"]["pid"].as_u64().unwrap(), f["finding"].to_string())
        })
        .collect();
    named.sort();
    let mut expected: Vec<(u64, u64, String)> = [&first, &second]
        .iter()
        .map(|peer| (u64::from(peer.port), u64::from(peer.pid()), "\"server-nagle-delayed-ack\"".to_string()))
        .collect();
    expected.sort();
    assert_eq!(named, expected, "{last:#}");
}

#[test]
fn the_text_names_the_process_port_and_finding_in_one_sentence() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let port = peer.port.to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(["watch", "-i", "lo", "--port", &port, "--duration", WATCH_LIMIT])
        .env_remove("COLUMNS")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    stdout.read_line(&mut text).unwrap();
    assert!(text.starts_with("watch: live capture on lo, TCP on port"), "{text}");
    // The mode line goes on until the line that ends it.
    while !text.contains("Ctrl-C for the summary") {
        stdout.read_line(&mut text).unwrap();
    }
    curl(peer.port, 20);
    while !text.contains("responses,") {
        assert!(stdout.read_line(&mut text).unwrap() > 0, "{text}");
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    stdout.read_to_string(&mut text).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{text}");
    // Not a terminal: each line whole (grep gets the finding with its next command).
    let finding = text.lines().find(|line| line.contains("responses,")).unwrap();
    assert!(finding.contains(&format!("python3 (PID {}, fd ", peer.pid())), "{text}");
    assert!(finding.contains(&format!("→ 127.0.0.1:{port}: server-nagle-delayed-ack in ")), "{text}");
    assert!(finding.contains(" of 20 responses, "), "{text}");
    assert!(
        finding
            .ends_with(&format!("; next: nodelay inspect :{port}, then nodelay fix :{port} or nodelay exec")),
        "{text}"
    );
    assert!(text.lines().any(|line| line.contains("0 dropped by the kernel")), "{text}");
}

#[test]
fn pid_follows_that_process_and_prometheus_counts_its_stalls() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let pid = peer.pid().to_string();
    let mut watch = Watch::start(&["-i", "lo", "--pid", &pid, "--prometheus", "127.0.0.1:0"]);
    let mode = watch.next();
    assert_capture_mode(&mode);
    assert_eq!(mode["ports"][0], peer.port, "its listening port: {mode}");
    let url = mode["metrics_url"].as_str().expect("the metrics' address").to_string();
    curl(peer.port, 10);
    let finding = watch.until("finding");
    assert_eq!(finding["process"]["pid"], peer.pid(), "{finding:#}");
    let metrics = http_get(&url);
    let value = |series: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|line| line.starts_with(series))
            .unwrap_or_else(|| panic!("{series}: {metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    // By process, PID, listening port and side: "N of M exchanges stalled, S seconds held".
    let labels =
        format!("process=\"python3\",pid=\"{}\",port=\"{}\",side=\"server\"}}", peer.pid(), peer.port);
    let stalls = value(&format!("nodelay_watch_stalls_total{{finding=\"server-nagle-delayed-ack\",{labels}"));
    assert!(stalls >= finding["stalls"].as_f64().unwrap(), "{metrics}");
    let held =
        value(&format!("nodelay_watch_held_seconds_total{{finding=\"server-nagle-delayed-ack\",{labels}"));
    assert!((0.03 * stalls..0.1 * stalls).contains(&held), "about 40 ms a stall: {metrics}");
    let exchanges = value(&format!("nodelay_watch_exchanges_total{{{labels}"));
    assert!(exchanges >= stalls && exchanges <= 10.0, "{metrics}");
    assert!(metrics.contains("nodelay_watch_mode_info{mode=\"capture\"} 1"), "{metrics}");
    let (_, code) = watch.stop();
    assert_eq!(code, 3);
}

/// The body of a GET over HTTP/1.0.
fn http_get(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (address, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or(response)
}

#[test]
fn healthy_traffic_gives_no_finding() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let port = peer.port.to_string();
    let mut watch = Watch::start(&["-i", "lo", "--port", &port]);
    assert_capture_mode(&watch.next());
    curl(peer.port, 20);
    let (last, code) = watch.stop();
    assert_eq!(last["findings"], Value::Array(Vec::new()), "{last:#}");
    assert_eq!(last["exchanges"], 20, "the traffic was seen: {last:#}");
    assert!(watch.events.iter().all(|event| event["event"] != "finding"), "{:#?}", watch.events);
    assert_eq!(code, 0);
}

/// A client that writes each request's head and body in two sends, Nagle on (as pyeapi,
/// excon and http.rb did), 10 times on one keep-alive connection, then keeps it until its
/// stdin closes.
const SPLIT_CLIENT: &str = r#"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for _ in range(10):
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
    s.sendall(b"hello")
    response = b""
    while not response.endswith(b"Hello, world!"):
        response += s.recv(4096)
sys.stdin.read()
"#;

#[test]
fn a_split_writing_client_is_named_as_the_client_side() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let port = peer.port.to_string();
    let mut watch = Watch::start(&["-i", "lo", "--port", &port]);
    assert_capture_mode(&watch.next());
    let mut client =
        Command::new("python3").args(["-c", SPLIT_CLIENT, &port]).stdin(Stdio::piped()).spawn().unwrap();
    let client_pid = client.id();
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "client-nagle-delayed-ack", "{finding:#}");
    assert_eq!(finding["side"], "client");
    assert_eq!(finding["process"]["pid"], client_pid, "the client, not the server: {finding:#}");
    assert_eq!(finding["holder_is_local"], true);
    drop(client.stdin.take());
    assert!(client.wait().unwrap().success());
    let (last, code) = watch.stop();
    assert!(last["findings"].as_array().unwrap().iter().all(|f| f["side"] == "client"), "{last:#}");
    assert_eq!(code, 3);
}

/// Over a real 40 ms path (nodelay-path) the Nagle server holds its body until the
/// client's ACK of the head: one round trip if the client ACKs at once (docs/field-notes.md §9), 40 ms
/// more if it delays it. Watch, in the server's network namespace, names the server and its
/// port, and its hold accounts for the client's time beyond the round trip.
#[test]
fn over_a_40_ms_path_watch_in_the_servers_namespace_names_the_server() {
    let _alone = common::alone();
    let link = Link::up("40ms", &[]);
    let peer = link.python_server("python_http_server.py", &[]);
    let port = peer.port.to_string();
    // The server's namespace, entered through the server itself.
    let mut command = Command::new("nsenter");
    command.arg(format!("--net=/proc/{}/ns/net", peer.pid())).arg(env!("CARGO_BIN_EXE_nodelay"));
    let mut watch = Watch::start_as(command, &["--source", "capture", "-i", "any", "--port", &port]);
    assert_capture_mode(&watch.next());
    let started = Instant::now();
    let median_ms = link.client_median_ms(peer.port, 10);
    assert!(median_ms > 70.0, "two round trips per response: {median_ms} ms");
    let finding = watch.until("finding");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(finding["side"], "server", "{finding:#}");
    assert_eq!(finding["process"]["pid"], peer.pid(), "{finding:#}");
    assert_eq!(finding["process"]["command"], "python3");
    assert_eq!(finding["server"], format!("{}:{port}", common::wan::SERVER_IP));
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "{last:#}");
    // Whether the client ACKed the head at once (a hold of one round trip) or after its
    // 40 ms timer, a response takes the request's round trip plus the hold.
    let worst = &last["findings"][0];
    assert!(worst["finding"].as_str().unwrap().starts_with("server-nagle-"), "{last:#}");
    let hold_ms = worst["mean_stall_ms"].as_f64().unwrap();
    assert!((median_ms - 40.0 - hold_ms).abs() < 15.0, "median {median_ms} ms, hold {hold_ms} ms: {last:#}");
}

/// `setpriv` runs nodelay as `nobody`: no CAP_NET_RAW.
fn as_nobody() -> Option<Command> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run nodelay as another user");
        return None;
    }
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_nodelay"));
    Some(command)
}

#[test]
fn without_capture_rights_one_line_says_so_and_the_sock_diag_mode_runs() {
    let Some(command) = as_nobody() else { return };
    let peer = python_peer("python_http_server.py", &[]);
    let port = peer.port.to_string();
    // A connection open meanwhile: a socket for the survey to see.
    let _open = TcpStream::connect(("127.0.0.1", peer.port)).unwrap();
    let mut watch = Watch::start_as(command, &["-i", "lo", "--port", &port]);
    let mode = watch.next();
    assert_eq!(mode["mode"], "sock_diag", "{mode}");
    assert!(mode["why"].as_str().unwrap().contains("no CAP_NET_RAW"), "{mode}");
    assert!(mode["sees"].as_str().unwrap().contains("no stall is timed"), "{mode}");
    let survey = watch.until("survey");
    assert!(survey["sockets"].as_u64().unwrap() >= 2, "the listener and the connection: {survey:#}");
    let (last, code) = watch.stop();
    assert_eq!(last["event"], "final_survey");
    assert_eq!(code, 0, "no stall seen: {last:#}");

    let Some(mut text) = as_nobody() else { return };
    let run = text.args(["watch", "-i", "lo", "--port", &port, "--duration", "1"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.starts_with("watch: sock_diag-only mode (no packet capture: no CAP_NET_RAW"), "{stdout}");
    assert!(stdout.contains("in the sock_diag-only mode"), "{stdout}");
    assert_eq!(run.status.code(), Some(0));
}

#[test]
fn a_bad_interface_is_one_clear_line_and_exit_2() {
    let run = nodelay(&["watch", "-i", "nosuch0", "--duration", "1"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert_eq!(
        run.stderr().trim_end(),
        "nodelay: no network interface named 'nosuch0' (see `ip link`; `any` captures on all of them)"
    );
    assert!(run.stdout().is_empty());
    let run = nodelay(&["watch", "--port", "0", "--duration", "1"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("is not a TCP port (1-65535)"), "{}", run.stderr());
    // The options the library checks are named as they were given (the CLI spells them).
    let run = nodelay(&["watch", "--pid", "2147483646", "--duration", "1"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert_eq!(run.stderr().trim_end(), "nodelay: --pid 2147483646: no such process");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let run = nodelay(&["watch", "--source", "capture", "--prometheus", &address, "--duration", "1"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let said = run.stderr();
    assert!(said.starts_with(&format!("nodelay: --prometheus {address}: cannot listen there: ")), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
}

#[test]
fn a_port_nobody_uses_gets_an_honest_empty_report() {
    let (_held, port) = port_nobody_listens_on();
    let run = nodelay(&["watch", "-i", "lo", "--port", &port.to_string(), "--duration", "1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let one_line = run.stdout().replace("\n  ", " ");
    assert!(one_line.contains(&format!("no TCP traffic on port {port} in 1.0 s")), "{}", run.stdout());
    assert!(one_line.contains("0 packets captured (0 dropped by the kernel)"), "{}", run.stdout());
}

/// A tmux server of its own running one command in a `width` × `height` terminal; when the
/// command exits the shell prints `[exit N]` and keeps the pane for reading.
struct Screen {
    socket: std::path::PathBuf,
}

impl Screen {
    fn start(width: u16, height: u16, args: &[&str]) -> Screen {
        let socket = std::env::temp_dir().join(format!("nodelay-watch-tmux-{}", std::process::id()));
        let words: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_nodelay"))
            .chain(args.iter().copied())
            .map(|word| format!("'{}'", word.replace('\'', r"'\''")))
            .collect();
        let shell = format!("trap : INT; {}; echo \"[exit $?]\"; exec cat", words.join(" "));
        let screen = Screen { socket };
        let (width, height) = (width.to_string(), height.to_string());
        screen.tmux(&["-f", "/dev/null", "new-session", "-d", "-x", &width, "-y", &height, &shell]);
        screen
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux");
        assert!(output.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Polls the visible screen until `done` accepts it (within 30 s).
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.tmux(&["capture-pane", "-p"]);
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[test]
fn on_a_terminal_the_view_redraws_in_place_and_ctrl_c_leaves_the_summary() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let port = peer.port.to_string();
    let screen = Screen::start(72, 16, &["watch", "-i", "lo", "--port", &port, "--duration", WATCH_LIMIT]);
    screen.wait_for("the view", |s| {
        s.contains("nodelay watch · lo · TCP on port") && s.contains("(no stall so far)")
    });
    curl(peer.port, 20);
    let row = format!("python3 ({}) → 127.0.0.1:{port}", peer.pid());
    let view =
        screen.wait_for("the stalling server's row", |s| s.contains(&row) && s.contains(" 20 exchanges"));
    assert!(view.contains("server-nagle-delayed-ack"), "{view}");
    assert!(view.lines().all(|line| line.chars().count() <= 72), "{view}");
    assert_eq!(view.matches("nodelay watch ·").count(), 1, "redrawn in place, not scrolled: {view}");
    screen.tmux(&["send-keys", "C-c"]);
    let end = screen.wait_for("the exit", |s| s.contains("[exit "));
    assert!(end.contains("[exit 3]"), "{end}");
    assert!(end.contains("20 request/response exchanges"), "{end}");
    assert!(!end.contains("nodelay watch ·"), "the view gave way to the summary: {end}");
}

/// The descriptors of `pid` that are sockets, as /proc shows them.
fn socket_fds(pid: u32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            target
                .to_string_lossy()
                .starts_with("socket:")
                .then(|| entry.file_name().to_str()?.parse().ok())?
        })
        .collect()
}

#[test]
fn from_the_kernel_a_connection_opened_before_watch_is_the_servers_exactly() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &[]);
    let twin = python_peer("python_http_server.py", &["--disable-nagle"]);
    // Keep-alive connections that exchanged before watch started: what a capture gets
    // backwards when the first packet it sees is a response.
    let connect = |port: u16| {
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        common::keep_alive_get(&mut client);
        client
    };
    let (mut client, mut to_twin) = (connect(peer.port), connect(twin.port));
    let port = peer.port.to_string();
    let ports = format!("{port},{}", twin.port);
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &ports, "--prometheus", "127.0.0.1:0"]);
    let mode = watch.next();
    assert_eq!(mode["mode"], "ebpf", "{mode}");
    assert_eq!(mode["interface"], Value::Null, "{mode}");
    let url = mode["metrics_url"].as_str().expect("the metrics' address").to_string();
    // Ground truth: the client's own time per request, the client's 40 ms delayed ACK.
    let client_ms: Vec<f64> =
        (0..10).map(|_| common::keep_alive_get(&mut client).as_secs_f64() * 1e3).collect();
    let twin_ms: Vec<f64> =
        (0..10).map(|_| common::keep_alive_get(&mut to_twin).as_secs_f64() * 1e3).collect();
    assert!(twin_ms.iter().all(|ms| *ms < 20.0), "the twin answers at once: {twin_ms:?}");
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "server-nagle-delayed-ack", "{finding:#}");
    assert_eq!((&finding["side"], &finding["port"]), (&Value::from("server"), &Value::from(peer.port)));
    assert_eq!(finding["server"], format!("127.0.0.1:{port}"), "{finding:#}");
    assert_eq!(finding["process"]["pid"], peer.pid(), "{finding:#}");
    assert_eq!(finding["process"]["command"], "python3", "{finding:#}");
    let fd = finding["process"]["fd"].as_i64().expect("the connection's descriptor") as i32;
    assert!(socket_fds(peer.pid()).contains(&fd), "fd {fd} is one of python3's sockets: {finding:#}");
    // The delayed ACKs are this test's: its connection is the server's peer, on this host.
    assert_eq!(finding["peer"]["pid"], std::process::id(), "{finding:#}");
    let ack_timeout_ms = finding["peer"]["ack_timeout_ms"].as_f64().expect("the peer's ACK timeout");
    assert!((40.0..=200.0).contains(&ack_timeout_ms), "Linux's delayed-ACK timeout: {finding:#}");
    let metrics = http_get(&url);
    assert!(metrics.contains("nodelay_watch_mode_info{mode=\"ebpf\"} 1"), "{metrics}");
    let series = format!(
        "nodelay_watch_stalls_total{{finding=\"server-nagle-delayed-ack\",process=\"python3\",pid=\"{}\",port=\"{port}\",side=\"server\"}}",
        peer.pid()
    );
    assert!(metrics.lines().any(|line| line.starts_with(&series)), "{series}: {metrics}");
    // The kernel bucketed each hold by length: none at 38 ms or under (a delayed ACK is 40 ms
    // at least), some by 50 ms. Scraped while the client still runs: not all of its holds yet.
    let bucket = |le: &str| -> u64 {
        let name = format!(
            "nodelay_watch_stall_duration_seconds_bucket{{le=\"{le}\",finding=\"server-nagle-delayed-ack\"}} "
        );
        let line = metrics
            .lines()
            .find(|line| line.starts_with(&name))
            .unwrap_or_else(|| panic!("{name}: {metrics}"));
        line[name.len()..].trim().parse().unwrap()
    };
    assert_eq!(bucket("0.038"), 0, "{metrics}");
    assert!(bucket("0.05") >= 1 && bucket("+Inf") >= bucket("0.05"), "{metrics}");
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "{last:#}");
    assert_eq!((&last["packets"], &last["flows"]), (&Value::Null, &Value::Null), "{last:#}");
    assert!(last["kernel"]["sends"].as_u64().unwrap() >= 10, "{last:#}");
    // Only the server held: the client writes each request whole, and the TCP_NODELAY twin
    // never holds.
    let findings = last["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{last:#}");
    assert_eq!(findings[0]["port"], peer.port, "{last:#}");
    let stalls = &findings[0];
    // Every response of the connection was held (it left quick-ACK mode before watch).
    assert!(stalls["stalls"].as_u64().unwrap() >= 9, "{last:#}");
    assert_eq!(stalls["exchanges"], 10, "{last:#}");
    // Each hold is what the client waited beyond a healthy response: within 25 % of its median.
    let mut sorted = client_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[5];
    let hold_ms = stalls["mean_stall_ms"].as_f64().unwrap();
    assert!((hold_ms / median - 1.0).abs() < 0.25, "hold {hold_ms:.2} ms, client {median:.2} ms: {last:#}");
    let ack_delay_ms = stalls["mean_ack_delay_ms"].as_f64().unwrap();
    assert!((30.0..60.0).contains(&ack_delay_ms), "Linux's 40 ms delayed ACK: {last:#}");
}

#[test]
fn from_the_kernel_a_split_writing_client_is_the_client_side() {
    let _alone = common::alone();
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let port = peer.port.to_string();
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &port]);
    assert_eq!(watch.next()["mode"], "ebpf");
    let mut client =
        Command::new("python3").args(["-c", SPLIT_CLIENT, &port]).stdin(Stdio::piped()).spawn().unwrap();
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "client-nagle-delayed-ack", "{finding:#}");
    assert_eq!((&finding["side"], &finding["port"]), (&Value::from("client"), &Value::from(peer.port)));
    assert_eq!(finding["process"]["pid"], client.id(), "the client, not the server: {finding:#}");
    drop(client.stdin.take());
    assert!(client.wait().unwrap().success());
    let (last, code) = watch.stop();
    assert_eq!(code, 3);
    assert!(last["findings"].as_array().unwrap().iter().all(|f| f["side"] == "client"), "{last:#}");
}

/// nodelay under capsh with these capabilities dropped.
fn without(capabilities: &str, args: &str) -> std::process::Output {
    Command::new("capsh")
        .args([&format!("--drop={capabilities}"), "--", "-c"])
        .arg(format!("exec {} {args}", env!("CARGO_BIN_EXE_nodelay")))
        .output()
        .expect("capsh")
}

#[test]
fn auto_reads_the_kernel_where_allowed_and_else_says_why_it_captures() {
    let (_held, port) = port_nobody_listens_on();
    let port = port.to_string();
    let run = nodelay(&["watch", "--port", &port, "--duration", "1", "--json-lines"]);
    let mode: Value = serde_json::from_str(run.stdout().lines().next().unwrap()).unwrap();
    validate_against_schema("watch.schema.json", &mode);
    assert_eq!(mode["mode"], "ebpf", "root may load the programs: {mode}");
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // Without CAP_BPF (and SYS_ADMIN, PERFMON): a capture, and the first words say why.
    let output =
        without("cap_bpf,cap_sys_admin,cap_perfmon", &format!("watch --port {port} -d 1 --json-lines"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mode: Value = serde_json::from_str(stdout.lines().next().expect("a mode line")).unwrap();
    validate_against_schema("watch.schema.json", &mode);
    assert_eq!(mode["mode"], "capture", "{mode}");
    let why = mode["why"].as_str().unwrap();
    assert!(
        why.starts_with("no eBPF (loading eBPF programs needs root, or CAP_BPF with CAP_PERFMON"),
        "{why}"
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn asked_for_the_kernel_without_rights_or_with_an_interface_one_line_says_why() {
    let output = without("cap_bpf,cap_sys_admin,cap_perfmon", "watch --source ebpf -d 1");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs root, or CAP_BPF with CAP_PERFMON"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing watched: {}", String::from_utf8_lossy(&output.stdout));
    let run = nodelay(&["watch", "--source", "ebpf", "-i", "lo", "-d", "1"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert_eq!(run.stderr().lines().count(), 1, "{}", run.stderr());
    assert!(run.stderr().contains("--source capture"), "{}", run.stderr());
}

#[test]
fn from_the_kernel_a_static_go_server_turning_nodelay_off_is_named() {
    let _alone = common::alone();
    // Its listener calls SetNoDelay(false) on each connection; an 8000-byte body leaves
    // net/http's 4 KB buffer in two writes, the second held. Static: no preload reaches it.
    let server =
        common::start_peer(&common::compiled_static("go_http_server.go"), &["-nagle", "-body-bytes", "8000"]);
    let port = server.port.to_string();
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &port]);
    assert_eq!(watch.next()["mode"], "ebpf");
    let mut client = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut client_ms: Vec<f64> =
        (0..10).map(|_| common::keep_alive_get(&mut client).as_secs_f64() * 1e3).collect();
    client_ms.sort_by(f64::total_cmp);
    assert!(client_ms[5] > 30.0, "ground truth: the client waits for its delayed ACK: {client_ms:?}");
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "server-nagle-delayed-ack", "{finding:#}");
    assert_eq!(finding["process"]["pid"], server.pid(), "{finding:#}");
    assert_eq!(finding["port"], server.port, "{finding:#}");
    let (last, code) = watch.stop();
    assert_eq!(code, 3);
    // The first exchange of a new connection is ACKed at once (quick-ACK mode).
    assert!(last["findings"][0]["stalls"].as_u64().unwrap() >= 8, "{last:#}");
}

/// Ten GETs on one keep-alive connection, then a close with a reset (SO_LINGER 0): each
/// request's time in ms on a line.
const RESETTING_CLIENT: &str = "
import socket, struct, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
for _ in range(10):
    t = time.perf_counter()
    c.sendall(b'GET / HTTP/1.1\\r\\nHost: s\\r\\n\\r\\n')
    got = b''
    while not got.endswith(b'x' * 100):
        got += c.recv(65536)
    print((time.perf_counter() - t) * 1000, flush=True)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
c.close()
";

#[test]
fn from_the_kernel_a_hold_a_stalled_path_ended_is_no_delayed_ack_and_resets_are_counted() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    // The fifth response's body waits 400 ms in a frozen path: as long as a hold a delayed
    // ACK ends, but the kernel sends a loss probe or resends meanwhile (see the peer).
    let forwarder = link.forwarder_pid().to_string();
    let server =
        link.python_server("path_stalling_server.py", &["--path-pid", &forwarder, "--stall-on", "5"]);
    let port = server.port.to_string();
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &port]);
    assert_eq!(watch.next()["mode"], "ebpf");
    let said = link.client_python_args(RESETTING_CLIENT, &[common::wan::SERVER_IP, &port]);
    // Ground truth from the client: one request of ten waited the stall.
    let times: Vec<f64> = said.lines().map(|line| line.parse().unwrap()).collect();
    assert_eq!(times.len(), 10, "{said}");
    assert_eq!(times.iter().filter(|ms| **ms > 300.0).count(), 1, "{times:?}");
    // The end's resets (both sockets') reach the kernel's map by a read soon after.
    let summary = watch.until_matching("summary", |event| event["kernel"]["resets"].as_u64() >= Some(2));
    let (last, _code) = watch.stop();
    let kernel = &last["kernel"];
    assert_eq!(kernel["holds_resent"], 1, "{last:#}");
    // Both ends are followed (both have Nagle on): the client's reset sent, the server's
    // received.
    assert_eq!((&kernel["closes"], &kernel["resets"]), (&Value::from(2), &Value::from(2)), "{summary:#}");
    // The stall is in no finding: the other holds are the client's delayed ACKs (it reads
    // without writing) or the path's round trips, none near 400 ms.
    let findings = last["findings"].as_array().unwrap();
    let held: u64 = findings.iter().map(|f| f["stalls"].as_u64().unwrap()).sum();
    assert!((5..=9).contains(&held), "{last:#}");
    for finding in findings {
        assert!(finding["mean_stall_ms"].as_f64().unwrap() < 100.0, "{finding:#}");
    }
}

#[test]
fn from_the_kernel_a_large_responses_tail_held_behind_its_head_ends_at_the_heads_ack() {
    let _alone = common::alone();
    let link = Link::up("10ms", &[]);
    // 25 KB bodies after a small head: 17 full segments leave, the 384-byte tail waits for
    // the head's ACK (Linux's Nagle, Minshall's variant), while the full segments are still
    // being acknowledged.
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "25000"]);
    let twin = link.python_server("python_http_server.py", &["--body-bytes", "25000", "--disable-nagle"]);
    let port = nagle.port.to_string();
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &port]);
    assert_eq!(watch.next()["mode"], "ebpf");
    link.slower_by(nagle.port, twin.port, 20, 3.0);
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "server-nagle-round-trip", "{finding:#}");
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "{last:#}");
    let round_trips = &last["findings"][0];
    let stalls = round_trips["stalls"].as_u64().unwrap();
    assert!(stalls >= 15, "{last:#}");
    // A round trip (the path's 10 ms), not the two that everything in flight took to be
    // acknowledged (21.5 ms each, all unclassed and no finding, before the release read the
    // small segment's ACK). A busy machine slows the path's forwarder: a few holds may run
    // past a round trip's slack and go unclassed (the first response may also wait on the
    // initial window), most may not.
    let hold_ms = round_trips["mean_stall_ms"].as_f64().unwrap();
    assert!((8.0..18.0).contains(&hold_ms), "{last:#}");
    assert!(last["kernel"]["holds_unclassed"].as_u64().unwrap() * 3 <= stalls, "{last:#}");
}

#[test]
fn from_the_kernel_a_hold_across_a_10ms_path_is_a_round_trip_named_in_the_servers_namespace() {
    let _alone = common::alone();
    let rtt_ms = 10.0;
    let link = Link::up(&format!("{rtt_ms}ms"), &[]);
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "2000"]);
    let twin = link.python_server("python_http_server.py", &["--body-bytes", "2000", "--disable-nagle"]);
    // Watch in this namespace: the servers are in another, which the kernel's programs see.
    let ports = format!("{},{}", nagle.port, twin.port);
    let mut watch = Watch::start(&["--source", "ebpf", "--port", &ports]);
    assert_eq!(watch.next()["mode"], "ebpf");
    // The independent client (Python's http.client in the client's namespace); a CI run's
    // first try had the twin at 15.05 ms and the Nagle server 6.9 ms slower.
    link.slower_by(nagle.port, twin.port, 15, 7.0);
    let finding = watch.until("finding");
    assert_eq!(finding["finding"], "server-nagle-round-trip", "{finding:#}");
    assert_eq!(finding["process"]["pid"], nagle.pid(), "{finding:#}");
    assert_eq!(finding["server"], format!("{}:{}", common::wan::SERVER_IP, nagle.port), "{finding:#}");
    let (last, code) = watch.stop();
    assert_eq!(code, 3, "{last:#}");
    let findings = last["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| f["port"] == nagle.port), "the twin never holds: {last:#}");
    let round_trips = findings.iter().find(|f| f["finding"] == "server-nagle-round-trip").unwrap();
    assert!(round_trips["stalls"].as_u64().unwrap() >= 12, "{last:#}");
    // The hold is the round trip the client lost: within 30 % of the path's round trip, which
    // the ground truth above shows lost, as in `ebpf_holds`. Not of the two medians'
    // difference: beside the suite it came out 17.10 ms once (CI: the Nagle server's median
    // 28.88 ms), while the kernel held 10.16 ms.
    let hold_ms = round_trips["mean_stall_ms"].as_f64().unwrap();
    assert!((hold_ms / rtt_ms - 1.0).abs() < 0.3, "hold {hold_ms:.2} ms on a {rtt_ms} ms path");
}
