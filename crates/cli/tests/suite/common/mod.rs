//! Shared by the integration tests: start real peer servers (which bind port 0 and print
//! "PORT <n>"), run the real `nodelay` binary, and read its JSON output.
pub mod relay;

pub mod capture;

#[macro_use]
pub mod controls;

pub mod h2;
pub mod hops;
pub mod nginx;
pub mod seccomp;
pub mod tls;
pub mod wan;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Held for its whole run by a test whose figures are latencies or CPU times compared across
/// runs: tests run side by side on 2 cores, and a server that waits for a core (another
/// timing test's Node, nginx, Python or bench) shows that wait, not what the test measures.
///
/// Under cargo-nextest (scripts/test.sh), where every test is a process of its own, the
/// `timing` test group of .config/nextest.toml schedules these tests, two at a time, and no
/// test slot waits here; a test outside the group fails at once, so the group stays whole.
/// Under `cargo test`, a lock on a file shared by every test process runs them one at a time.
pub fn alone() -> Option<MachineLock> {
    match std::env::var("NEXTEST_TEST_GROUP") {
        Ok(group) => {
            assert_eq!(
                group, "timing",
                "this test holds common::alone(): add it to the `timing` test group in .config/nextest.toml"
            );
            None
        }
        Err(_) => Some(MachineLock::take("alone")),
    }
}

/// An exclusive `flock` on a file under the workspace's test scratch directory, shared by
/// every test process of the run, until dropped; the kernel drops it if the holder dies.
pub struct MachineLock {
    _file: std::fs::File,
}

impl MachineLock {
    pub fn take(name: &str) -> MachineLock {
        use std::os::fd::AsRawFd;
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // SAFETY: flock takes a file descriptor that `file` keeps open.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let error = std::io::Error::last_os_error();
            assert_eq!(error.kind(), std::io::ErrorKind::Interrupted, "flock {}: {error}", path.display());
        }
        MachineLock { _file: file }
    }
}

/// The smallest complete keep-alive response, for test servers written in the test.
pub const OK_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One keep-alive GET on `stream`, read to the end of its body (its Content-Length); how
/// long it took. The tests' own client: plain sockets, no nodelay in the way.
pub fn keep_alive_get(stream: &mut std::net::TcpStream) -> Duration {
    use std::io::{Read, Write};
    let started = std::time::Instant::now();
    stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut response = Vec::new();
    let mut buffer = [0; 65536];
    loop {
        if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map(|value| value.trim().parse().unwrap())
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

/// Reads one request head (through its blank line) from a test server's connection; what came
/// before the peer closed or the read failed, if it never ended.
pub fn read_request_head(stream: &mut std::net::TcpStream) -> Vec<u8> {
    use std::io::Read;
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(n @ 1..) => head.extend_from_slice(&buffer[..n]),
            _ => break,
        }
    }
    head
}

/// A peer process, killed when dropped.
pub struct Peer {
    child: Child,
    pub port: u16,
    /// The rest of the peer's stdout, for peers that announce events.
    pub stdout: BufReader<std::process::ChildStdout>,
}

