//! The docs' examples run: every `$ nodelay ...` line in a code block of README.md and
//! docs/*.md is run with bash against real servers on loopback and must exit with the status
//! the docs give (0, or the `exit N` of its comment), so a mistyped command, flag or file name
//! fails here. docs/README.md states the conventions: which server each port stands for, the
//! files each guide's directory holds, and `# not tested: WHY` for the few left out.

use crate::common;

use crate::common::repo_root;
use nodelay_doctor::demo_servers::{DemoBehaviour, start_demo_server};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The longest one command may take: each is bounded by its `-n`, `-d` or `--budget`, and
/// the slowest (the doctor's default 10 s budget) ends well within this.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// One `$ nodelay ...` line of the docs.
struct DocCommand {
    /// `docs/bench.md:42`, for messages.
    place: String,
    /// The line as bash runs it, without its `$ `.
    shell: String,
    /// 0 unless its comment says `exit N`.
    expected_status: i32,
    /// Why the test leaves it out (`# not tested: WHY`).
    not_tested: Option<String>,
}

/// README.md, then the guides in name order.
fn doc_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    guides.sort();
    std::iter::once(root.join("README.md")).chain(guides).collect()
}

/// The `$ nodelay ` lines inside the file's code blocks, in order.
fn doc_commands(path: &Path) -> Vec<DocCommand> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.strip_prefix(repo_root()).unwrap_or(path).display().to_string();
    let mut in_code = false;
    let mut commands = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let Some(shell) = line.strip_prefix("$ ").filter(|shell| in_code && shell.starts_with("nodelay "))
        else {
            continue;
        };
        let place = format!("{name}:{}", index + 1);
        let comment = comment_of(shell);
        let not_tested = comment.split_once("not tested:").map(|(_, why)| why.trim().to_string());
        assert!(not_tested.as_ref().is_none_or(|why| !why.is_empty()), "{place}: say why it is not tested");
        commands.push(DocCommand {
            place,
            shell: shell.to_string(),
            expected_status: expected_status(comment),
            not_tested,
        });
    }
    assert!(!in_code, "{name}: a code block is not closed");
    commands
}

/// The comment that ends a shell line: what follows the first `#` that starts a word outside
/// quotes, as bash reads it.
fn comment_of(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match quote {
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return line[at + 1..].trim(),
            None => {}
        }
        previous = c;
    }
    ""
}

/// The status a comment gives with `exit N`; 0 without one.
fn expected_status(comment: &str) -> i32 {
    comment
        .match_indices("exit ")
        .find_map(|(at, word)| {
            let rest = &comment[at + word.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            rest[..digits].parse().ok()
        })
        .unwrap_or(0)
}

/// The servers the docs' ports stand for (the table in docs/README.md).
#[derive(Clone, Copy, Debug)]
enum Server {
    Stall,
    Healthy,
    Slow,
    Tls,
    Backlog,
    Line,
    LengthPrefixed,
    /// No server: the port `nodelay proxy --listen` takes (any free one).
    ProxyListen,
}

fn server_for(docs_port: u16) -> Option<Server> {
    Some(match docs_port {
        8000 => Server::Stall,
        8080 => Server::Healthy,
        8082 => Server::Slow,
        8443 => Server::Tls,
        5000 => Server::Backlog,
        6379 => Server::Line,
        9000 => Server::LengthPrefixed,
        8001 | 0 => Server::ProxyListen,
        _ => return None,
    })
}

/// Where a line names a local port: `127.0.0.1:P`, `localhost:P`, `[::1]:P`, or `:P` as a
/// word of its own (`nodelay fix :8000`): the byte range of the digits and the port.
fn port_references(line: &str) -> Vec<(std::ops::Range<usize>, u16)> {
    line.match_indices(':')
        .filter_map(|(colon, _)| {
            let before = &line[..colon];
            let local = ["127.0.0.1", "localhost", "[::1]"].iter().any(|host| before.ends_with(host))
                || before.is_empty()
                || before.ends_with(char::is_whitespace);
            let digits = line[colon + 1..].bytes().take_while(u8::is_ascii_digit).count();
            let range = colon + 1..colon + 1 + digits;
            (local && digits > 0).then(|| (range.clone(), line[range].parse().expect("a port number")))
        })
        .collect()
}

/// The line with each docs port replaced by the port of the server it stands for.
fn with_real_ports(command: &DocCommand, ports: &BTreeMap<u16, u16>) -> String {
    let mut line = command.shell.clone();
    for (range, docs_port) in port_references(&command.shell).into_iter().rev() {
        let real = ports.get(&docs_port).unwrap_or_else(|| {
            panic!("{}: port {docs_port} stands for no server (docs/README.md lists them)", command.place)
        });
        line.replace_range(range, &real.to_string());
    }
    line
}

/// The servers one guide's commands use, started for that guide alone (so that a
/// `nodelay fix` in one guide leaves the others' servers as the docs say), and the real port
/// of each docs port.
struct Servers {
    ports: BTreeMap<u16, u16>,
    _peers: Vec<QuietPeer>,
}

/// A Python peer of tests/peers, killed when dropped. Its stderr is dropped: the loads reset
/// connections at their end, and Python prints a traceback for each.
struct QuietPeer {
    child: Child,
    port: u16,
}

impl Drop for QuietPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the peer and waits for its `PORT <n>` line: it is listening then.
fn python_peer(script: &str, args: &[&str]) -> QuietPeer {
    let mut child = Command::new("python3")
        .arg(common::peer_script(script))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("its stdout");
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("{script} printed {line:?} instead of PORT <n>"));
    QuietPeer { child, port }
}

