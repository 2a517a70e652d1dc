//! The HTTP/2 and gRPC peers of the tests, all real servers: Go net/http (h2c and h2 over
//! TLS), grpc-go's Greeter, Node's `http2`, hypercorn, nghttpd and nginx's `http2`. Each
//! starter returns once the peer listens on a port the kernel chose. The peers' flags
//! (`--body-bytes`, `--max-streams`, `--delay-ms`, `--nagle`, ...) are described at the top
//! of each one's source in tests/peers.

use super::nginx::Nginx;
use super::{Peer, compiled, node_peer, peer_script, python_peer, start_peer};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Go net/http with the standard library's HTTP/2 (tests/peers/go_h2c_server.go): h2c by
/// prior knowledge beside HTTP/1.1, or h2 over TLS by ALPN with `--cert`/`--key`.
pub fn go_h2c(args: &[&str]) -> Peer {
    start_peer(&compiled("go_h2c_server.go"), args)
}

/// Node's `http2` module (tests/peers/node_http2_server.js): h2c, or h2 over TLS by ALPN
/// with `--cert`/`--key` (HTTP/1.1 allowed beside it).
pub fn node_h2(args: &[&str]) -> Peer {
    node_peer("node_http2_server.js", args)
}

/// hypercorn serving an ASGI app over h2c (tests/peers/hypercorn_app.py).
pub fn hypercorn(args: &[&str]) -> Peer {
    python_peer("hypercorn_app.py", args)
}

/// Debian's nghttpd over h2c (tests/peers/nghttpd_peer.py); the peer's pid is nghttpd's.
pub fn nghttpd(args: &[&str]) -> Peer {
    python_peer("nghttpd_peer.py", args)
}

/// grpc-go's helloworld Greeter (tests/peers/grpc_server), built on first use.
pub fn grpc_server(args: &[&str]) -> Peer {
    start_peer(&grpc_server_binary(), args)
}

/// The binary of tests/peers/grpc_server (a Go module: grpc-go and protobuf), built with
/// `go build` into CARGO_TARGET_TMPDIR by the first test process that needs it, and again
/// only when a file of the module is newer. It is also a gRPC client: [`grpc_call`].
pub fn grpc_server_binary() -> String {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peers");
            std::fs::create_dir_all(&dir).expect("peer build dir");
            let output = dir.join("grpc_server");
            let module = peer_script("grpc_server");
            let entries = std::fs::read_dir(&module).expect("tests/peers/grpc_server");
            let sources: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
            super::build_fresh(&output, &sources, |partial| {
                let built = Command::new("go")
                    .args(["build", "-buildvcs=false", "-o"])
                    .arg(partial)
                    .arg(".")
                    .current_dir(&module)
                    .output()
                    .unwrap_or_else(|e| panic!("cannot run go build: {e}"));
                assert!(
                    built.status.success(),
                    "go build of tests/peers/grpc_server failed (scripts/setup.sh downloads its modules):\n{}",
                    String::from_utf8_lossy(&built.stderr)
                );
            });
            output.to_string_lossy().into_owned()
        })
        .clone()
}

/// Runs grpc-go as a client of the Greeter on `port` (`--client`, with `args` such as
/// `--calls 3`) within 20 s; its output line ("OK <n> calls, reply <bytes> bytes, median <ms> ms") or a
/// panic with its error.
pub fn grpc_call(port: u16, args: &[&str]) -> String {
    let address = format!("127.0.0.1:{port}");
    let output = Command::new("timeout")
        .args(["20", &grpc_server_binary(), "--client", &address])
        .args(args)
        .output()
        .expect("run the grpc-go client");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert!(
        output.status.success(),
        "grpc-go client failed: {}{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// nginx 1.22 with `http2` on its port, h2c (prior knowledge; HTTP/1.1 is refused there),
/// serving `server_body`, the inside of its `server { }` block (`location`s, `http2_*`
/// directives). See [`nginx_with_http2`] for how.
pub fn nginx_h2c(server_body: &str) -> Nginx {
    nginx_with_http2(server_body, false)
}

/// The same over TLS, HTTP/2 or HTTP/1.1 by ALPN: `server_body` names the certificate and
/// key (`ssl_certificate`, `ssl_certificate_key`).
pub fn nginx_h2_tls(server_body: &str) -> Nginx {
    nginx_with_http2(server_body, true)
}

/// The server block of an nginx that answers every path with `body_bytes` bytes of 'x'
/// (`return 200`), advertising `max_streams` (http2_max_concurrent_streams) if given.
pub fn nginx_body_server(body_bytes: usize, max_streams: Option<u32>) -> String {
    let limit = max_streams.map_or(String::new(), |n| format!("    http2_max_concurrent_streams {n};\n"));
    format!("{limit}    location / {{\n        return 200 \"{}\";\n    }}\n", "x".repeat(body_bytes))
}

/// nginx 1.22 turns HTTP/2 on with a `listen` parameter (`http2 on;` came in 1.25), and
/// [`Nginx::start`] writes the `listen` itself, on a port it learns only once nginx holds
/// the socket. So nginx starts with an empty `include`d file beside the test's server; once
/// the port is known, the file gets a second server on the same address with
/// `listen ... http2` and nginx reloads (SIGHUP), keeping its listening socket. nginx 1.22
/// ORs `http2` over every `listen` of one address (ngx_http_add_addresses), so the test's
/// server speaks HTTP/2 from the new worker on. Returns once the old worker has gone.
fn nginx_with_http2(server_body: &str, tls: bool) -> Nginx {
    static STARTED: AtomicU32 = AtomicU32::new(0);
    let include = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "nginx-h2-listen-{}-{}.conf",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(&include, "").expect("write the include");
    let snippet = format!("server {{\n{server_body}}}\ninclude {};\n", include.display());
    let nginx = if tls { Nginx::start_tls(&snippet) } else { Nginx::start(&snippet) };
    // Without `ssl`: nginx ORs that over the address too, and the test's server, the first
    // on the address and so its default, holds the certificate.
    let second = format!(
        "server {{\n    listen 127.0.0.1:{} http2;\n    server_name http2-switch.invalid;\n    return 444;\n}}\n",
        nginx.port
    );
    std::fs::write(&include, second).expect("write the include");
    let old_workers = nginx.worker_pids();
    // SAFETY: kill(2) with SIGHUP on the nginx master this helper started.
    assert_eq!(unsafe { libc::kill(nginx.pid() as libc::pid_t, libc::SIGHUP) }, 0, "signal nginx");
    super::wait_until("nginx's reload", Duration::from_secs(10), || {
        let workers = nginx.worker_pids();
        !workers.is_empty() && workers.iter().all(|w| !old_workers.contains(w))
    });
    let _ = std::fs::remove_file(&include);
    nginx
}
