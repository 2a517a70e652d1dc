//! `nodelay fix --cgroup` and `--pid` on real servers in cgroups of their own: eBPF programs
//! set TCP_NODELAY on every new connection while fix runs and keep it set when the program
//! turns it off; a process outside the cgroup is untouched; after fix ends the stall is back
//! and no program stays attached (bpftool says so). The time per request is measured by the
//! test's own client on plain sockets, not by nodelay.

use crate::common::*;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Half the Linux delayed-ACK timer: a request held by it takes longer, one that is not
/// (on loopback, even on a busy machine) takes far less.
const STALL_MS: f64 = 20.0;

/// A cgroup2 hierarchy's mount point: the machine's, or, where the machine has none, one
/// mounted under the target directory in a mount namespace of this thread's own, which the
/// processes it starts share and which goes with the test's process: nothing stays mounted
/// after the test (a mount left in `target/` would also make `cargo clean` fail).
fn cgroup2_root() -> PathBuf {
    thread_local! {
        // Once a thread: /proc/self/mountinfo shows the main thread's namespace, not this one's.
        static ROOT: PathBuf = find_or_mount_cgroup2();
    }
    ROOT.with(PathBuf::clone)
}

fn find_or_mount_cgroup2() -> PathBuf {
    if let Some(root) = nodelay_ebpf::cgroup2_mount_points().unwrap().into_iter().next() {
        return root;
    }
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cgroup2");
    std::fs::create_dir_all(&root).unwrap();
    // SAFETY: unshare and mount take flags and C strings that live through the calls.
    unsafe {
        // CLONE_NEWNS moves this thread alone (it unshares its filesystem context too).
        assert_eq!(
            libc::unshare(libc::CLONE_NEWNS),
            0,
            "unshare(CLONE_NEWNS): {}",
            std::io::Error::last_os_error()
        );
        // Private, so that the mount below does not propagate back to the machine's namespace.
        let slash = c"/";
        let private = libc::mount(
            std::ptr::null(),
            slash.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        );
        assert_eq!(private, 0, "mount --make-rprivate /: {}", std::io::Error::last_os_error());
    }
    let status = Command::new("mount").args(["-t", "cgroup2", "none"]).arg(&root).status().unwrap();
    assert!(status.success(), "mount -t cgroup2 none {}", root.display());
    root
}

/// A cgroup of the test's own, removed when dropped (after the peers in it are gone).
struct TestCgroup {
    path: PathBuf,
}

impl TestCgroup {
    fn new(name: &str) -> TestCgroup {
        let path = cgroup2_root().join(format!("nodelay-test-{}-{name}", std::process::id()));
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        TestCgroup { path }
    }