impl Peer {
    /// Blocks until the peer prints `expected` on a line of its own.
    pub fn wait_for_line(&mut self, expected: &str) {
        read_until(&mut self.stdout, "peer", |line| line.trim() == expected);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the peer is still running (it was not restarted or killed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `who`'s output line by line until `wanted` accepts one: how tests wait for a
/// process to be ready without sleeping. Panics if the output ends first.
pub fn read_until(output: &mut impl BufRead, who: &str, wanted: impl Fn(&str) -> bool) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = output.read_line(&mut line).unwrap_or_else(|e| panic!("reading {who}'s output: {e}"));
        assert!(n > 0, "{who} exited before it was ready");
        if wanted(&line) {
            return;
        }
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

pub fn peer_script(name: &str) -> PathBuf {
    repo_root().join("tests/peers").join(name)
}

/// Starts `program args...` and waits for its "PORT <n>" line: the peer is listening then,
/// so no sleep is needed.
pub fn start_peer(program: &str, args: &[&str]) -> Peer {
    start_command(Command::new(program).args(args))
}

/// Starts a prepared command line (a peer, or a wrapper such as `nodelay exec -- peer...`
/// that passes the peer's stdout through) and waits for its "PORT <n>" line.
pub fn start_command(command: &mut Command) -> Peer {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    stdout.read_line(&mut line).expect("peer stdout");
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{command:?} printed {line:?} instead of PORT <n>"));
    Peer { child, port, stdout }
}

/// The command line that runs a script of tests/peers with its interpreter.
pub fn script_command(interpreter: &str, script: &str, args: &[&str]) -> (String, Vec<String>) {
    let path = peer_script(script).to_str().expect("utf-8 path").to_string();
    let all = std::iter::once(path).chain(args.iter().map(|a| a.to_string())).collect();
    (interpreter.to_string(), all)
}

/// Starts a script of tests/peers with its interpreter: `script_peer("ruby", "x.rb", &[])`.
pub fn script_peer(interpreter: &str, script: &str, args: &[&str]) -> Peer {
    let (program, args) = script_command(interpreter, script, args);
    start_command(Command::new(program).args(args))
}

pub fn python_peer(script: &str, args: &[&str]) -> Peer {
    script_peer("python3", script, args)
}

pub fn node_peer(script: &str, args: &[&str]) -> Peer {
    script_peer("node", script, args)
}

fn must_run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(output.status.success(), "{command:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// Builds a peer from tests/peers once per test process: a C or Go program (returns the
/// binary) or a Java class (returns the class directory). A C source names the libraries it
/// needs on a comment line of its own, ` * link: -levent`; they go after the source.
pub fn compiled(source: &str) -> String {
    build_once(source, false)
}

/// Builds a C or Go peer of tests/peers statically linked (`cc -static` with glibc's libc.a;
/// Go with `CGO_ENABLED=0`): a program without a dynamic loader, which LD_PRELOAD cannot
/// reach. Returns the binary.
pub fn compiled_static(source: &str) -> String {
    assert!(
        source.ends_with(".c") || source.ends_with(".go"),
        "only C and Go peers link statically: {source}"
    );
    build_once(source, true)
}

fn build_once(source: &str, static_link: bool) -> String {
    static BUILT: OnceLock<Mutex<HashMap<(String, bool), String>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    let key = (source.to_string(), static_link);
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peers");
    std::fs::create_dir_all(&dir).expect("peer build dir");
    let stem = source.rsplit_once('.').map_or(source, |(stem, _)| stem);
    let output = dir.join(if static_link { format!("{stem}-static") } else { stem.to_string() });
    let path = peer_script(source);
    let result = match source.rsplit_once('.').map(|(_, ext)| ext) {
        Some("c") => {
            build_fresh(&output, std::slice::from_ref(&path), |partial| {
                let mut cc = Command::new("cc");
                cc.args(["-O2", "-pthread"]);
                if static_link {
                    cc.arg("-static");
                }
                must_run(cc.arg("-o").arg(partial).arg(&path).args(link_flags(&path)));
            });
            output.to_string_lossy().into_owned()
        }
        Some("go") => {
            build_fresh(&output, std::slice::from_ref(&path), |partial| {
                let mut go = Command::new("go");
                // Without cgo, Go links statically: no dynamic loader, so no LD_PRELOAD.
                if static_link {
                    go.env("CGO_ENABLED", "0");
                }
                must_run(go.args(["build", "-o"]).arg(partial).arg(&path));
            });
            output.to_string_lossy().into_owned()
        }
        Some("java") => {
            // javac writes its classes into the directory itself: the class named after the
            // source tells whether it is fresh.
            let _building = MachineLock::take("peer-build");
            if !is_newer_than(&dir.join(format!("{stem}.class")), &path) {
                must_run(Command::new("javac").arg("-d").arg(&dir).arg(&path));
            }
            dir.to_string_lossy().into_owned()
        }
        _ => panic!("no rule to build {source}"),
    };
    built.insert(key, result.clone());
    result
}

/// Builds `output` from `sources` unless it is newer than every one of them. Every test is a
/// process of its own under the runner: the first to need a build makes it, the others wait
/// on the lock and take it. `build` writes to the path it is given, renamed to `output` once
/// whole, so a process that finds `output` finds it complete.
pub fn build_fresh(output: &std::path::Path, sources: &[PathBuf], build: impl FnOnce(&std::path::Path)) {
    let _building = MachineLock::take("peer-build");
    if sources.iter().all(|source| is_newer_than(output, source)) {
        return;
    }
    let name = output.file_name().expect("a file name").to_string_lossy();
    let partial = output.with_file_name(format!(".{name}.{}", std::process::id()));
    build(&partial);
    std::fs::rename(&partial, output).unwrap_or_else(|e| panic!("rename {}: {e}", partial.display()));
}

/// Whether `built` exists and was written after `source` last changed.
pub fn is_newer_than(built: &std::path::Path, source: &std::path::Path) -> bool {
    let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    match (modified(built), modified(source)) {
        (Some(built), Some(source)) => built > source,
        _ => false,
    }
}

/// The linker flags a C source asks for on its ` * link: ...` comment line.
fn link_flags(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|line| {
            line.trim_start().trim_start_matches(['/', '*']).trim_start().strip_prefix("link:")
        })
        .flat_map(|flags| flags.trim_end().trim_end_matches("*/").split_whitespace().map(str::to_string))
        .collect()
}

pub struct Run {
    pub output: Output,
    pub elapsed: Duration,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.output.status.code().expect("exited normally, not by a signal")
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.output.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout(), self.stderr())
        })
    }
}

