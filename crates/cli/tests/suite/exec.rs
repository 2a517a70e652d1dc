//! `nodelay exec`: the shim inside a real process (tests/peers/shim_checker.c), transparency
//! (exit status, signals, stdio, PID), a shell's 126/127, and real servers made healthy: by
//! the preload (Python's http.server) and from outside (a statically linked C server).

use crate::common::{Peer, compiled, compiled_static, nodelay, read_until, start_peer, wait_until};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

const NODELAY: &str = env!("CARGO_BIN_EXE_nodelay");

fn exec_command(args: &[&str]) -> Command {
    let mut command = Command::new(NODELAY);
    command.arg("exec").args(args).env_remove("COLUMNS");
    command
}

/// What nodelay exec said, without the line breaks (and indents) of its wrapping: all
/// whitespace goes, since a path wider than a line is cut where the line ends.
fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect()
}

/// The line before a preloaded program starts: it names the program and, since LD_PRELOAD
/// reaches them the same way, the programs it starts, with the ones it cannot reach.
fn start_line(program: &str) -> String {
    format!(
        "nodelay exec: TCP_NODELAY forced (LD_PRELOAD) on every TCP socket of {program} and of the \
         programs it starts, unless statically linked, set-ID or Go"
    )
}

/// Every line of `text` fits `width` columns, and a message's later lines are indented.
fn assert_fits(text: &str, width: usize) {
    for line in text.lines() {
        assert!(line.chars().count() <= width, "wider than {width} columns: {line:?} in\n{text}");
        assert!(line.starts_with("nodelay exec: ") || line.starts_with("  "), "{text}");
    }
}

/// Lines of the checker's report that say FAIL, by check name.
fn failed_checks(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("FAIL "))
        .map(|line| line.split_once(": ").map_or(line, |(name, _)| name).to_string())
        .collect()
}

#[test]
fn the_shim_does_its_checks_inside_a_real_program() {
    let checker = compiled("shim_checker.c");
    let run = nodelay(&["exec", "--", &checker]);
    assert_eq!(run.code(), 0, "{}{}", run.stdout(), run.stderr());
    let stdout = run.stdout();
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 20, "{stdout}");
    assert!(stdout.contains("ok [shim] loaded"), "{stdout}");
    assert_fits(&run.stderr(), 80);
    assert_eq!(unwrapped(&run.stderr()), unwrapped(&start_line(&checker)));

    // Without the shim, exactly the checks that depend on it fail: the checker can fail.
    let without = Command::new(&checker).output().expect("run the checker");
    let stdout = String::from_utf8_lossy(&without.stdout).into_owned();
    assert_eq!(without.status.code(), Some(1), "{stdout}");
    let failed = failed_checks(&stdout);
    assert!(failed.len() >= 6 && failed.iter().all(|name| name.starts_with("[shim] ")), "{stdout}");
    let shim_checks = stdout.lines().filter(|l| l.contains("[shim] ")).count();
    assert_eq!(failed.len(), shim_checks, "{stdout}");
}

#[test]
fn what_exec_says_is_wrapped_to_columns_when_stderr_is_not_a_terminal() {
    let output = exec_command(&["--", "true"]).env("COLUMNS", "30").output().expect("run nodelay exec");
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_fits(&stderr, 30);
    assert_eq!(unwrapped(&stderr), unwrapped(&start_line("true")));
}

