//! uWSGI's HTTP router started as its quickstart shows (`uwsgi --http :PORT --wsgi-file
//! app.py`): it closes the connection after every response without saying so, so a
//! keep-alive client's every second request fails. The doctor recognises the pattern,
//! measures on fresh connections, and names `connection-per-request` (not
//! `unreliable-measurement`). uWSGI comes from Debian's packages (scripts/setup.sh).

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running uWSGI (its HTTP router and one worker), killed when dropped.
struct Uwsgi {
    child: Child,
    port: u16,
}

impl Drop for Uwsgi {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created for uWSGI and its router.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Starts `uwsgi --http 127.0.0.1:0 --wsgi-file tests/peers/uwsgi_app.py` (Debian's build
/// loads the router and Python as plugins), or `None` when uWSGI is not installed.
fn uwsgi() -> Option<Uwsgi> {
    let plugins = std::path::Path::new("/usr/lib/uwsgi/plugins");
    if Command::new("uwsgi").arg("--version").output().is_err() || !plugins.join("python3_plugin.so").exists()
    {
        return None;
    }
    let mut child = Command::new("uwsgi")
        .args(["--plugins", "http,python3", "--http", "127.0.0.1:0", "--disable-logging", "--wsgi-file"])
        .arg(peer_script("uwsgi_app.py"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start uwsgi");
    // uWSGI binds port 0 and logs ":0": the port is read from the router's descriptor.
    let mut log = BufReader::new(child.stderr.take().unwrap());
    let mut router_fd = None;
    let mut line = String::new();
    while log.read_line(&mut line).expect("uwsgi's log") > 0 {
        if let Some(fd) =
            line.trim().strip_prefix("uWSGI http bound on ").and_then(|l| l.rsplit(" fd ").next())
        {
            router_fd = fd.parse::<u32>().ok();
        }
        if line.starts_with("spawned uWSGI worker") {
            break;
        }
        line.clear();
    }
    // The rest of its log, drained so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    let fd = router_fd.expect("uWSGI's 'http bound on ... fd N' line");
    let port = listening_port(child.id(), fd);
    Some(Uwsgi { child, port })
}

/// The port that descriptor `fd` of `pid` listens on, from /proc (its inode in /proc/net/tcp).
fn listening_port(pid: u32, fd: u32) -> u16 {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).expect("the router's descriptor");
    let inode = link.to_str().and_then(|l| l.strip_prefix("socket:[")?.strip_suffix(']')).expect("a socket");
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let line = table
        .lines()
        .find(|line| line.split_whitespace().nth(9) == Some(inode))
        .unwrap_or_else(|| panic!("inode {inode} in /proc/net/tcp"));
    let local = line.split_whitespace().nth(1).unwrap();
    u16::from_str_radix(local.rsplit(':').next().unwrap(), 16).unwrap()
}

/// One GET on `stream`: the response's head and body, or what went wrong.
fn get(stream: &mut TcpStream) -> std::io::Result<String> {
    stream.write_all(b"GET / HTTP/1.1\r\nHost: u\r\n\r\n")?;
    let mut response = Vec::new();
    let mut buffer = [0; 4096];
    while !String::from_utf8_lossy(&response).ends_with("Hello World\n") {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        response.extend_from_slice(&buffer[..n]);
    }
    Ok(String::from_utf8_lossy(&response).into_owned())
}

#[test]
fn uwsgi_http_router_closing_every_connection_unannounced_is_connection_per_request() {
    let Some(server) = uwsgi() else {
        eprintln!(
            "skipped: uWSGI is not installed (scripts/setup.sh installs uwsgi-core uwsgi-plugin-python3)"
        );
        return;
    };
    let url = format!("http://127.0.0.1:{}/", server.port);
    // Ground truth with plain sockets: a framed response without Connection: close, then
    // the same connection closed under the next request; a new connection answers again.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let first = get(&mut stream).expect("the first response");
    let head = first.to_ascii_lowercase();
    assert!(head.contains("content-length: 12") && !head.contains("connection:"), "{first}");
    assert!(get(&mut stream).is_err(), "uWSGI kept the connection");
    get(&mut TcpStream::connect(("127.0.0.1", server.port)).unwrap()).expect("a new connection");

    let run = nodelay(&["doctor", "--json", &url]);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("doctor.schema.json", &report);
    assert_eq!(finding_ids(&report), ["connection-per-request"], "{report:#}");
    let finding = finding(&report, "connection-per-request");
    assert!(
        finding["title"].as_str().unwrap().contains("without saying so (no Connection: close)"),
        "{finding:#}"
    );
    assert_eq!(evidence(finding, "keep-alive responses with Connection: close"), 0.0);
    // Every second keep-alive request failed; none on fresh connections.
    let baseline = &report["phases"][0];
    let (failed, attempts) = (baseline["errors"].as_u64().unwrap(), baseline["attempts"].as_u64().unwrap());
    assert!(failed * 2 >= attempts - 1 && failed * 2 <= attempts, "{baseline:#}");
    assert_eq!(evidence(finding, "keep-alive requests that failed"), failed as f64);
    assert_eq!(evidence(finding, "fresh-connection requests that failed"), 0.0);
    let fresh = &report["phases"][1];
    assert!(fresh["name"].as_str().unwrap().contains("new-connection-per-request"), "{fresh:#}");
    assert_eq!(
        (fresh["errors"].as_u64(), fresh["responses"].as_u64() >= Some(3)),
        (Some(0), true),
        "{fresh:#}"
    );
    assert_eq!(finding["fix"][0]["stack"], "uWSGI --http", "{finding:#}");

    let text = nodelay(&["doctor", &url]);
    assert_eq!(text.code(), 3, "{}", text.stderr());
    let stdout = text.stdout();
    assert!(stdout.lines().all(|line| line.chars().count() <= 80), "{stdout}");
    assert!(stdout.contains("verdict: connection-per-request"), "{stdout}");
    assert!(!stdout.contains("unreliable-measurement"), "{stdout}");
}