/// Runs the nodelay binary with `args`; its text is 80 columns wide, whatever `COLUMNS` the
/// tests were started with.
pub fn nodelay(args: &[&str]) -> Run {
    run_nodelay(Command::new(env!("CARGO_BIN_EXE_nodelay")).args(args).env_remove("COLUMNS"))
}

/// Runs the nodelay binary with `args`, its text fitted to a terminal `columns` wide.
pub fn nodelay_at_width(columns: usize, args: &[&str]) -> Run {
    run_nodelay(Command::new(env!("CARGO_BIN_EXE_nodelay")).args(args).env("COLUMNS", columns.to_string()))
}

fn run_nodelay(command: &mut Command) -> Run {
    let started = Instant::now();
    let output = command.stdin(Stdio::null()).output().expect("run nodelay");
    Run { output, elapsed: started.elapsed() }
}

/// The findings of a Nagle stall, and of a healthy server, for [`assert_verdict`].
pub const STALL: &[&str] = &["server-nagle-delayed-ack"];
pub const HEALTHY: &[&str] = &["healthy"];

/// Runs `nodelay doctor --json` against the peer and checks the exact list of findings and
/// the exit status (0 when healthy, 3 otherwise); a stall must be proven within 10 s. A
/// healthy server may instead carry the one note a busy machine earns it: CPU-bound at low
/// confidence because its threads waited for shared cores (never a stall).
pub fn assert_verdict(peer: &Peer, expected: &[&str]) {
    let run = nodelay(&["doctor", "--json", &peer.url("/")]);
    let report = run.json();
    let ids: Vec<&str> =
        report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    if expected == HEALTHY && contended_cpu_note_only(&report) {
        // A busy machine (a laptop, --under-load): a cold JVM's interpreter and JIT threads
        // waited for the cores longer than they ran. The doctor says so, unproven and low,
        // and names the shared cores: true of that run, and no stall.
        assert_eq!(run.code(), 3);
        return;
    }
    assert_eq!(ids, expected, "report:\n{report:#}");
    assert_eq!(run.code(), if expected == HEALTHY { 0 } else { 3 });
    if expected.contains(&"server-nagle-delayed-ack") {
        assert!(run.elapsed.as_secs() <= 10, "verdict took {:?}", run.elapsed);
        assert_eq!(report["findings"][0]["proven"], true);
    }
}

/// Whether the report's only finding is `server-cpu-bound` at low confidence, unproven,
/// because the server's threads waited for cores that others held (its title says so).
pub fn contended_cpu_note_only(report: &serde_json::Value) -> bool {
    let findings = report["findings"].as_array().expect("a findings array");
    let [finding] = findings.as_slice() else { return false };
    finding["id"] == "server-cpu-bound"
        && finding["confidence"] == "low"
        && finding["proven"] == false
        && finding["title"].as_str().is_some_and(|title| title.contains("the cores were shared"))
}

/// `verdict!(test_name, peer_expression, expected_findings)`: a test that starts the peer
/// and checks the doctor's verdict on it with [`assert_verdict`].
#[macro_export]
macro_rules! verdict {
    ($name:ident, $peer:expr, $expected:expr) => {
        #[test]
        fn $name() {
            let peer = $peer;
            $crate::common::assert_verdict(&peer, $expected);
        }
    };
}