#[test]
fn under_a_shell_the_start_line_does_not_promise_a_static_child() {
    // `sh -c './static-server'`: sh is preloaded, the static server it starts is not, and the
    // line said "every TCP socket of sh" as if that covered it.
    let server = compiled_static("c_split_server.c");
    let script = format!("test -x '{server}'");
    let run = nodelay(&["exec", "--", "sh", "-c", &script]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let said = unwrapped(&run.stderr());
    assert_eq!(said, unwrapped(&start_line("sh")));
    assert!(said.contains(&unwrapped("and of the programs it starts, unless statically linked")), "{said}");
}

#[test]
fn the_exit_status_is_the_programs() {
    let run = nodelay(&["exec", "--quiet", "--", "sh", "-c", "exit 7"]);
    assert_eq!(run.code(), 7);
    assert_eq!(run.stderr(), "", "--quiet prints nothing");
    assert_eq!(nodelay(&["exec", "-q", "true"]).code(), 0);
}

#[test]
fn arguments_that_are_not_utf8_reach_the_program_byte_for_byte() {
    // They panicked before clap saw them (exit 101): main read them as Strings.
    let odd = OsStr::from_bytes(b"caf\xe9 \xff");
    let output = exec_command(&["-q", "--", "sh", "-c", "printf %s \"$1\"", "sh"])
        .arg(odd)
        .output()
        .expect("run nodelay exec");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(output.stdout, odd.as_bytes(), "{output:?}");
    assert_eq!(output.stderr, b"", "{output:?}");
}

#[test]
fn an_unknown_option_before_the_program_is_a_usage_error() {
    // It was taken for the program: "--quite: command not found", exit 127.
    for args in [&["exec", "--quite", "--", "true"][..], &["exec", "-x", "true"]] {
        let run = nodelay(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        let first = run.stderr().lines().next().unwrap_or_default().to_string();
        assert!(first.contains(&format!("unexpected argument '{}'", args[1])), "{}", run.stderr());
    }
    // After PROGRAM every word is the program's, options and `--` too, with or without `--`.
    for args in [&["exec", "-q", "sh"][..], &["exec", "-q", "--", "sh"]] {
        let script = ["-c", "printf '%s ' \"$@\"", "sh", "-x", "--quiet", "--", "-q"];
        let run = nodelay(&[args, &script[..]].concat());
        assert_eq!((run.code(), run.stdout()), (0, "-x --quiet -- -q ".to_string()), "{}", run.stderr());
    }
}

#[test]
fn a_program_killed_by_a_signal_is_seen_killed_by_it() {
    // nodelay became the program, so its parent sees the signal itself...
    let output = exec_command(&["-q", "--", "sh", "-c", "kill -TERM $$"]).output().expect("run");
    assert_eq!(output.status.signal(), Some(libc::SIGTERM), "{output:?}");
    // ...and a shell reports 128+N, as for the program run directly.
    let script = format!("{NODELAY} exec -q -- sh -c 'kill -INT $$'; echo $?");
    let output = Command::new("sh").args(["-c", &script]).output().expect("sh");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "130");
}

/// Starts `nodelay exec -- cat` and waits, by an echoed line, until cat runs.
fn running_cat() -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = exec_command(&["-q", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start nodelay exec");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    child.stdin.as_mut().expect("stdin").write_all(b"ready\n").expect("write");
    read_until(&mut stdout, "cat", |line| line == "ready\n");
    (child, stdout)
}

#[test]
fn sigint_and_sigterm_reach_the_program_and_stdio_passes_through() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (mut child, _stdout) = running_cat();
        // SAFETY: signals our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(signal), "{status:?}");
    }
    let (mut child, mut stdout) = running_cat();
    child.stdin.as_mut().expect("stdin").write_all(b"one\ntwo\n").expect("write");
    drop(child.stdin.take());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read");
    assert_eq!(rest, "one\ntwo\n");
    assert!(child.wait().expect("wait").success());
}

#[test]
fn the_pid_is_the_programs() {
    let child =
        exec_command(&["-q", "--", "sh", "-c", "echo $$"]).stdout(Stdio::piped()).spawn().expect("start");
    let pid = child.id();
    let output = child.wait_with_output().expect("wait");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), pid.to_string());
}

#[test]
fn a_missing_program_is_127_and_a_non_executable_one_126() {
    let run = nodelay(&["exec", "--", "nodelay-no-such-program"]);
    assert_eq!(run.code(), 127);
    assert_eq!(run.stderr(), "nodelay exec: nodelay-no-such-program: command not found\n");
    assert_eq!(run.stdout(), "");

    let run = nodelay(&["exec", "--", "/nonexistent/program"]);
    assert_eq!(run.code(), 127);
    assert_eq!(run.stderr(), "nodelay exec: /nonexistent/program: No such file or directory\n");

    let plain = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exec-not-executable");
    std::fs::write(&plain, "#!/bin/sh\necho should not run\n").expect("write");
    let run = nodelay(&["exec", "--", plain.to_str().expect("utf-8")]);
    assert_eq!(run.code(), 126);
    assert_eq!(run.stderr(), format!("nodelay exec: {}: Permission denied\n", plain.display()));
    assert_eq!(run.stdout(), "");

    let run = nodelay(&["exec", "--", "/"]);
    assert_eq!((run.code(), run.stderr()), (126, "nodelay exec: /: Is a directory\n".to_string()));
    // PROGRAM is required: a usage error, not a shell status.
    assert_eq!(nodelay(&["exec"]).code(), 2);
}

fn verdict(peer: &Peer) -> String {
    let run = nodelay(&["doctor", "--json", &peer.url("/")]);
    let report = run.json();
    report["verdict"].as_str().unwrap_or_else(|| panic!("no verdict: {report}")).to_string()
}

/// A server started under `nodelay exec --quiet` whose stderr is read: the notice that comes
/// before the program starts, and after the program the watcher's lines (if any).
struct Announced {
    child: Child,
    notice: String,
    port: u16,
    stderr: ChildStderr,
}

impl Announced {
    fn start(program: &str, args: &[&str]) -> Announced {
        let mut child = exec_command(&[&["--quiet", "--", program][..], args].concat())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nodelay exec");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("PORT line");
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("PORT <n>");
        // The program runs, so nodelay wrote all it had to say before the exec: the notice is
        // what the pipe holds now, however many lines its wrapping made.
        let mut stderr = child.stderr.take().expect("stderr");
        let notice = already_written(&mut stderr);
        Announced { child, notice, port, stderr }
    }

