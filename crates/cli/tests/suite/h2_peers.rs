//! The HTTP/2 and gRPC peers of common::h2 behave as their flags claim, seen by clients
//! that are not nodelay: nghttp2's `nghttp` (which prints every frame) and `h2load`, curl,
//! grpc-go, and strace for what a server writes. What nodelay's own HTTP/2 tests rely on:
//! each peer answers HTTP/2, advertises the SETTINGS_MAX_CONCURRENT_STREAMS it was given,
//! queues streams behind it, and the `--nagle` peers send HEADERS and DATA in two writes
//! that Nagle and the client's delayed ACK stall (their controls do not).

use crate::common;

use crate::common::h2;
use crate::common::tls::certs;
use crate::common::*;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Runs a client within 20 s; its stdout, or a panic with its stderr.
fn client(program: &str, args: &[&str]) -> String {
    let (succeeded, output) = client_output(program, args);
    assert!(succeeded, "{program} {args:?} failed:\n{output}");
    output
}

/// Runs a client within 20 s: whether it succeeded, and its stdout then stderr.
fn client_output(program: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new("timeout")
        .arg("20")
        .arg(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} (scripts/setup.sh installs it): {e}"));
    let text =
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// One frame `nghttp -v` printed: `[  0.008] recv DATA frame <length=100, flags=0x00,
/// stream_id=13>` and its indented detail lines.
struct Frame {
    received: bool,
    kind: String,
    length: usize,
    flags: u8,
    detail: Vec<String>,
}

/// What `nghttp -nv` saw of one exchange: the frames and the header fields received.
struct Exchange {
    frames: Vec<Frame>,
    headers: Vec<(String, String)>,
    text: String,
}

/// `nghttp -nv [args] URL`: one request (a GET, or a POST of `-d FILE`) and every frame.
fn nghttp(url: &str, args: &[&str]) -> Exchange {
    let text = client("nghttp", &[&["-nv"], args, &[url]].concat());
    let mut frames: Vec<Frame> = Vec::new();
    let mut headers = Vec::new();
    for line in text.lines() {
        if line.starts_with(' ') {
            if let Some(frame) = frames.last_mut() {
                frame.detail.push(line.trim().to_string());
            }
            continue;
        }
        let Some((_, event)) = line.split_once("] ") else { continue };
        let Some((direction, rest)) = event.split_once(' ') else { continue };
        if let Some(field) = rest.strip_prefix('(').and_then(|r| r.split_once(") ")).map(|(_, f)| f) {
            // "recv (stream_id=13) :status: 200": a received header field.
            let (name, value) = field.rsplit_once(": ").expect("name: value");
            headers.push((name.to_string(), value.to_string()));
        } else if let Some((kind, attributes)) = rest.split_once(" frame <") {
            let attribute = |name: &str| {
                attributes
                    .trim_end_matches('>')
                    .split(", ")
                    .find_map(|a| a.strip_prefix(name))
                    .unwrap_or_else(|| panic!("no {name} in {line}"))
                    .to_string()
            };
            frames.push(Frame {
                received: direction == "recv",
                kind: kind.to_string(),
                length: attribute("length=").parse().unwrap(),
                flags: u8::from_str_radix(attribute("flags=0x").as_str(), 16).unwrap(),
                detail: Vec::new(),
            });
        }
    }
    Exchange { frames, headers, text }
}

impl Exchange {
    /// A setting of the server's first SETTINGS frame (not its ACK), as nghttp names it.
    fn server_setting(&self, name: &str) -> Option<u64> {
        let settings = self
            .frames
            .iter()
            .find(|f| f.received && f.kind == "SETTINGS" && f.flags & 1 == 0)
            .unwrap_or_else(|| panic!("no SETTINGS from the server:\n{}", self.text));
        settings.detail.iter().find_map(|d| {
            let rest = d.strip_prefix('[')?.strip_prefix(name)?;
            rest.split_once("):")?.1.trim_end_matches(']').parse().ok()
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn data_bytes(&self) -> usize {
        self.frames.iter().filter(|f| f.received && f.kind == "DATA").map(|f| f.length).sum()
    }

    /// The answer came over HTTP/2 (nghttp speaks nothing else) with status 200 and a body
    /// of `body_bytes`.
    fn assert_ok(&self, body_bytes: usize) {
        assert_eq!(self.header(":status"), Some("200"), "{}", self.text);
        assert_eq!(self.data_bytes(), body_bytes, "{}", self.text);
    }
}

/// The HTTP version curl used for one GET (`%{http_version}`: "2" or "1.1").
fn curl_version(url: &str, args: &[&str]) -> String {
    let written = client(
        "curl",
        &[&["-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_version}"], args, &[url]].concat(),
    );
    written.trim().to_string()
}

/// A TLS peer offers h2 and http/1.1 by ALPN: curl gets HTTP/2 unless it asks for 1.1.
fn assert_alpn_h2_and_http1(url: &str) {
    let ca = &certs().ca;
    assert_eq!(curl_version(url, &["--cacert", ca, "--http2"]), "2");
    assert_eq!(curl_version(url, &["--cacert", ca, "--http1.1"]), "1.1");
}

/// `h2load -n requests -c 1 -m 1 URL`, requests one after another on one connection: the
/// mean time for a request, checking that every request succeeded.
fn h2load_one_at_a_time(url: &str, requests: u32) -> Duration {
    let n = requests.to_string();
    let text = client("h2load", &["-n", &n, "-c", "1", "-m", "1", url]);
    let succeeded = format!("{requests} succeeded");
    assert!(text.lines().any(|l| l.starts_with("requests:") && l.contains(&succeeded)), "{text}");
    let times = text.lines().find(|l| l.starts_with("time for request:")).unwrap_or_else(|| panic!("{text}"));
    // "time for request:   min   max   mean   sd   +/- sd"
    h2load_duration(times.split_whitespace().nth(5).expect("the mean"))
}

/// "141us", "1.50ms", "1.2s".
fn h2load_duration(text: &str) -> Duration {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or_else(|| panic!("{text:?}"));
    let value: f64 = text[..split].parse().unwrap_or_else(|_| panic!("{text:?}"));
    let seconds = match &text[split..] {
        "us" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        unit => panic!("unit {unit:?} in {text:?}"),
    };
    Duration::from_secs_f64(seconds)
}

fn temp_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("h2-peers-{}-{name}", std::process::id()))
}

// ---- each peer answers HTTP/2 and advertises its stream limit -----------------------------

#[test]
fn go_net_http_answers_h2c_by_prior_knowledge_beside_http1() {
    let peer = h2::go_h2c(&["--max-streams", "7", "--body-bytes", "100"]);
    let exchange = nghttp(&peer.url("/any/path"), &[]);
    exchange.assert_ok(100);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(7));
    assert_eq!(curl_version(&peer.url("/"), &["--http2-prior-knowledge"]), "2");
    assert_eq!(curl_version(&peer.url("/"), &[]), "1.1");
}

#[test]
fn go_net_http_over_tls_offers_h2_and_http1_by_alpn() {
    let c = certs();
    let peer = h2::go_h2c(&["--cert", &c.cert, "--key", &c.key]);
    assert_alpn_h2_and_http1(&format!("https://127.0.0.1:{}/", peer.port));
}

#[test]
fn node_http2_answers_h2c_with_its_stream_limit() {
    let peer = h2::node_h2(&["--max-streams", "5", "--body-bytes", "50"]);
    let exchange = nghttp(&peer.url("/"), &[]);
    exchange.assert_ok(50);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(5));
}