fn start_servers(commands: &[DocCommand], dir: &Path) -> Servers {
    let docs_ports: BTreeSet<u16> = commands
        .iter()
        .filter(|command| command.not_tested.is_none())
        .flat_map(|command| port_references(&command.shell).into_iter().map(|(_, port)| port))
        .collect();
    let mut ports = BTreeMap::new();
    let mut peers = Vec::new();
    for docs_port in docs_ports {
        let Some(server) = server_for(docs_port) else { continue };
        let real = match server {
            Server::Stall => python_peer("python_http_server.py", &[]),
            Server::Tls => {
                let certs = common::tls::certs();
                let args = ["--cert", &certs.cert, "--key", &certs.key, "--disable-nagle"];
                python_peer("python_https_server.py", &args)
            }
            Server::Backlog => python_peer("backlog_server.py", &[]),
            Server::Healthy => {
                let port = demo(DemoBehaviour::SplitWritesNoDelay);
                answer_on_ipv6_loopback(port);
                ports.insert(docs_port, port);
                continue;
            }
            Server::Slow => {
                ports.insert(docs_port, demo(DemoBehaviour::SlowHandler(Duration::from_millis(40))));
                continue;
            }
            Server::Line => {
                let address = common::canned_server(b"\n", b"+PONG\r\n".to_vec());
                ports.insert(docs_port, address.rsplit_once(':').unwrap().1.parse().unwrap());
                continue;
            }
            Server::LengthPrefixed => {
                ports.insert(docs_port, length_prefixed_server());
                continue;
            }
            Server::ProxyListen => {
                ports.insert(docs_port, 0);
                continue;
            }
        };
        ports.insert(docs_port, real.port);
        peers.push(real);
    }
    std::fs::write(dir.join("ca.pem"), std::fs::read(&common::tls::certs().ca).unwrap()).unwrap();
    Servers { ports, _peers: peers }
}

fn demo(behaviour: DemoBehaviour) -> u16 {
    start_demo_server(behaviour).expect("a demo server").port()
}