    fn verdict(&self) -> String {
        let run = nodelay(&["doctor", "--json", &format!("http://127.0.0.1:{}/", self.port)]);
        run.json()["verdict"].as_str().unwrap_or_else(|| panic!("no verdict: {}", run.stderr())).to_string()
    }

    /// Ends the program; the watcher ends with it. Returns what was left on stderr.
    fn stop(mut self) -> String {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).expect("stderr closes when the watcher ends");
        rest
    }
}

/// A failed assertion must not leave the program (and its watcher) running.
impl Drop for Announced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_static_server_is_told_and_made_healthy_from_outside() {
    let server = compiled_static("c_split_server.c");
    // The control: the same binary without exec stalls.
    let plain = start_peer(&server, &[]);
    assert_ne!(verdict(&plain), "healthy");
    drop(plain);

    // --quiet does not silence the notice: the guarantee is weaker than the usual one.
    let peer = Announced::start(&server, &[]);
    // One paragraph, wrapped to 80 columns (stderr is a pipe): it was one 240-column line.
    assert_fits(&peer.notice, 80);
    assert_eq!(peer.notice.matches("nodelay exec: ").count(), 1, "{}", peer.notice);
    let notice = unwrapped(&peer.notice);
    assert!(
        notice.starts_with(&unwrapped(&format!("nodelay exec: {server} is statically linked; "))),
        "{notice}"
    );
    let end = format!("between two scans if {server} turns NODELAY off per connection");
    assert!(notice.contains("fromoutside") && notice.ends_with(&unwrapped(&end)), "{notice}");
    // Once a scan has set it on the listening socket, every connection inherits it; waiting for
    // that keeps the doctor's first connection from racing the first scan.
    wait_until("the watcher to set TCP_NODELAY on the listening socket", Duration::from_secs(10), || {
        listener_nodelay(peer.port) == Some(true)
    });
    assert_eq!(peer.verdict(), "healthy");
    // Having nothing to report, the watcher said nothing.
    assert_eq!(peer.stop(), "");
}

/// What `pipe` holds now, read without waiting for more.
fn already_written(pipe: &mut ChildStderr) -> String {
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; the flags are restored before returning.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(flags >= 0 && unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } == 0);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("reading stderr: {e}"),
        }
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) }, 0);
    String::from_utf8(bytes).expect("UTF-8")
}

/// Opens a keep-alive connection to a local server and has one response started on it, so
/// the server has accepted it (and run whatever it does to accepted sockets).
fn connection_with_a_response(port: u16) -> TcpStream {
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    client.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("send");
    let mut first = [0u8; 1];
    client.read_exact(&mut first).expect("a response starts");
    client
}

/// TCP_NODELAY of the socket listening on `port`, as `nodelay inspect :PORT` reads it.
fn listener_nodelay(port: u16) -> Option<bool> {
    let report = nodelay(&["inspect", &format!(":{port}"), "--json"]).json();
    let sockets = report["sockets"].as_array().expect("sockets");
    sockets.iter().find(|s| s["state"] == "listen").and_then(|s| s["nodelay"].as_bool())
}

/// TCP_NODELAY of the server's side of `client`, as `nodelay inspect :PORT` reads it.
fn server_side_nodelay(port: u16, client: &TcpStream) -> Option<bool> {
    let ours = client.local_addr().expect("local address").to_string();
    let run = nodelay(&["inspect", &format!(":{port}"), "--json"]);
    let report = run.json();
    let sockets = report["sockets"].as_array().expect("sockets");
    sockets.iter().find(|s| s["peer"] == ours.as_str()).and_then(|s| s["nodelay"].as_bool())
}

#[test]
fn a_go_server_that_turns_nodelay_off_is_told_and_fixed_from_outside() {
    // Dynamically linked (net uses cgo), yet past any preload: Go makes its own system calls.
    // With -nagle it turns TCP_NODELAY off on every connection it accepts (a 25 KB body then
    // stalls: peers.rs, go_25k_nagle_on), after the socket inherited the listener's setting.
    let server = compiled("go_http_server.go");
    let args = ["-nagle", "-body-bytes", "25000"];
    let plain = start_peer(&server, &args);
    let client = connection_with_a_response(plain.port);
    assert_eq!(server_side_nodelay(plain.port, &client), Some(false), "the control: Go turned it off");
    drop((client, plain));

    let peer = Announced::start(&server, &args);
    assert_fits(&peer.notice, 80);
    let start = unwrapped(&format!("nodelay exec: {server} is a Go program"));
    assert!(unwrapped(&peer.notice).starts_with(&start), "{}", peer.notice);
    // The watcher's next scan turns it back on. How soon is the fallback's stated limit (a
    // doctor run racing the scans is healthy on an idle machine, not always on a busy one), so
    // this waits for the scan rather than timing requests.
    let client = connection_with_a_response(peer.port);
    wait_until("the watcher to set TCP_NODELAY on Go's accepted connection", Duration::from_secs(10), || {
        server_side_nodelay(peer.port, &client) == Some(true)
    });
    drop(client);
    assert_eq!(peer.stop(), "");
}
