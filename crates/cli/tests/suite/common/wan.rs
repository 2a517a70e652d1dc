//! A real network path for a test: `nodelay-path` (crates/netpath, this repository's own)
//! joins two network namespaces with a user-space link of a chosen round trip (real TCP on
//! both ends), torn down when the `Link` is dropped. Servers run in the server's namespace,
//! nodelay and the independent client in the client's. Needs root, as CI has. The link
//! forwards at real-time priority, so a busy machine does not lengthen the path.

use super::{Peer, Run, peer_script, start_command};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The server's address on every link (each pair of namespaces has the same two).
pub const SERVER_IP: &str = "10.211.0.2";

/// A path between two fresh network namespaces.
pub struct Link {
    forwarder: Child,
    /// The link's name: its namespaces are `NAME-c` and `NAME-s`.
    pub name: String,
}

impl Link {
    /// Brings up a path of `rtt` (`10ms`) with nodelay-path's `extra` options (`--loss 2`); returns
    /// once it forwards. Names are unique per process and link, so tests run side by side.
    pub fn up(rtt: &str, extra: &[&str]) -> Link {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        // At most 12 letters or digits: "nd", 6 of the PID, 2 of the counter.
        let name = format!(
            "nd{:06}{:02}",
            std::process::id() % 1_000_000,
            NEXT.fetch_add(1, Ordering::SeqCst) % 100
        );
        // Its messages go to a file: they are what to read when the link never comes up.
        let log_path = std::env::temp_dir().join(format!("nodelay-path-{name}.log"));
        let log = std::fs::File::create(&log_path).expect("nodelay-path's log file");
        let mut forwarder = Command::new(env!("CARGO_BIN_EXE_nodelay-path"))
            .args(["up", "--with-parent", "--rtt", rtt, "--name", &name])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start nodelay-path");
        let mut stdout = BufReader::new(forwarder.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        while !line.starts_with("READY") {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                let said = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!("nodelay-path exited before the link was up:\n{said}");
            }
        }
        let _ = std::fs::remove_file(&log_path);
        Link { forwarder, name }
    }

    /// `program` to run in the client's namespace, for tests that manage the process.
    pub fn client_command(&self, program: &str) -> Command {
        self.in_namespace('c', program)
    }

    /// `program` to run in the server's namespace (it must bind [`SERVER_IP`]).
    pub fn server_command(&self, program: &str) -> Command {
        self.in_namespace('s', program)
    }