/// Answers GETs on [::1] at the same port as the IPv4 server, for `http://[::1]:8080/`.
fn answer_on_ipv6_loopback(port: u16) {
    let listener = TcpListener::bind(("::1", port)).expect("[::1] at the IPv4 server's port");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                while !common::read_request_head(&mut stream).is_empty() {
                    if stream.write_all(common::OK_RESPONSE).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

/// Answers each message of a 4-byte big-endian length and a payload with `ok`, framed the
/// same way, in one write.
fn length_prefixed_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut length = [0u8; 4];
                while stream.read_exact(&mut length).is_ok() {
                    let mut payload = vec![0u8; u32::from_be_bytes(length) as usize];
                    if stream.read_exact(&mut payload).is_err() || stream.write_all(b"\0\0\0\x02ok").is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A guide's own working directory, holding the files docs/README.md promises.
fn working_directory(doc: &Path) -> PathBuf {
    let name = doc.file_stem().unwrap().to_string_lossy();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs_commands").join(&*name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a working directory");
    std::fs::write(dir.join("item.json"), "{\"name\": \"item\", \"quantity\": 1}\n").unwrap();
    let pcap = repo_root().join("tests/fixtures/pcap/ethernet_usec_le.pcap");
    std::fs::copy(pcap, dir.join("stall.pcap")).expect("stall.pcap");
    std::os::unix::fs::symlink(repo_root().join("tests"), dir.join("tests")).expect("tests/");
    dir
}

/// What a command did.
struct Ran {
    status: Option<i32>,
    output: String,
    elapsed: Duration,
}

/// Runs the line with bash in `dir`, `nodelay` being the binary under test; a proxy it starts
/// gets requests until it exits. Killed (status None) past [`COMMAND_LIMIT`].
fn run(line: &str, dir: &Path, line_protocol_upstream: bool) -> Ran {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_nodelay"));
    let path =
        format!("{}:{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let started = Instant::now();
    let mut child = Command::new("bash")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("COLUMNS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("run bash");
    let stdout = drain(child.stdout.take().unwrap(), None);
    let (listening, proxy_address) = mpsc::channel();
    let stderr = drain(child.stderr.take().unwrap(), Some(listening));
    let stop = Arc::new(AtomicBool::new(false));
    let client = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            if let Ok(address) = proxy_address.recv() {
                drive_proxy(&address, line_protocol_upstream, &stop);
            }
        })
    };
    let group = child.id() as libc::pid_t;
    let (exited, exit) = mpsc::channel();
    std::thread::spawn(move || exited.send(child.wait().expect("wait for bash")));
    let status = match exit.recv_timeout(COMMAND_LIMIT) {
        Ok(status) => status.code(),
        Err(_) => {
            unsafe { libc::kill(-group, libc::SIGKILL) };
            None
        }
    };
    stop.store(true, Ordering::SeqCst);
    client.join().expect("the proxy's client");
    let output = format!("{}{}", stdout.join().unwrap(), stderr.join().unwrap());
    Ran { status, output, elapsed: started.elapsed() }
}

/// Reads a pipe to its end on a thread of its own; with `listening`, sends the address of a
/// `listening on ADDR` line (a proxy ready for clients).
fn drain(
    pipe: impl Read + Send + 'static,
    listening: Option<mpsc::Sender<String>>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let (Some(sender), Some(address)) = (&listening, line.strip_prefix("listening on ")) {
                let _ = sender.send(address.trim().to_string());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    })
}

