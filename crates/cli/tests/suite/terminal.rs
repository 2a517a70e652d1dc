//! What a person sees in a terminal: nodelay runs inside tmux at a fixed size, and the
//! tests read the captured screen. Waits poll the screen against a deadline; nothing sleeps a
//! guessed time.

use crate::common::*;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long any one wait for the screen may take (a loaded CI machine is slow).
const PATIENCE: Duration = Duration::from_secs(30);

/// A tmux server of its own (its own socket) with one detached session running nodelay.
struct Screen {
    /// The server's socket, removed with it: tmux leaves the file behind.
    socket: std::path::PathBuf,
    width: usize,
}

impl Screen {
    /// Starts `nodelay args...` in a `width` × `height` terminal. When nodelay exits, the
    /// shell prints `[exit N]` and keeps the pane open (`cat` waits on the terminal) so the
    /// screen can still be read.
    fn start(width: u16, height: u16, args: &[&str]) -> Screen {
        static SESSIONS: AtomicU32 = AtomicU32::new(0);
        let name = format!("nodelay-tmux-{}-{}", std::process::id(), SESSIONS.fetch_add(1, Ordering::SeqCst));
        let socket = std::env::temp_dir().join(name);
        let mut command = vec![quote(env!("CARGO_BIN_EXE_nodelay"))];
        command.extend(args.iter().map(|arg| quote(arg)));
        // The shell survives Ctrl-C (a trap, reset for nodelay, which gets it as usual).
        let shell = format!("trap : INT; {}; echo \"[exit $?]\"; exec cat", command.join(" "));
        let screen = Screen { socket, width: usize::from(width) };
        screen.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            &shell,
        ]);
        screen
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (scripts/setup.sh installs it): {e}"));
        assert!(output.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The whole screen and its scrollback, wrapped lines joined (so a line wider than the
    /// terminal shows as one), trailing spaces trimmed.
    fn capture(&self) -> String {
        let screen = self.tmux(&["capture-pane", "-p", "-J", "-S", "-"]);
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        lines.join("\n").trim_end().to_string() + "\n"
    }

    /// Polls the screen until `done` accepts it; panics with the last screen at the deadline.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.capture();
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what} within {PATIENCE:?}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for nodelay to exit; its status and the final screen.
    fn wait_exit(&self) -> (i32, String) {
        let screen = self.wait_for("exit", |s| s.contains("[exit "));
        let status = screen.rsplit("[exit ").next().and_then(|rest| rest.split(']').next()?.parse().ok());
        (status.expect("an exit status"), screen)
    }

    fn send_keys(&self, keys: &str) {
        self.tmux(&["send-keys", keys]);
    }

    /// Every line of the screen fits the terminal.
    fn assert_fits(&self, screen: &str) {
        for line in screen.lines() {
            assert!(
                line.chars().count() <= self.width,
                "wider than {} columns: {line:?}\n{screen}",
                self.width
            );
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// One shell word.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The progress bar of a timed bench run: `... 1s of 3s,    1234 responses,    560 req/s,    0
/// failed`.
fn bar_line<'a>(screen: &'a str, duration: &str) -> Option<&'a str> {
    let marker = format!(" of {duration}, ");
    screen.lines().find(|l| l.contains(&marker) && l.contains(" req/s, "))
}

/// The count of failed requests in a bench progress bar.
fn bar_errors(line: &str) -> u64 {
    let before = line.rsplit(" req/s, ").next().unwrap_or_default();
    before.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn bench_prints_its_settings_first_then_a_live_bar_then_a_report_that_fits() {
    let peer = python_peer("chunked_server.py", &[]);
    let screen = Screen::start(80, 50, &["bench", "-c", "2", "-d", "3s", &peer.url("/")]);
    let running = screen.wait_for("progress bar", |s| bar_line(s, "3s").is_some());
    let header = running.lines().position(|l| l.starts_with("nodelay bench GET http://127.0.0.1:"));
    let settings =
        running.lines().position(|l| l.trim_start() == "2 connections, 2 threads, keep-alive, 3 s");
    let bar = running.lines().position(|l| bar_line(l, "3s").is_some());
    let order =
        [header, settings, bar].map(|at| at.unwrap_or_else(|| panic!("settings and bar:\n{running}")));
    assert!(order[0] < order[1] && order[1] < order[2], "the settings above the bar:\n{running}");
    let line = bar_line(&running, "3s").unwrap();
    assert!(line.contains(" responses, ") && line.ends_with(" failed"), "rate and failures live: {line}");
    assert_eq!(bar_errors(line), 0, "{line}");
    screen.assert_fits(&running);

    let (status, done) = screen.wait_exit();
    assert_eq!(status, 0, "{done}");
    assert!(bar_line(&done, "3s").is_none(), "the bar is cleared:\n{done}");
    assert_eq!(done.matches("nodelay bench GET").count(), 1, "the settings once:\n{done}");
    for needle in ["responses in", "p95", "stdev", "latency histogram", "█", "errors none"] {
        assert!(squeeze(&done).contains(needle), "{needle:?} missing:\n{done}");
    }
    // A timed run ends with requests on the wire: said as the normal thing it is.
    if let Some(line) = done.lines().find(|l| l.contains("in flight")) {
        assert!(line.ends_with("were still running when the time was up (not counted)"), "{line}");
    }
    screen.assert_fits(&done);
}

/// Every line of the bar a run drew (each screen read until it exited), and the bar's own
/// width on each: the columns before the first space.
fn bar_widths(screen: &Screen, is_bar: impl Fn(&str) -> bool) -> Vec<(String, usize)> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = screen.capture();
        for line in now.lines().filter(|l| is_bar(l)) {
            if !seen.iter().any(|(known, _)| known == line) {
                let width = line.split(' ').next().unwrap_or_default().chars().count();
                seen.push((line.to_string(), width));
            }
        }
        if now.contains("[exit ") {
            return seen;
        }
        assert!(Instant::now() < deadline, "no exit within {PATIENCE:?}:\n{now}");
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[test]
fn the_bar_keeps_its_width_while_the_numbers_beside_it_grow() {
    // 5 ms a response on 2 connections: the counts pass 9, 99 and 100 while the rate climbs.
    let (url, _) = slow_server(Duration::from_millis(5));
    for (args, is_bar) in [
        (&["-d", "3s"][..], Box::new(|l: &str| bar_line(l, "3s").is_some()) as Box<dyn Fn(&str) -> bool>),
        (&["-n", "500"][..], Box::new(|l: &str| l.contains("/500 requests, ") && l.contains(" req/s, "))),
    ] {
        let screen = Screen::start(80, 20, &[&["bench", "-c", "2"][..], args, &[url.as_str()]].concat());
        let bars = bar_widths(&screen, is_bar);
        assert!(bars.len() >= 3, "{args:?}: too few redraws seen: {bars:#?}");
        let first = bars[0].1;
        assert!(first >= 10, "{bars:#?}");
        for (line, width) in &bars {
            assert_eq!(*width, first, "{args:?}: the bar changed width:\n{}\n{line}", bars[0].0);
        }
    }
}

#[test]
fn bench_fits_a_terminal_narrower_than_80_columns() {
    let peer = start_peer(&compiled("go_http_server.go"), &[]);
    let screen = Screen::start(66, 60, &["bench", "-c", "1", "-n", "200", &peer.url("/")]);
    let (status, done) = screen.wait_exit();
    assert_eq!(status, 0, "{done}");
    screen.assert_fits(&done);
    // 76 columns at 80: here it wraps beside its label.
    let wrapped = done.lines().position(|l| l.starts_with("  keep-alive  199 of 200 responses reused a"));
    assert!(wrapped.is_some(), "{done}");
    assert!(
        squeeze(&done).contains("keep-alive 199 of 200 responses reused a connection; 1 connection opened")
    );
}

#[test]
fn errors_are_counted_live_and_reported() {
    // From the second request on a connection, every other answer is malformed.
    let peer = python_peer("bad_server.py", &["double-response"]);
    let screen = Screen::start(80, 50, &["bench", "-c", "2", "-d", "3s", &peer.url("/")]);
    let running =
        screen.wait_for("errors in the bar", |s| bar_line(s, "3s").is_some_and(|l| bar_errors(l) > 0));
    screen.assert_fits(&running);
    let (status, done) = screen.wait_exit();
    assert_eq!(status, 0, "some requests succeeded:\n{done}");
    assert!(squeeze(&done).contains("errors malformed_response ×"), "{done}");
    assert!(bar_line(&done, "3s").is_none(), "{done}");
    screen.assert_fits(&done);
}

#[test]
fn ctrl_c_clears_the_bar_and_the_report_says_interrupted() {
    let mut peer = python_peer("chunked_server.py", &[]);
    let screen = Screen::start(80, 50, &["bench", "-c", "1", "-d", "60s", &peer.url("/")]);
    peer.wait_for_line("CONNECTED");
    screen.wait_for("progress bar", |s| bar_line(s, "60s").is_some());
    screen.send_keys("C-c");
    let (status, done) = screen.wait_exit();
    assert_eq!(status, 0, "{done}");
    assert!(bar_line(&done, "60s").is_none(), "no leftover bar:\n{done}");
    assert!(done.contains("interrupted (Ctrl-C) after "), "{done}");
    screen.assert_fits(&done);
}

#[test]
fn a_run_where_nothing_completes_says_so_without_a_table() {
    let peer = python_peer("bad_server.py", &["silent"]);
    let screen =
        Screen::start(80, 30, &["bench", "-c", "1", "-n", "1", "--timeout", "200ms", &peer.url("/")]);
    let (status, done) = screen.wait_exit();
    assert_eq!(status, 1, "{done}");
    assert!(done.contains("  no response completed"), "{done}");
    assert!(!done.contains("p50") && !done.contains("histogram"), "{done}");
    assert!(done.contains("nodelay: no request succeeded: timeout ×1"), "{done}");
    screen.assert_fits(&done);
}

#[test]
fn the_doctor_shows_its_phase_and_budget_then_a_report_that_fits() {
    let peer = python_peer("python_http_server.py", &[]);
    let screen = Screen::start(80, 100, &["doctor", &peer.url("/")]);
    let running = screen.wait_for("the baseline in progress", |s| {
        s.lines().any(|l| l.contains(" s of 10 s baseline: keep-alive, one connection"))
    });
    screen.assert_fits(&running);
    let (status, done) = screen.wait_exit();
    assert_eq!(status, 3, "{done}");
    assert!(!done.contains(" s of 10 s "), "the progress line is cleared:\n{done}");
    assert!(done.contains("verdict: server-nagle-delayed-ack"), "{done}");
    screen.assert_fits(&done);
}

#[test]
fn ctrl_c_during_the_doctor_reports_what_was_measured() {
    // 40 baseline requests at 50 ms: two seconds to press Ctrl-C in.
    let (url, answered) = slow_server(Duration::from_millis(50));
    let screen = Screen::start(80, 60, &["doctor", &url]);
    wait_until("three baseline responses", PATIENCE, || answered.load(Ordering::SeqCst) >= 3);
    screen.send_keys("C-c");
    let (status, done) = screen.wait_exit();
    assert_ne!(status, 1, "a report, not a failure:\n{done}");
    assert!(!done.contains(" s of 10 s "), "the progress line is cleared:\n{done}");
    let text = squeeze(&done);
    assert!(text.contains("interrupted (Ctrl-C) during the last phase above"), "{done}");
    assert!(text.contains("(interrupted)"), "{done}");
    screen.assert_fits(&done);
}