#[test]
fn node_http2_over_tls_offers_h2_and_http1_by_alpn() {
    let c = certs();
    let peer = h2::node_h2(&["--cert", &c.cert, "--key", &c.key]);
    assert_alpn_h2_and_http1(&format!("https://127.0.0.1:{}/", peer.port));
}

#[test]
fn hypercorn_answers_h2c_with_its_stream_limit() {
    let peer = h2::hypercorn(&["--max-streams", "6", "--body-bytes", "70"]);
    let exchange = nghttp(&peer.url("/"), &[]);
    exchange.assert_ok(70);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(6));
}

#[test]
fn nghttpd_answers_h2c_with_its_stream_limit_and_window() {
    let peer = h2::nghttpd(&["--max-streams", "3", "--body-bytes", "20", "--window-bits", "16"]);
    let exchange = nghttp(&peer.url("/"), &[]);
    exchange.assert_ok(20);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(3));
    assert_eq!(exchange.server_setting("SETTINGS_INITIAL_WINDOW_SIZE"), Some(65535));
}

#[test]
fn nginx_answers_h2c_with_its_stream_limit() {
    let nginx = h2::nginx_h2c(&h2::nginx_body_server(40, Some(9)));
    let exchange = nghttp(&nginx.url("/"), &[]);
    exchange.assert_ok(40);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(9));
}