/// A client of a proxy the docs started: keep-alive HTTP GETs, or `PING` lines when the
/// upstream speaks the line protocol, until `stop` (the proxy exited).
fn drive_proxy(address: &str, line_protocol: bool, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let Ok(stream) = TcpStream::connect(address) else {
            // The proxy stopped listening and is about to exit: a retry, not a wait on it.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
        let mut writer = stream;
        while !stop.load(Ordering::SeqCst) {
            let request: &[u8] =
                if line_protocol { b"PING\r\n" } else { b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" };
            if writer.write_all(request).is_err() || !read_answer(&mut reader, line_protocol) {
                break;
            }
        }
    }
}

/// Reads one answer (a line, or an HTTP response with its Content-Length body): false when
/// the connection ended first.
fn read_answer(reader: &mut impl BufRead, line_protocol: bool) -> bool {
    let mut line = String::new();
    let mut body_bytes = 0usize;
    loop {
        line.clear();
        if !matches!(reader.read_line(&mut line), Ok(1..)) {
            return false;
        }
        if line_protocol {
            return true;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            body_bytes = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            return std::io::copy(&mut reader.take(body_bytes as u64), &mut std::io::sink()).is_ok();
        }
    }
}

/// The last lines of a command's output, for a failure message.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The commands of the README every user reads first: one tested example for each.
const COMMANDS: [&str; 14] = [
    "bench",
    "doctor",
    "pcap",
    "watch",
    "inspect",
    "fix",
    "demo",
    "exec",
    "proxy",
    "compare",
    "report",
    "schema",
    "completions",
    "man",
];

/// What the guides' commands did, gathered from the workers.
#[derive(Default)]
struct Tally {
    ran: usize,
    not_tested: Vec<String>,
    failures: Vec<String>,
}

/// Runs one guide's commands in order, in its own directory, against its own servers.
fn run_guide(doc: &Path, tally: &Mutex<Tally>) {
    let commands = doc_commands(doc);
    if commands.is_empty() {
        return;
    }
    let dir = working_directory(doc);
    let servers = start_servers(&commands, &dir);
    for command in &commands {
        if let Some(why) = &command.not_tested {
            tally.lock().unwrap().not_tested.push(format!("{}: {why}", command.place));
            continue;
        }
        let line = with_real_ports(command, &servers.ports);
        let line_protocol = command.shell.contains("--upstream 127.0.0.1:6379");
        let result = run(&line, &dir, line_protocol);
        println!("{:>6.2} s  {}  {}", result.elapsed.as_secs_f64(), command.place, command.shell);
        let mut tally = tally.lock().unwrap();
        tally.ran += 1;
        if result.status != Some(command.expected_status) {
            tally.failures.push(format!(
                "{}: `{line}` exited {:?}, the docs say {}:\n{}",
                command.place,
                result.status,
                command.expected_status,
                tail(&result.output)
            ));
        }
    }
}

/// How many guides run at once: each has its own servers and directory. The commands mostly
/// wait (on delayed-ACK timers, handlers that think, durations), so three at once keep the
/// whole test well within a minute on two cores without starving any one command's timing.
const WORKERS: usize = 3;

#[test]
fn every_command_in_the_docs_runs_and_exits_as_they_say() {
    let started = Instant::now();
    // Popped from the end: the README first, then the guides in name order.
    let queue = Mutex::new(doc_files().into_iter().rev().collect::<Vec<_>>());
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some(doc) = next else { break };
                    run_guide(&doc, &tally);
                }
            });
        }
    });
    let tally = tally.into_inner().unwrap();
    println!(
        "docs commands: {} run, {} not tested, in {:.1} s",
        tally.ran,
        tally.not_tested.len(),
        started.elapsed().as_secs_f64()
    );
    for why in &tally.not_tested {
        println!("  not tested: {why}");
    }
    let failures = &tally.failures;
    assert!(failures.is_empty(), "{} docs commands failed:\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(
        tally.not_tested.len() * 10 <= tally.ran,
        "more than one command in ten left out: {:#?}",
        tally.not_tested
    );
}

#[test]
fn the_readme_shows_every_command_once_at_least() {
    let readme = doc_commands(&repo_root().join("README.md"));
    for name in COMMANDS {
        let prefix = format!("nodelay {name}");
        assert!(
            readme.iter().any(|command| command.not_tested.is_none()
                && command.shell.split_whitespace().nth(1) == Some(name)),
            "the README has no tested `{prefix}` example"
        );
    }
}

#[test]
fn the_conventions_are_read_as_documented() {
    assert_eq!(
        comment_of("nodelay doctor http://127.0.0.1:8000/   # exit 3: a finding"),
        "exit 3: a finding"
    );
    assert_eq!(comment_of("nodelay bench tcp://127.0.0.1:6379 --send '# x' -n 1"), "");
    assert_eq!(expected_status("exit 3: a finding"), 3);
    assert_eq!(expected_status("127 when it is missing, exit 127"), 127);
    assert_eq!(expected_status("a Python server"), 0);
    let references: Vec<u16> =
        port_references("nodelay fix :8000 http://[::1]:8080/ --frame fixed:4 localhost:8443")
            .into_iter()
            .map(|(_, port)| port)
            .collect();
    assert_eq!(references, [8000, 8080, 8443]);
}