    /// `ip netns exec NS` for the client's (`c`) or the server's (`s`) side.
    fn in_namespace(&self, side: char, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &format!("{}-{side}", self.name), program]);
        command
    }

    /// Sets a sysctl of the server's namespace (TCP's are per namespace: the machine's stay).
    pub fn server_sysctl(&self, key: &str, value: &str) {
        let status = self
            .in_namespace('s', "sysctl")
            .args(["-q", "-w", &format!("{key}={value}")])
            .status()
            .expect("run sysctl");
        assert!(status.success(), "sysctl {key}={value} in the server's namespace failed");
    }

    /// Runs a Python script in the client's namespace and returns its stdout.
    pub fn client_python(&self, script: &str) -> String {
        let output = self.in_namespace('c', "python3").args(["-c", script]).output().expect("run python3");
        assert!(output.status.success(), "client script failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs a Python script with arguments in the client's namespace and returns its stdout.
    pub fn client_python_args(&self, script: &str, args: &[&str]) -> String {
        let mut command = self.in_namespace('c', "python3");
        let output = command.args(["-c", script]).args(args).output().expect("run python3");
        assert!(output.status.success(), "client script failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Starts a Python peer of tests/peers in the server's namespace, bound to its address.
    pub fn python_server(&self, script: &str, args: &[&str]) -> Peer {
        let mut command = self.in_namespace('s', "python3");
        command.arg(peer_script(script)).args(["--bind", SERVER_IP]).args(args);
        start_command(&mut command)
    }

    /// The median time in ms of `requests` GETs on one keep-alive connection, as Python's
    /// http.client (an independent client) sees them from the client's namespace; the first
    /// request, which opens the connection, is not counted.
    pub fn client_median_ms(&self, port: u16, requests: u32) -> f64 {
        let script = format!(
            "import http.client, statistics, time\n\
             c = http.client.HTTPConnection('{SERVER_IP}', {port})\n\
             times = []\n\
             for i in range({requests} + 1):\n\
             \x20   t = time.perf_counter(); c.request('GET', '/'); c.getresponse().read()\n\
             \x20   times.append((time.perf_counter() - t) * 1000)\n\
             print(statistics.median(times[1:]))\n"
        );
        let output =
            self.in_namespace('c', "python3").args(["-c", &script]).output().expect("run the client");
        assert!(output.status.success(), "client failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().parse().expect("a median in ms")
    }

    /// The ground truth a test that names the slower of two servers stands on: the independent
    /// client's medians of `requests` calls to `slower` and to `faster`, until `slower` is
    /// `gap_ms` slower. Three tries at most: beside the suite, a busy machine's forwarder moved
    /// one median by several ms (a twin at 15-17 ms a call on a 10 ms path). Panics with every
    /// try when it never is; a precondition, not the test's claim.
    pub fn slower_by(&self, slower: u16, faster: u16, requests: u32, gap_ms: f64) -> (f64, f64) {
        let mut tries = Vec::new();
        for _ in 0..3 {
            let medians = (self.client_median_ms(slower, requests), self.client_median_ms(faster, requests));
            eprintln!("ground truth: port {slower} {:.2} ms, port {faster} {:.2} ms", medians.0, medians.1);
            if medians.0 - medians.1 >= gap_ms {
                return medians;
            }
            tries.push(medians);
        }
        panic!(
            "ground truth: port {slower} never {gap_ms} ms slower than port {faster} in three tries: {tries:.2?}"
        )
    }

    /// The forwarder's PID: a peer that freezes the path itself, at a moment of its own.
    pub fn forwarder_pid(&self) -> u32 {
        self.forwarder.id()
    }

    /// Stops the link for `duration` (the forwarder frozen with SIGSTOP): packets wait, none is
    /// lost, as on a path that stalls.
    pub fn stall(&self, duration: std::time::Duration) {
        let pid = self.forwarder.id() as i32;
        // SAFETY: kill has no memory preconditions; the PID is our own child's.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "SIGSTOP nodelay-path");
        std::thread::sleep(duration);
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0, "SIGCONT nodelay-path");
    }

    /// The TCP counters of one side's namespace (`c` or `s`), all its connections together:
    /// segments it resent, and segments of its own the peer reported as duplicates (D-SACK).
    /// Each namespace is the link's alone, so these count only the test's traffic.
    pub fn resend_counters(&self, side: char) -> ResendCounters {
        let read = |file: &str| {
            let output = self.in_namespace(side, "cat").arg(file).output().expect("run cat");
            assert!(
                output.status.success(),
                "cat {file} in {side}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        };
        ResendCounters {
            resent_segments: proc_net_counter(&read("/proc/net/snmp"), "Tcp:", "RetransSegs"),
            duplicate_reported_segments: proc_net_counter(
                &read("/proc/net/netstat"),
                "TcpExt:",
                "TCPDSACKRecvSegs",
            ),
        }
    }

    /// Waits (up to 10 s) until `count` TCP connections to `port` are established on the
    /// server's side.
    pub fn wait_for_server_connections(&self, port: u16, count: usize) {
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let output = self
                .in_namespace('s', "ss")
                .args(["-Htn", "state", "established", &format!("( sport = :{port} )")])
                .output()
                .expect("run ss");
            if String::from_utf8_lossy(&output.stdout).lines().count() >= count {
                return;
            }
            assert!(Instant::now() < deadline, "{count} connections to port {port} not established in 10 s");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Runs the nodelay binary in the client's namespace.
    pub fn nodelay(&self, args: &[&str]) -> Run {
        let started = Instant::now();
        let output = self
            .in_namespace('c', env!("CARGO_BIN_EXE_nodelay"))
            .args(args)
            .env_remove("COLUMNS")
            .stdin(Stdio::null())
            .output()
            .expect("run nodelay");
        Run { output, elapsed: started.elapsed() }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // SIGTERM: nodelay-path deletes both namespaces, then exits.
        unsafe { libc::kill(self.forwarder.id() as i32, libc::SIGTERM) };
        let _ = self.forwarder.wait();
    }
}

/// One namespace's resends, from its kernel's counters ([`Link::resend_counters`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResendCounters {
    pub resent_segments: u64,
    /// Resent segments the peer already had: it said so with a D-SACK.
    pub duplicate_reported_segments: u64,
}

/// A counter of /proc/net/snmp or /proc/net/netstat: a line of names after `prefix`, then a
/// line of values after the same prefix.
fn proc_net_counter(text: &str, prefix: &str, name: &str) -> u64 {
    let mut rows = text.lines().filter(|line| line.starts_with(prefix));
    while let (Some(names), Some(values)) = (rows.next(), rows.next()) {
        if let Some(at) = names.split_whitespace().position(|n| n == name) {
            let value = values.split_whitespace().nth(at).unwrap_or_else(|| panic!("{name} has no value"));
            return value.parse().unwrap_or_else(|e| panic!("{name} = {value}: {e}"));
        }
    }
    panic!("no {prefix} {name} in:\n{text}")
}