#[test]
fn nginx_over_tls_offers_h2_and_http1_by_alpn() {
    let c = certs();
    let server = format!(
        "    ssl_certificate {};\n    ssl_certificate_key {};\n{}",
        c.cert,
        c.key,
        h2::nginx_body_server(13, None)
    );
    let nginx = h2::nginx_h2_tls(&server);
    assert_alpn_h2_and_http1(&nginx.https_url("/"));
}

// ---- grpc-go's Greeter ------------------------------------------------------------------

/// A SayHello request framed by hand: gRPC's 5-byte prefix (uncompressed, length) around
/// the message `name = "abc"` (field 1, wire type 2: 0x0a, its length, its bytes).
/// Written once per test process: tests running at once read it.
fn say_hello_request() -> PathBuf {
    static WRITTEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            let path = temp_file("say-hello.bin");
            std::fs::write(&path, [0, 0, 0, 0, 5, 0x0a, 3, b'a', b'b', b'c']).expect("write the request");
            path
        })
        .clone()
}

fn grpc_post(port: u16) -> Exchange {
    let request = say_hello_request();
    let url = format!("http://127.0.0.1:{port}/helloworld.Greeter/SayHello");
    let body = request.to_str().unwrap();
    nghttp(&url, &["-d", body, "-H", "content-type: application/grpc", "-H", "te: trailers"])
}

#[test]
fn grpc_go_greeter_answers_a_hand_framed_call_and_grpc_go_with_its_settings() {
    let peer = h2::grpc_server(&["--max-streams", "3", "--window", "1048576"]);
    let exchange = grpc_post(peer.port);
    assert_eq!(exchange.header(":status"), Some("200"), "{}", exchange.text);
    assert_eq!(exchange.header("content-type"), Some("application/grpc"), "{}", exchange.text);
    assert_eq!(exchange.header("grpc-status"), Some("0"), "{}", exchange.text);
    // "Hello abc" in HelloReply's field 1, after the 5-byte prefix: 5 + 2 + 9 bytes.
    assert_eq!(exchange.data_bytes(), 16, "{}", exchange.text);
    assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(3));
    assert_eq!(exchange.server_setting("SETTINGS_INITIAL_WINDOW_SIZE"), Some(1048576));
    assert!(
        h2::grpc_call(peer.port, &["--calls", "3", "--name", "world"])
            .starts_with("OK 3 calls, reply 11 bytes, median ")
    );
}

#[test]
fn grpc_go_greeter_sends_replies_of_the_size_asked_and_the_status_asked() {
    let large = h2::grpc_server(&["--reply-bytes", "100000"]);
    // Larger than the client's 64 KiB window: the reply needs WINDOW_UPDATEs to finish.
    assert!(
        h2::grpc_call(large.port, &["--calls", "2"]).starts_with("OK 2 calls, reply 100000 bytes, median ")
    );
    let failing = h2::grpc_server(&["--status", "5"]);
    let exchange = grpc_post(failing.port);
    assert_eq!(exchange.header(":status"), Some("200"), "{}", exchange.text);
    assert_eq!(exchange.header("grpc-status"), Some("5"), "{}", exchange.text);
}

// ---- streams queue behind the limit -------------------------------------------------------

/// An HTTP/2 client by python-h2 (hypercorn's own HTTP/2 library) making `requests`
/// requests on one connection: GETs of `/`, or with `grpc` SayHello calls (POSTs of
/// [`say_hello_request`]'s bytes). `wait` honours the server's limit: it reads the server's
/// SETTINGS first, then keeps at most SETTINGS_MAX_CONCURRENT_STREAMS streams open.
/// `eager` opens them all in the write that carries its connection preface, before it can
/// know the limit (as h2load and many clients do). Prints `limit=` (the server's), `most=`
/// (streams open at once), `seconds=`, `ok=`, `refused=` (RST_STREAM REFUSED_STREAM) and
/// `goaway=` (the error code of a GOAWAY that ended the connection early, `closed` if it
/// ended without one, or `none`).
const H2_CLIENT: &str = r#"
import socket, sys, time
import h2.config, h2.connection, h2.errors, h2.events
port, requests, mode, grpc = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:] == ["grpc"]
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
conn.initiate_connection()
authority = f"127.0.0.1:{port}"
headers = [(":method", "GET"), (":path", "/"), (":scheme", "http"), (":authority", authority)]
if grpc:
    headers = [(":method", "POST"), (":path", "/helloworld.Greeter/SayHello"), (":scheme", "http"),
               (":authority", authority), ("content-type", "application/grpc"), ("te", "trailers")]