/// The ids of a report's findings, in order (doctor, pcap, hops).
pub fn finding_ids(report: &serde_json::Value) -> Vec<String> {
    let findings = report["findings"].as_array().unwrap_or_else(|| panic!("no findings array in {report:#}"));
    findings.iter().map(|f| f["id"].as_str().expect("a finding id").to_string()).collect()
}

/// Runs nodelay with `args`, which must exit with `code` and one line on stderr holding every
/// one of `expected` (whitespace squeezed); returns that line.
pub fn fails_with(args: &[&str], code: i32, expected: &[&str]) -> String {
    let run = nodelay(args);
    let stderr = run.stderr();
    assert_eq!(run.code(), code, "{stderr}\n{}", run.stdout());
    for part in expected {
        assert!(squeeze(&stderr).contains(part), "{part:?} not in: {stderr}");
    }
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// The finding `id` of a report (doctor, bench, pcap); the test fails without it.
pub fn finding<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    let findings = report["findings"].as_array().unwrap_or_else(|| panic!("no findings array in {report:#}"));
    findings.iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no {id} in {report:#}"))
}

/// Runs `script` with bash (`set -e`, loopback up) in a network namespace of its own
/// (`unshare -n`: root or CAP_SYS_ADMIN), so that the sysctls it sets never touch the
/// machine's; `vars` and `$NODELAY` in its environment. It must succeed and print a bench
/// report: returned parsed and checked against its schema.
pub fn bench_in_own_network_namespace(script: &str, vars: &[(&str, PathBuf)]) -> serde_json::Value {
    let mut command = Command::new("unshare");
    let script = format!("set -e\nip link set lo up\n{script}");
    command.args(["-n", "bash", "-c", &script]).env("NODELAY", env!("CARGO_BIN_EXE_nodelay"));
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().expect("run unshare (util-linux)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the script in its own network namespace failed (unshare -n needs root or CAP_SYS_ADMIN): {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    validate_against_schema("bench.schema.json", &report);
    report
}

/// A percentile in milliseconds from a bench JSON section such as "latency_ms".
pub fn ms(report: &serde_json::Value, section: &str, percentile: &str) -> f64 {
    report[section][percentile].as_f64().unwrap_or_else(|| panic!("{section}.{percentile} in {report}"))
}

/// The median of each loop's runs (the middle one of an odd count): one figure per loop,
/// for judging loops run in interleaved rounds.
pub fn median_runs<const LOOPS: usize>(runs: &[Vec<f64>; LOOPS]) -> [f64; LOOPS] {
    runs.clone().map(|mut runs| {
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    })
}

/// The widest spread (highest less lowest) of any one loop's runs: how closely one loop's
/// runs agree with each other, against which two loops' medians are held.
pub fn widest_spread<const LOOPS: usize>(runs: &[Vec<f64>; LOOPS]) -> f64 {
    runs.iter()
        .map(|runs| {
            runs.iter().copied().fold(f64::MIN, f64::max) - runs.iter().copied().fold(f64::MAX, f64::min)
        })
        .fold(0.0, f64::max)
}

/// The value of a finding's evidence whose label starts with `label`; panics without one.
pub fn evidence(finding: &serde_json::Value, label: &str) -> f64 {
    finding["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"].as_str().is_some_and(|what| what.starts_with(label)))
        .and_then(|e| e["value"].as_f64())
        .unwrap_or_else(|| panic!("no evidence '{label}' in {finding:#}"))
}

pub fn validate_against_schema(schema_file: &str, instance: &serde_json::Value) {
    let path = repo_root().join("schema").join(schema_file);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("schema is JSON");
    // The schemas refer to each other's $defs by file name (bench's findings are the
    // doctor's): each is registered under its $id.
    let mut options = jsonschema::options();
    for entry in std::fs::read_dir(repo_root().join("schema")).expect("schema directory") {
        let contents: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap())
                .expect("schema is JSON");
        let id = contents["$id"].as_str().expect("every schema has an $id").to_string();
        options = options
            .with_resource(id, jsonschema::Resource::from_contents(contents).expect("a schema resource"));
    }
    let validator = options.build(&schema).expect("schema is a valid JSON Schema");
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "output violates {schema_file}:\n{}\n{instance:#}", errors.join("\n"));
}

