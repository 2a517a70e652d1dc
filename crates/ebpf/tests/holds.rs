//! HoldWatch against real servers: Python's http.server as shipped (head and body in two
//! writes, Nagle on) on a keep-alive connection opened before the programs were attached,
//! and its TCP_NODELAY twin. Ground truth is the client's own time per request.

use nodelay_ebpf::{HoldStats, HoldWatch};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server of tests/peers, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// tests/peers/python_http_server.py.
    fn start(args: &[&str]) -> Server {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/python_http_server.py");
        Server::spawn(Command::new("python3").arg(script).args(args))
    }

    /// tests/peers/go_http_server.go, built static (CGO_ENABLED=0: nothing to preload into).
    fn go(args: &[&str]) -> Server {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/go_http_server.go");
        let binary =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("go_http_server-{}", std::process::id()));
        let built = Command::new("go")
            .env("CGO_ENABLED", "0")
            .arg("build")
            .arg("-o")
            .arg(&binary)
            .arg(source)
            .status();
        assert!(built.unwrap().success(), "go build");
        let server = Server::spawn(Command::new(&binary).args(args));
        let _ = std::fs::remove_file(&binary);
        server
    }

    /// Starts `command` and waits for its "PORT <n>" line.
    fn spawn(command: &mut Command) -> Server {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("PORT <n>");
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Mounts tracefs where the machine has not (a fresh machine of this kind does not), as a
/// host that runs watch from the kernel would.
fn mount_tracefs() {
    let tracing = std::path::Path::new("/sys/kernel/tracing");
    if std::fs::read_dir(tracing).is_ok_and(|mut entries| entries.next().is_some()) {
        return;
    }
    let status = Command::new("mount").args(["-t", "tracefs", "nodev"]).arg(tracing).status().unwrap();
    // Another test process may have mounted it meanwhile: what counts is that it is there.
    assert!(status.success() || tracing.join("events").exists(), "mount -t tracefs");
}

/// One keep-alive GET read to the end of its body (Content-Length); how long it took.
fn get(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut response = Vec::new();
    let mut buffer = [0; 65536];
    loop {
        if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .expect("a Content-Length");
            if response.len() >= end + 4 + length {
                return started.elapsed();
            }
        }
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "the server closed the connection");
        response.extend_from_slice(&buffer[..n]);
    }
}

/// The programs' figures for the server's side of its connections.
fn server_side(watch: &HoldWatch, server: &Server) -> HoldStats {
    let all = watch.read().unwrap();
    let mine: Vec<_> =
        all.iter().filter(|s| s.pid == server.child.id() && s.local_port == server.port).collect();
    assert_eq!(mine.len(), 1, "{all:?}");
    mine[0].clone()
}

#[test]
fn holds_are_timed_on_a_connection_opened_before_the_programs_and_not_on_the_twin() {
    let (nagle, twin) = (Server::start(&[]), Server::start(&["--disable-nagle"]));
    let mut to_nagle = TcpStream::connect(("127.0.0.1", nagle.port)).unwrap();
    let mut to_twin = TcpStream::connect(("127.0.0.1", twin.port)).unwrap();
    to_nagle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    to_twin.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Opened and used before the programs start: the case a capture gets backwards.
    get(&mut to_nagle);
    get(&mut to_twin);

    mount_tracefs();
    let watch = HoldWatch::start().unwrap();
    let mut client_ms: Vec<f64> = (0..10).map(|_| get(&mut to_nagle).as_secs_f64() * 1e3).collect();
    for _ in 0..10 {
        get(&mut to_twin);
    }
    client_ms.sort_by(f64::total_cmp);

    let held = server_side(&watch, &nagle);
    eprintln!("client ms {client_ms:?}\nkernel {held:?}");
    assert!(client_ms[5] > 30.0, "the client's median: {:.2} ms", client_ms[5]);
    assert!(held.holds >= 9, "{held:?}");
    assert_eq!(held.exchanges, 10, "{held:?}");
    let ack_delay_ms = (held.held.as_secs_f64() - held.round_trips.as_secs_f64()) / held.holds as f64 * 1e3;
    // Linux's delayed-ACK timer: 40 ms (its lowest), timed from the hold's start.
    assert!((30.0..60.0).contains(&ack_delay_ms), "{ack_delay_ms:.2} ms per hold: {held:?}");
    // Each hold costs the client about what it lost: within 25 % of its median.
    let hold_ms = held.held.as_secs_f64() / held.holds as f64 * 1e3;
    assert!(
        (hold_ms / client_ms[5] - 1.0).abs() < 0.25,
        "hold {hold_ms:.2} ms, client {:.2} ms",
        client_ms[5]
    );

    let twin_held = server_side(&watch, &twin);
    assert_eq!(twin_held.holds, 0, "{twin_held:?}");
    assert!(twin_held.sends >= 20, "{twin_held:?}");
}

#[test]
fn a_static_go_server_turning_nodelay_off_is_seen_holding() {
    // Its listener calls SetNoDelay(false) on each connection; an 8000-byte body leaves
    // net/http's 4 KB buffer in two writes, the second held.
    let server = Server::go(&["-nagle", "-body-bytes", "8000"]);
    mount_tracefs();
    let watch = HoldWatch::start().unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut client_ms: Vec<f64> = (0..10).map(|_| get(&mut stream).as_secs_f64() * 1e3).collect();
    client_ms.sort_by(f64::total_cmp);
    let held = server_side(&watch, &server);
    assert!(client_ms[5] > 30.0, "the client's median: {:.2} ms", client_ms[5]);
    // The first exchange of a new connection is ACKed at once (quick-ACK mode).
    assert!(held.holds >= 8, "{held:?}");
    let hold_ms = held.held.as_secs_f64() / held.holds as f64 * 1e3;
    assert!(
        (hold_ms / client_ms[5] - 1.0).abs() < 0.25,
        "hold {hold_ms:.2} ms, client {:.2} ms",
        client_ms[5]
    );
}