ok = refused = sent = most = 0
goaway = "none"
def send():
    # A peer that answers with GOAWAY may close before this send; what it sent first is
    # still in the receive queue, so the next receive() reads the GOAWAY.
    try:
        sock.sendall(conn.data_to_send())
    except (BrokenPipeError, ConnectionResetError):
        pass
def receive():
    global ok, refused, goaway
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        data = b""
    if not data:
        goaway = "closed" if goaway == "none" else goaway
        return []
    received = conn.receive_data(data)
    for event in received:
        if isinstance(event, h2.events.DataReceived):
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            ok += 1
        elif isinstance(event, h2.events.StreamReset):
            assert event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM, event
            refused += 1
        elif isinstance(event, h2.events.ConnectionTerminated):
            goaway = event.error_code.name
    if goaway == "none":
        send()
    return received
if mode == "wait":
    send()
    while not any(isinstance(e, h2.events.RemoteSettingsChanged) for e in receive()):
        pass
started = time.monotonic()
while ok + refused < requests and goaway == "none":
    while sent < requests and conn.open_outbound_streams < conn.remote_settings.max_concurrent_streams:
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, headers, end_stream=not grpc)
        if grpc:
            conn.send_data(stream, bytes([0, 0, 0, 0, 5, 0x0A, 3]) + b"abc", end_stream=True)
        sent += 1
    send()
    most = max(most, conn.open_outbound_streams)
    receive()
seconds = time.monotonic() - started
print(f"limit={conn.remote_settings.max_concurrent_streams} most={most} seconds={seconds}",
      f"ok={ok} refused={refused} goaway={goaway}")
"#;