/// The values of a text-report table row (the line starting with `label`) in milliseconds;
/// panics if any number lacks a unit.
pub fn text_row_ms(text: &str, label: &str) -> Vec<f64> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no row {label:?} in:\n{text}"));
    let words: Vec<&str> = line.trim_start()[label.len()..].split_whitespace().collect();
    words
        .chunks(2)
        .map(|pair| {
            let value: f64 =
                pair[0].parse().unwrap_or_else(|_| panic!("{:?} is not a number: {line}", pair[0]));
            let scale = match pair.get(1).copied() {
                Some("ns") => 1e-6,
                Some("µs") => 1e-3,
                Some("ms") => 1.0,
                Some("s") => 1e3,
                other => panic!("number without a unit ({other:?}): {line}"),
            };
            value * scale
        })
        .collect()
}

/// The statistics of the bench latency table, top to bottom.
pub const LATENCY_STATISTICS: [&str; 9] =
    ["min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev"];

/// One column of the bench latency table (`total`, `first byte`, `read gap`, `connect`): its
/// value per statistic, in milliseconds, in [`LATENCY_STATISTICS`] order; panics if a number
/// lacks its unit. The header names the columns, two spaces or more apart.
pub fn latency_column_ms(text: &str, column: &str) -> Vec<f64> {
    let header = text
        .lines()
        .find(|l| l.split("  ").any(|cell| cell.trim() == "total"))
        .unwrap_or_else(|| panic!("no latency table in:\n{text}"));
    let columns: Vec<&str> = header.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    let index =
        columns.iter().position(|c| *c == column).unwrap_or_else(|| panic!("no column {column:?}: {header}"));
    LATENCY_STATISTICS
        .iter()
        .map(|statistic| {
            let row = text
                .lines()
                .find(|l| l.split_whitespace().next() == Some(statistic))
                .unwrap_or_else(|| panic!("no row {statistic:?} in:\n{text}"));
            text_row_ms(row, statistic)[index]
        })
        .collect()
}

/// One figure of the bench latency table, in milliseconds: `latency_ms(text, "total", "p50")`.
pub fn latency_ms(text: &str, column: &str, statistic: &str) -> f64 {
    let row = LATENCY_STATISTICS.iter().position(|s| *s == statistic).expect("a statistic of the table");
    latency_column_ms(text, column)[row]
}

/// The text with every run of white space made one space: sentences read the same however
/// the width wrapped them and the tables aligned them.
pub fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A loopback server (port 0) that answers every request (ended by `request_end`) with
/// `response`, written in one send. Its threads end when their connection closes.
pub fn canned_server(request_end: &'static [u8], response: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let response = response.clone();
            std::thread::spawn(move || {
                let mut pending = Vec::new();
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    pending.extend_from_slice(&buffer[..n]);
                    while let Some(end) = pending.windows(request_end.len()).position(|w| w == request_end) {
                        pending.drain(..end + request_end.len());
                        if stream.write_all(&response).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    address.to_string()
}

/// A loopback server (port 0) that answers each HTTP request after `delay` (slow, but in one
/// write with TCP_NODELAY: no stall), and counts the responses it sent, so a test can act
/// once a run is under way without sleeping. Returns the URL and the count.
pub fn slow_server(delay: Duration) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let answered = std::sync::Arc::new(AtomicU64::new(0));
    let counter = answered.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut pending = Vec::new();
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    pending.extend_from_slice(&buffer[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        // The server's own think time: what the test measures, not a wait.
                        std::thread::sleep(delay);
                        if stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                            return;
                        }
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    (format!("http://{address}/"), answered)
}

/// Polls `done` until it holds or `within` has passed (then panics with `what`): how tests
/// wait for another thread or process without guessing a sleep.
pub fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what} after {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nobody listens on, for as long as the returned socket lives: it is bound
/// (without SO_REUSEADDR) but not listening, so a connect is refused and no other test's
/// listener can take the port meanwhile, as one could a port freed at once.
pub fn port_nobody_listens_on() -> (socket2::Socket, u16) {
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()).expect("bind port 0");
    let port = held.local_addr().expect("its address").as_socket().expect("an IP address").port();
    (held, port)
}