    /// Starts `program args...` inside this cgroup (a shell moves itself in, then becomes
    /// the program, so the listener is created there) and waits for its PORT line.
    fn start(&self, program: &str, args: &[&str]) -> Peer {
        start_command(
            Command::new("sh")
                .args(["-c", r#"echo $$ > "$0/cgroup.procs" && exec "$@""#])
                .arg(&self.path)
                .arg(program)
                .args(args),
        )
    }

    /// What bpftool lists attached to this cgroup (empty when nothing is).
    fn programs_attached(&self) -> String {
        let output = Command::new("bpftool").args(["cgroup", "show"]).arg(&self.path).output().unwrap();
        assert!(output.status.success(), "bpftool: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // rmdir fails while a process is still in it: wait for the killed peers to leave.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::remove_dir(&self.path).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The median time of keep-alive GETs on a new connection, the first left out (a fresh
/// connection ACKs at once), in ms.
fn median_ms_on_a_new_connection(port: u16) -> f64 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    keep_alive_get(&mut stream);
    let mut times: Vec<f64> = (0..7).map(|_| keep_alive_get(&mut stream).as_secs_f64() * 1e3).collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// `nodelay fix ARGS` running, once it has said it is attached; ended by SIGINT as Ctrl-C.
struct Fixing {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    attached: String,
}

impl Drop for Fixing {
    /// A test that failed before `interrupt` leaves no fix running (its programs go with it).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fixing {
    fn start(args: &[&str]) -> Fixing {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
            .arg("fix")
            .args(args)
            .args(["-d", "60s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut attached = String::new();
        // The paragraph ends with the open sockets' line.
        while !attached.contains("open sockets") {
            let before = attached.len();
            stdout.read_line(&mut attached).unwrap();
            if attached.len() == before {
                let mut stderr = String::new();
                child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
                panic!("nodelay fix {args:?} ended before attaching: {attached}{stderr}");
            }
        }
        Fixing { child, stdout, attached }
    }

    /// Ctrl-C, then what it printed as it detached.
    fn interrupt(mut self) -> String {
        // SAFETY: kill(2) on the child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) }, 0);
        let status = self.child.wait().unwrap();
        let mut detached = String::new();
        self.stdout.read_to_string(&mut detached).unwrap();
        assert!(status.success(), "nodelay fix exited {status}: {detached}");
        detached.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// A process in the cgroup2 hierarchy's root (a kernel thread, often; PID 1 on hosts without
/// systemd), if this machine has one.
fn a_process_in_the_root_cgroup() -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        cgroup.lines().any(|line| line == "0::/").then_some(pid)
    })
}

/// What `nodelay inspect --json` says of `peer`'s cgroup: whether it carries the sock_ops
/// and the setsockopt program. A peer started in `cgroup` must be reported in it.
fn carried(peer: &Peer, cgroup: &TestCgroup) -> (bool, bool) {
    let run = nodelay(&["inspect", "--json", &peer.pid().to_string()]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("inspect.schema.json", &report);
    let cgroups = report["cgroups"].as_array().expect("a cgroups array");
    assert_eq!(cgroups.len(), 1, "{report}");
    assert_eq!(cgroups[0]["pids"][0], peer.pid(), "{report}");
    let in_cgroup = std::fs::read_to_string(cgroup.path.join("cgroup.procs")).unwrap();
    if in_cgroup.lines().any(|pid| pid == peer.pid().to_string()) {
        assert_eq!(cgroups[0]["path"], cgroup.path.canonicalize().unwrap().to_str().unwrap(), "{report}");
    }
    (cgroups[0]["sock_ops"].as_bool().unwrap(), cgroups[0]["setsockopt"].as_bool().unwrap())
}

/// The number after `words` in `text` ("set on 3 new connections": 3 after "set on").
fn count_after(text: &str, words: &str) -> u64 {
    let at = text.find(words).unwrap_or_else(|| panic!("no '{words}' in: {text}")) + words.len();
    text[at..].split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{text}"))
}

#[test]
fn a_static_go_server_is_fixed_while_attached_and_stalls_again_after() {
    let binary = compiled_static("go_http_server.go");
    let cgroup = TestCgroup::new("go");
    let args = ["-nagle", "-body-bytes", "8000"];
    let inside = cgroup.start(&binary, &args);
    let outside = start_peer(&binary, &args);
    let before = median_ms_on_a_new_connection(inside.port);
    assert!(before > STALL_MS, "as shipped with -nagle: {before:.2} ms per request");

    let fixing = Fixing::start(&["--cgroup", cgroup.path.to_str().unwrap()]);
    assert!(fixing.attached.contains("attached to cgroup"), "{}", fixing.attached);
    assert!(!cgroup.programs_attached().is_empty(), "bpftool lists nothing while fix runs");
    let during = median_ms_on_a_new_connection(inside.port);
    let outside_during = median_ms_on_a_new_connection(outside.port);
    assert_eq!(carried(&inside, &cgroup), (true, true), "inspect while attached");
    assert_eq!(carried(&outside, &cgroup), (false, false), "inspect of the process outside");
    let text = nodelay(&["inspect", &inside.pid().to_string()]).stdout();
    assert!(squeeze(&text).contains("carries nodelay's eBPF fix: new connections get TCP_NODELAY"), "{text}");
    let detached = fixing.interrupt();

    assert!(during < STALL_MS, "{during:.2} ms per request while fixed (before: {before:.2} ms)");
    assert!(outside_during > STALL_MS, "a process outside the cgroup changed: {outside_during:.2} ms");
    assert!(detached.contains("(interrupted)"), "{detached}");
    assert!(count_after(&detached, "TCP_NODELAY set on") >= 1, "{detached}");
    // The Go listener's SetNoDelay(false) on each accepted connection, kept from taking hold.
    assert!(count_after(&detached, "tried to turn it off") >= 1, "{detached}");
    assert_eq!(cgroup.programs_attached(), "", "a program stayed attached");
    assert_eq!(carried(&inside, &cgroup), (false, false), "inspect after detaching");
    let after = median_ms_on_a_new_connection(inside.port);
    assert!(after > STALL_MS, "after detaching: {after:.2} ms per request");
}

#[test]
fn node_turning_nodelay_off_per_connection_is_kept_on_and_counted() {
    let cgroup = TestCgroup::new("node");
    let (program, args) = script_command("node", "node_nodelay_off_server.js", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = cgroup.start(&program, &args);
    assert!(median_ms_on_a_new_connection(server.port) > STALL_MS);

    let fixing = Fixing::start(&["--pid", &server.pid().to_string()]);
    assert!(
        fixing.attached.contains(cgroup.path.file_name().unwrap().to_str().unwrap()),
        "{}",
        fixing.attached
    );
    let during: Vec<f64> = (0..3).map(|_| median_ms_on_a_new_connection(server.port)).collect();
    let detached = fixing.interrupt();
    assert!(during.iter().all(|&ms| ms < STALL_MS), "{during:?} ms while fixed");
    // One setNoDelay(false) per connection: the three measured here.
    assert!(count_after(&detached, "tried to turn it off") >= 3, "{detached}");
    assert_eq!(cgroup.programs_attached(), "");
}

#[test]
fn without_the_capabilities_fix_cgroup_says_why_in_one_line() {
    let cgroup = TestCgroup::new("caps");
    let output = Command::new("capsh")
        .args(["--drop=cap_bpf,cap_sys_admin,cap_perfmon,cap_net_admin", "--", "-c"])
        .arg(format!("exec {} fix --cgroup {} -d 1s", env!("CARGO_BIN_EXE_nodelay"), cgroup.path.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs root, or CAP_BPF with CAP_NET_ADMIN"), "{stderr}");
    assert_eq!(cgroup.programs_attached(), "");
}

#[test]
fn what_is_not_a_cgroup_of_its_own_is_refused_as_usage() {
    // With a cgroup2 hierarchy mounted: without one, every path gets that reason instead.
    cgroup2_root();
    fails_with(&["fix", "--cgroup", "/tmp", "-d", "1s"], 2, &["/tmp: not a cgroup2 directory"]);
    if let Some(pid) = a_process_in_the_root_cgroup() {
        fails_with(
            &["fix", "--pid", &pid.to_string(), "-d", "1s"],
            2,
            &[&format!("PID {pid} is in the root cgroup")],
        );
    }
    fails_with(&["fix", "--cgroup", "/no/such/dir"], 2, &["/no/such/dir"]);
    fails_with(&["fix", "--cgroup", "/tmp", "--json"], 2, &["cannot be used with"]);
    fails_with(&["fix", "-d", "1s", "1"], 2, &["--cgroup"]);
}

#[test]
fn a_cgroup_outside_the_callers_cgroup_namespace_is_refused_in_one_line() {
    let (here, there) = (TestCgroup::new("ns-here"), TestCgroup::new("ns-there"));
    let server = there.start("python3", &[peer_script("python_http_server.py").to_str().unwrap()]);
    // fix runs in `here`, in a cgroup namespace rooted there: `there` is /../nodelay-test-...
    let output = Command::new("sh")
        .args(["-c", r#"echo $$ > "$0/cgroup.procs" && exec unshare -C "$@""#])
        .arg(&here.path)
        .args([env!("CARGO_BIN_EXE_nodelay"), "fix", "--pid", &server.pid().to_string(), "-d", "1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("outside this process's cgroup namespace"), "{stderr}");
    assert_eq!(there.programs_attached(), "");
}

/// A mount namespace of the test's own with a bpffs at /sys/fs/bpf (the machine's may have
/// none): pins live as long as it does, so `--persist` and `--undo` run in it, one after the
/// other, through `nsenter`. Dropping it ends the namespace, which releases anything pinned.
struct PinNamespace {
    holder: Child,
}

impl PinNamespace {
    fn new() -> PinNamespace {
        let mut holder = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount -t bpf bpf /sys/fs/bpf && echo ready && read line")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(holder.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), "ready", "bpffs mounted in the namespace");
        PinNamespace { holder }
    }

    /// `nodelay ARGS` in the namespace.
    fn nodelay(&self, args: &[&str]) -> std::process::Output {
        Command::new("nsenter")
            .arg(format!("--mount=/proc/{}/ns/mnt", self.holder.id()))
            .arg(env!("CARGO_BIN_EXE_nodelay"))
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for PinNamespace {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

#[test]
fn persist_keeps_the_programs_after_fix_ends_until_undo() {
    let _alone = alone();
    let cgroup = TestCgroup::new("persist");
    let server = cgroup.start(&compiled_static("go_http_server.go"), &["-nagle", "-body-bytes", "8000"]);
    let namespace = PinNamespace::new();
    let path = cgroup.path.to_str().unwrap();
    assert!(median_ms_on_a_new_connection(server.port) > STALL_MS, "stalls before");
    let persisted = namespace.nodelay(&["fix", "--cgroup", path, "--persist"]);
    let stdout = String::from_utf8_lossy(&persisted.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(persisted.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&persisted.stderr));
    assert!(stdout.contains("persisted: the programs stay attached"), "{stdout}");
    assert!(stdout.contains(&format!("undo: nodelay fix --undo --cgroup {path}")), "{stdout}");
    // fix has ended; the programs have not.
    let attached = cgroup.programs_attached();
    assert!(attached.contains("nodelay_sockops") && attached.contains("nodelay_keep"), "{attached}");
    assert!(median_ms_on_a_new_connection(server.port) < STALL_MS, "fixed after fix ended");
    // A second persist is refused before attaching anything more.
    let again = namespace.nodelay(&["fix", "--cgroup", path, "--persist"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!((again.status.code(), stderr.lines().count()), (Some(1), 1), "{stderr}");
    assert!(stderr.contains("a persisted fix is pinned here already"), "{stderr}");
    assert_eq!(cgroup.programs_attached().matches("nodelay_sockops").count(), 1);
    let undone = namespace.nodelay(&["fix", "--cgroup", path, "--undo"]);
    // As one line: the text wraps at 80 columns.
    let stdout = String::from_utf8_lossy(&undone.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(undone.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&undone.stderr));
    // The programs counted the connection the test made while persisted, and the Go server's
    // SetNoDelay(false) on it.
    assert!(stdout.contains("while persisted: TCP_NODELAY set on 1 new connection"), "{stdout}");
    assert!(stdout.contains("programs tried to turn it off 1 time, kept on each time"), "{stdout}");
    assert_eq!(cgroup.programs_attached(), "", "nothing left attached");
    assert!(median_ms_on_a_new_connection(server.port) > STALL_MS, "stalls again after undo");
    // Nothing left to undo: one line, exit 1.
    let nothing = namespace.nodelay(&["fix", "--cgroup", path, "--undo"]);
    let stderr = String::from_utf8_lossy(&nothing.stderr);
    assert_eq!((nothing.status.code(), stderr.lines().count()), (Some(1), 1), "{stderr}");
    assert!(stderr.contains("no persisted fix of"), "{stderr}");
}

#[test]
fn persist_and_undo_say_what_they_need_in_one_line() {
    let cgroup = TestCgroup::new("persist-usage");
    let path = cgroup.path.to_str().unwrap();
    for args in [
        vec!["fix", "--persist", ":8080"],
        vec!["fix", "--cgroup", path, "--persist", "--undo"],
        vec!["fix", "--cgroup", path, "--persist", "-d", "1s"],
    ] {
        let run = nodelay(&args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
    }
    // Where /sys/fs/bpf is not a bpffs (a namespace of its own with a plain directory there).
    let output = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t tmpfs none /sys/fs/bpf && exec "$@""#)
        .args(["sh", env!("CARGO_BIN_EXE_nodelay"), "fix", "--cgroup", path, "--persist"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!((output.status.code(), stderr.lines().count()), (Some(1), 1), "{stderr}");
    assert!(stderr.contains("bpffs is not mounted at /sys/fs/bpf"), "{stderr}");
    assert_eq!(cgroup.programs_attached(), "", "refused before attaching");
}