/// What [`H2_CLIENT`] printed, by name.
fn h2_client(peer: &Peer, requests: u32, mode: &[&str]) -> std::collections::HashMap<String, String> {
    let (port, requests) = (peer.port.to_string(), requests.to_string());
    let printed = client("python3", &[&["-c", H2_CLIENT, &port, &requests], mode].concat());
    printed
        .split_whitespace()
        .map(|word| {
            let (name, value) = word.split_once('=').unwrap_or_else(|| panic!("{printed}"));
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// Four requests on one connection by a client that honours the limit, each answered after
/// 100 ms: behind a limit of one stream they take 400 ms or more one after another; with
/// four they overlap.
fn assert_streams_queue(limited: &Peer, unlimited: &Peer, mode: &[&str]) {
    let queued = h2_client(limited, 4, mode);
    assert_eq!((queued["limit"].as_str(), queued["most"].as_str(), queued["ok"].as_str()), ("1", "1", "4"));
    let seconds: f64 = queued["seconds"].parse().unwrap();
    assert!(seconds >= 0.4, "4 streams behind a limit of 1 took {seconds} s");
    let overlapped = h2_client(unlimited, 4, mode);
    assert_eq!((overlapped["limit"].as_str(), overlapped["most"].as_str()), ("4", "4"));
    let seconds: f64 = overlapped["seconds"].parse().unwrap();
    assert!(seconds < 0.3, "4 concurrent streams took {seconds} s");
}

#[test]
fn go_net_http_streams_queue_behind_its_limit() {
    let limited = h2::go_h2c(&["--max-streams", "1", "--delay-ms", "100"]);
    let unlimited = h2::go_h2c(&["--max-streams", "4", "--delay-ms", "100"]);
    assert_streams_queue(&limited, &unlimited, &["wait"]);
}

#[test]
fn node_http2_streams_queue_behind_its_limit() {
    let limited = h2::node_h2(&["--max-streams", "1", "--delay-ms", "100"]);
    let unlimited = h2::node_h2(&["--max-streams", "4", "--delay-ms", "100"]);
    assert_streams_queue(&limited, &unlimited, &["wait"]);
}

#[test]
fn hypercorn_streams_queue_behind_its_limit() {
    let limited = h2::hypercorn(&["--max-streams", "1", "--delay-ms", "100"]);
    let unlimited = h2::hypercorn(&["--max-streams", "4", "--delay-ms", "100"]);
    assert_streams_queue(&limited, &unlimited, &["wait"]);
}

#[test]
fn grpc_go_calls_queue_behind_its_limit() {
    let limited = h2::grpc_server(&["--max-streams", "1", "--delay-ms", "100"]);
    let unlimited = h2::grpc_server(&["--max-streams", "4", "--delay-ms", "100"]);
    assert_streams_queue(&limited, &unlimited, &["wait", "grpc"]);
}

/// No server queues streams over its limit: the queue is the client's. Streams that a
/// client opened before it read the server's SETTINGS are refused one by one (RST_STREAM
/// REFUSED_STREAM: safe to retry) by Go, grpc-go, Node and nghttpd, while hypercorn ends
/// the whole connection (GOAWAY PROTOCOL_ERROR, python-h2's TooManyStreamsError).
#[test]
fn streams_over_the_limit_before_the_settings_are_refused() {
    for peer in [
        h2::go_h2c(&["--max-streams", "1", "--delay-ms", "50"]),
        h2::node_h2(&["--max-streams", "1", "--delay-ms", "50"]),
        h2::nghttpd(&["--max-streams", "1"]),
    ] {
        assert_three_of_four_refused(&h2_client(&peer, 4, &["eager"]));
    }
    let grpc = h2::grpc_server(&["--max-streams", "1", "--delay-ms", "50"]);
    assert_three_of_four_refused(&h2_client(&grpc, 4, &["eager", "grpc"]));
    let eager = h2_client(&h2::hypercorn(&["--max-streams", "1"]), 4, &["eager"]);
    assert_eq!(eager["goaway"], "PROTOCOL_ERROR", "{eager:?}");
}

fn assert_three_of_four_refused(eager: &std::collections::HashMap<String, String>) {
    let outcome = [&eager["limit"], &eager["most"], &eager["ok"], &eager["refused"], &eager["goaway"]];
    assert_eq!(outcome, ["1", "4", "1", "3", "none"], "{eager:?}");
}

#[test]
fn node_and_hypercorn_and_nghttpd_advertise_a_limit_of_one() {
    for peer in [
        h2::node_h2(&["--max-streams", "1"]),
        h2::hypercorn(&["--max-streams", "1"]),
        h2::nghttpd(&["--max-streams", "1"]),
    ] {
        let exchange = nghttp(&peer.url("/"), &[]);
        assert_eq!(exchange.server_setting("SETTINGS_MAX_CONCURRENT_STREAMS"), Some(1), "{}", exchange.text);
    }
}

// ---- --nagle: HEADERS and DATA in two writes, the second held by Nagle ----------------------

/// A peer run under `strace -f`, which logs every write of its threads; the process group
/// (strace and the peer) is killed when dropped.
struct Traced {
    peer: Peer,
    log: PathBuf,
}

impl Traced {
    fn start(program: &str, args: &[&str]) -> Traced {
        let log = temp_file(&format!("strace-{}", program.rsplit('/').next().unwrap()));
        let mut command = Command::new("strace");
        command
            .args(["-f", "-qq", "-xx", "-s", "65536", "-e", "trace=write,writev,sendmsg,sendto", "-o"])
            .arg(&log)
            .arg("--")
            .arg(program)
            .args(args)
            .process_group(0);
        Traced { peer: start_command(&mut command), log }
    }

    /// Ends the peer (strace then writes its last lines and exits) and returns, for each
    /// write on a socket that carried whole HTTP/2 frames, those frames as (type, stream).
    fn frame_writes(mut self) -> Vec<Vec<(u8, u32)>> {
        let strace = self.peer.pid();
        let children = std::fs::read_to_string(format!("/proc/{strace}/task/{strace}/children")).unwrap();
        let traced: i32 = children.split_whitespace().next().expect("the traced peer").parse().unwrap();
        // SAFETY: kill(2) on the peer strace started for this test.
        unsafe { libc::kill(traced, libc::SIGKILL) };
        wait_until("strace to end with its peer", Duration::from_secs(10), || !self.peer.is_running());
        let log = std::fs::read_to_string(&self.log).expect("strace's log");
        log.lines().filter_map(frames_written).collect()
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created for strace and its peer.
        unsafe { libc::kill(-(self.peer.pid() as libc::pid_t), libc::SIGKILL) };
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The HTTP/2 frames (type, stream) of one strace line `PID write(FD, "\x00...", N)` or
/// `PID writev(FD, [{iov_base="\x00...", ...}, ...], N)` on a descriptor above 2, if its
/// bytes are whole frames (an eventfd's 8 bytes are not).
fn frames_written(line: &str) -> Option<Vec<(u8, u32)>> {
    let call = ["write(", "writev(", "sendmsg(", "sendto("].iter().find_map(|c| line.split_once(c))?.1;
    let fd: u32 = call.split(',').next()?.trim().parse().ok()?;
    if fd <= 2 {
        return None;
    }
    let mut bytes = Vec::new();
    for (i, quoted) in call.split('"').enumerate() {
        if i % 2 == 1 {
            for hex in quoted.split("\\x").skip(1) {
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
            }
        }
    }
    let mut frames = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes.get(at..at + 9)?;
        let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        frames.push((header[3], stream));
        at += 9 + length;
    }
    (at == bytes.len() && !frames.is_empty()).then_some(frames)
}

const HEADERS: u8 = 1;
const DATA: u8 = 0;

/// Whether each response stream's HEADERS frame left in a write of its own, without any of
/// the stream's DATA; panics unless `streams` responses were written.
fn headers_written_apart(writes: &[Vec<(u8, u32)>], streams: usize) -> Vec<bool> {
    let answered: Vec<u32> =
        writes.iter().flatten().filter(|(kind, s)| *kind == HEADERS && *s > 0).map(|(_, s)| *s).collect();
    assert_eq!(answered.len(), streams, "HEADERS written: {writes:?}");
    answered
        .iter()
        .map(|stream| {
            let with_headers = writes.iter().position(|w| w.contains(&(HEADERS, *stream))).unwrap();
            let with_data = writes.iter().position(|w| w.contains(&(DATA, *stream))).expect("DATA written");
            with_data > with_headers
        })
        .collect()
}

#[test]
fn go_net_http_with_nagle_writes_headers_and_data_apart() {
    let traced = Traced::start(&common::compiled("go_h2c_server.go"), &["--nagle"]);
    h2load_one_at_a_time(&traced.peer.url("/"), 3);
    assert_eq!(headers_written_apart(&traced.frame_writes(), 3), [true; 3]);
}

#[test]
fn node_http2_with_nagle_writes_headers_and_data_apart_and_without_it_together() {
    let script = peer_script("node_http2_server.js");
    let script = script.to_str().unwrap();
    let traced = Traced::start("node", &[script, "--nagle"]);
    h2load_one_at_a_time(&traced.peer.url("/"), 3);
    assert_eq!(headers_written_apart(&traced.frame_writes(), 3), [true; 3]);
    let control = Traced::start("node", &[script]);
    h2load_one_at_a_time(&control.peer.url("/"), 3);
    assert_eq!(headers_written_apart(&control.frame_writes(), 3), [false; 3]);
}

/// Ten requests one after another on one connection: with --nagle each waits for the
/// client's delayed ACK (40 ms at least on Linux), without it none does.
fn assert_nagle_stalls(stalling: &Peer, control: &Peer) {
    let _alone = alone();
    let stalled = h2load_one_at_a_time(&stalling.url("/"), 10);
    assert!(stalled >= Duration::from_millis(30), "with --nagle a request took {stalled:?} on average");
    // The control gets three tries: beside the suite, Node without Nagle once took 15.44 ms a
    // request on average (a peer waiting for a core, not for an ACK), where it takes about 1.
    let mut prompt = Vec::new();
    while prompt.len() < 3 && prompt.last().is_none_or(|mean| *mean >= Duration::from_millis(15)) {
        prompt.push(h2load_one_at_a_time(&control.url("/"), 10));
    }
    assert!(
        prompt.last().is_some_and(|mean| *mean < Duration::from_millis(15)),
        "without --nagle a request took {prompt:?} on average, in three tries"
    );
}

#[test]
fn go_net_http_with_nagle_stalls_each_response_and_its_control_does_not() {
    assert_nagle_stalls(&h2::go_h2c(&["--nagle"]), &h2::go_h2c(&[]));
}

#[test]
fn node_http2_with_nagle_stalls_each_response_and_its_control_does_not() {
    assert_nagle_stalls(&h2::node_h2(&["--nagle"]), &h2::node_h2(&[]));
}
