//! The HTML reports in a real browser: pages written by `bench --html`, `doctor --html` and
//! `report RUN.json... --html` against real peers on loopback are loaded from disk by
//! headless Chromium (Debian's, installed by scripts/setup.sh), their DOM checked for the
//! plots, the numbers and the findings, with every connection Chromium makes sent to a proxy
//! the test owns that must see none; a screenshot of each is kept. And `report` on files it
//! cannot draw.

use crate::common::*;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// One Chromium launch at most this long.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// A proxy that answers nothing and records the first line of every connection: Chromium is
/// pointed at it for every URL, loopback included, so any fetch shows up here.
struct ProxyWitness {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl ProxyWitness {
    fn start() -> ProxyWitness {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut first = [0u8; 512];
                let n = stream.read(&mut first).unwrap_or(0);
                let line = String::from_utf8_lossy(&first[..n]).lines().next().unwrap_or("").to_string();
                seen.lock().unwrap().push(line);
            }
        });
        ProxyWitness { port, requests }
    }

    /// What pages fetched: every request less Chromium's own calls home (network time,
    /// component and extension updates, account checks), which it makes whatever the page
    /// and whatever flags say. The page itself is checked to name no http(s) URL at all.
    fn page_fetches(&self) -> Vec<String> {
        let chromiums_own = |line: &&String| {
            let target = line.split_whitespace().nth(1).unwrap_or("");
            let host = target.trim_start_matches("http://").split(['/', ':']).next().unwrap_or("");
            CHROMIUMS_OWN_HOSTS.iter().any(|own| host == *own || host.ends_with(&format!(".{own}")))
        };
        // A connection that closed before sending a request line (Chromium's speculative
        // preconnect, seen once in a CI run as "") fetched nothing.
        let fetched = |line: &&String| !line.is_empty();
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(fetched)
            .filter(|line| !chromiums_own(line))
            .cloned()
            .collect()
    }
}

/// Where Chromium calls home by itself (Debian's build turns on remote extensions and API keys).
const CHROMIUMS_OWN_HOSTS: [&str; 3] = ["google.com", "googleapis.com", "gvt1.com"];

fn chromium() -> &'static str {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium for these tests)"
    );
    CHROMIUM
}

/// The window pages are loaded in unless a test asks for another width.
const WINDOW: (u32, u32) = (1280, 2400);

/// Runs Chromium headless on `page` with `mode` (`--dump-dom` or `--screenshot=...`), every
/// connection through `proxy`, within [`BROWSER_TIMEOUT`]; returns its stdout.
fn run_chromium(page: &Path, mode: &str, proxy: &ProxyWitness) -> String {
    run_chromium_in(page, mode, proxy, WINDOW)
}

/// [`run_chromium`] in a window of `(width, height)` pixels.
fn run_chromium_in(page: &Path, mode: &str, proxy: &ProxyWitness, window: (u32, u32)) -> String {
    // Two cores: one browser at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let profile = tempdir(&format!("chromium-profile-{}", std::process::id()));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--window-size={},{}", window.0, window.1))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=127.0.0.1:{}", proxy.port))
        .arg("--proxy-bypass-list=<-loopback>")
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium {mode} on {} ended with {status}", page.display());
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {mode} on {} took over {BROWSER_TIMEOUT:?}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

fn tempdir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The page as Chromium built it, after a screenshot of it was saved under the test's
/// temporary directory and copied to docs/screenshots-review/ for people to look at. Asserts
/// that nothing was fetched and that the file links nowhere.
fn load(page: &Path, screenshot_name: &str) -> String {
    let html = std::fs::read_to_string(page).expect("the page was written");
    let lower = html.to_lowercase();
    for link in
        ["src=\"http", "href=\"http", "src='http", "href='http", "url(http", "@import", "<link", "<script"]
    {
        assert!(!lower.contains(link), "the page has {link:?}: it must be self-contained");
    }
    let proxy = ProxyWitness::start();
    let dom = run_chromium(page, "--dump-dom", &proxy);
    let shot = page.with_file_name(format!("{screenshot_name}.png"));
    run_chromium(page, &format!("--screenshot={}", shot.display()), &proxy);
    assert!(
        std::fs::metadata(&shot).map(|m| m.len() > 10_000).unwrap_or(false),
        "no screenshot at {}",
        shot.display()
    );
    let review = repo_root().join("docs/screenshots-review");
    std::fs::create_dir_all(&review).expect("docs/screenshots-review");
    std::fs::copy(&shot, review.join(format!("{screenshot_name}.png"))).expect("copy the screenshot");
    assert_eq!(
        proxy.page_fetches(),
        Vec::<String>::new(),
        "Chromium fetched something for {}",
        page.display()
    );
    assert!(dom.contains("</html>"), "no DOM from chromium:\n{dom}");
    dom
}

/// The part of the DOM from the element carrying `attribute` to the end of its figure.
fn figure<'a>(dom: &'a str, attribute: &str) -> &'a str {
    let start = dom.find(attribute).unwrap_or_else(|| panic!("no {attribute} in the page:\n{dom}"));
    let rest = &dom[start..];
    &rest[..rest.find("</figure>").expect("the figure ends")]
}

/// Lines drawn in a plot (its axes are black polylines, the series are coloured).
fn series_lines(svg: &str) -> usize {
    svg.match_indices("<polyline")
        .filter(|(at, _)| !svg[*at..].split('>').next().unwrap().contains("#000000"))
        .count()
}

/// The distinct stroke colours of a plot's data lines (the axes' black left out).
fn series_colours(svg: &str) -> usize {
    let colours: std::collections::BTreeSet<&str> = svg
        .match_indices("<polyline")
        .filter_map(|(at, _)| {
            let tag = svg[at..].split('>').next().unwrap();
            let stroke = tag.split("stroke=\"").nth(1)?.split('"').next()?;
            (stroke != "#000000").then_some(stroke)
        })
        .collect();
    colours.len()
}

/// A number as the page shows it: its raw value in `data-value` and its text with unit.
fn assert_shows_ms(dom: &str, id: &str, ms: f64) {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} in the page"));
    let element = &dom[at..at + dom[at..].find("</dd>").unwrap()];
    let raw: f64 = element
        .split("data-value=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no data-value in {element}"));
    assert_eq!(raw, ms, "{element}");
    let text = element.rsplit('>').next().unwrap();
    assert_eq!(text, nodelay_report::format_duration_ms(ms), "{element}");
}

fn bench_to(dir: &Path, name: &str, peer: &Peer) -> (PathBuf, serde_json::Value) {
    let html = dir.join(format!("{name}.html"));
    let run = nodelay(&[
        "bench",
        "-c",
        "1",
        "-n",
        "60",
        "--json",
        "--html",
        html.to_str().unwrap(),
        &peer.url("/"),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let json = dir.join(format!("{name}.json"));
    std::fs::write(&json, run.output.stdout.as_slice()).unwrap();
    (html, run.json())
}

#[test]
fn the_witness_sees_what_a_page_fetches_from_loopback() {
    let dir = tempdir("witness");
    let page = dir.join("fetches.html");
    // A port Chromium allows (it refuses some, 9 among them, before any proxy sees them).
    std::fs::write(&page, "<!DOCTYPE html><title>probe</title><img src=\"http://127.0.0.1:8999/probe.png\">")
        .unwrap();
    let proxy = ProxyWitness::start();
    run_chromium(&page, "--dump-dom", &proxy);
    let fetches = proxy.page_fetches();
    assert!(
        fetches.iter().any(|line| line.starts_with("GET http://127.0.0.1:8999/probe.png")),
        "{fetches:?}"
    );
}

#[test]
fn bench_html_shows_the_plots_and_the_runs_numbers_in_a_browser() {
    let dir = tempdir("bench");
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let (html, report) = bench_to(&dir, "bench", &peer);
    let dom = load(&html, "bench");
    // A run whose every response came in one read has no read gap to draw: the page says so
    // instead of drawing an empty frame (which of the two depends on how the reads fell).
    let paused = report["read_gap_ms"]["max"].as_f64().is_some_and(|max| max > 0.0);
    for plot in ["latency-spectrum", "histogram", "read-gap-spectrum"] {
        let svg = figure(&dom, &format!("data-plot=\"{plot}\""));
        if plot == "read-gap-spectrum" && !paused {
            assert!(!svg.contains("<svg") && svg.contains("No pause to draw"), "{plot}: {svg}");
            continue;
        }
        assert!(
            svg.contains("<svg") && series_lines(svg) + svg.matches("<rect").count() > 0,
            "{plot}: {svg}"
        );
    }
    let spectrum = figure(&dom, "data-plot=\"latency-spectrum\"");
    for label in ["latency (ms, linear scale)", "90%", "99%"] {
        assert!(spectrum.contains(label), "{label} on the spectrum's axes");
    }
    assert_eq!(series_lines(spectrum), 1);
    assert_shows_ms(&dom, "run-1-p50", ms(&report, "latency_ms", "p50"));
    assert_shows_ms(&dom, "run-1-p99", ms(&report, "latency_ms", "p99"));
    // The timeline is drawn once bench fills it in; until then the page says there is none.
    assert!(dom.contains("data-plot=\"timeline") || dom.contains("No timeline was recorded"), "{dom}");
    assert!(dom.contains(report["machine"]["kernel"].as_str().unwrap()), "the machine's kernel");
}

#[test]
fn doctor_html_shows_the_finding_its_proof_and_fix_in_a_browser() {
    let dir = tempdir("doctor");
    let peer = python_peer("python_http_server.py", &[]);
    let html = dir.join("doctor.html");
    let run = nodelay(&["doctor", "--json", "--html", html.to_str().unwrap(), &peer.url("/")]);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    let report = run.json();
    let dom = load(&html, "doctor");
    let finding = &report["findings"][0];
    assert_eq!(finding["id"], "server-nagle-delayed-ack");
    let title =
        finding["title"].as_str().unwrap().replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    assert!(dom.contains("data-finding=\"server-nagle-delayed-ack\""), "{dom}");
    assert!(dom.contains(&title), "{title} in the page");
    assert!(dom.contains("symptom removed") && dom.contains("Python http.server"), "proof and fix");
    let phases = figure(&dom, "data-plot=\"phase-spectrum\"");
    assert!(series_lines(phases) >= 2 && phases.contains("class=\"legend\""), "one line per phase: {phases}");
}

#[test]
fn report_renders_saved_runs_together_with_one_line_each() {
    let dir = tempdir("report");
    let fast = python_peer("python_http_server.py", &["--disable-nagle"]);
    let stalling = python_peer("python_http_server.py", &[]);
    let (_, today) = bench_to(&dir, "today", &fast);
    let (_, last_week) = bench_to(&dir, "last-week", &stalling);
    let out = dir.join("together.html");
    let run = nodelay(&[
        "report",
        dir.join("today.json").to_str().unwrap(),
        dir.join("last-week.json").to_str().unwrap(),
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let dom = load(&out, "report");
    let overview = figure(&dom, "data-plot=\"overview-spectrum\"");
    assert_eq!(series_lines(overview), 2, "{overview}");
    assert!(
        overview.contains("today.json — http://") && overview.contains("last-week.json — http://"),
        "{overview}"
    );
    assert_shows_ms(&dom, "run-1-p50", ms(&today, "latency_ms", "p50"));
    assert_shows_ms(&dom, "run-2-p50", ms(&last_week, "latency_ms", "p50"));
}

#[test]
fn a_script_in_a_saved_url_stays_text() {
    let dir = tempdir("escape");
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    let (_, mut report) = bench_to(&dir, "run", &peer);
    report["settings"]["url"] = "http://x.test/<script>document.title='pwned'</script>".into();
    let saved = dir.join("evil.json");
    std::fs::write(&saved, report.to_string()).unwrap();
    let out = dir.join("evil.html");
    let run = nodelay(&["report", saved.to_str().unwrap(), "--html", out.to_str().unwrap()]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let dom = load(&out, "escaped");
    assert!(!dom.contains("<script") && !dom.contains("pwned</title>"), "{dom}");
    assert!(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"), "{dom}");
}

#[test]
fn report_refuses_what_it_cannot_draw_in_one_line() {
    let dir = tempdir("refused");
    let cases = [
        (
            "old.json",
            r#"{"schema": "nodelay-bench/0", "requests_completed": 1}"#,
            "has schema \"nodelay-bench/0\"",
        ),
        ("package.json", r#"{"name": "left-pad"}"#, "is not a nodelay report"),
        ("notes.json", "p50 was 3 ms", "is not JSON"),
    ];
    for (name, contents, says) in cases {
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        let out = dir.join(format!("{name}.html"));
        let run = nodelay(&["report", path.to_str().unwrap(), "--html", out.to_str().unwrap()]);
        assert_eq!(run.code(), 1, "{name}: {}", run.stderr());
        let stderr = run.stderr();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(name) && stderr.contains(says), "{stderr}");
        assert!(!out.exists(), "no page for {name}");
    }
    // A file that cannot be read is a bad argument, as `-b @FILE`'s is; an endless one stops at
    // the cap.
    let run = nodelay(&["report", dir.join("missing.json").to_str().unwrap(), "--html", "/dev/null"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr().contains("cannot read") && run.stderr().contains("missing.json"),
        "{}",
        run.stderr()
    );
    fails_with(
        &["report", "/dev/zero", "--html", "/dev/null"],
        2,
        &["nodelay: saved run '/dev/zero' is larger than 256 MiB, the most nodelay reads"],
    );
}

/// How wide and tall `page` lays out in a window `width` pixels wide: a copy of it with a
/// script that writes the document's scroll size into the DOM, dumped by Chromium (the page
/// itself has no script).
fn laid_out_size(page: &Path, width: u32, proxy: &ProxyWitness) -> (u32, u32) {
    let html = std::fs::read_to_string(page).expect("the page was written");
    let script = "<script>document.body.setAttribute('data-measured', \
        document.documentElement.scrollWidth + 'x' + document.documentElement.scrollHeight)</script>";
    let measuring = page.with_file_name(format!("measure-{width}.html"));
    std::fs::write(&measuring, html.replace("</body>", &format!("{script}</body>"))).unwrap();
    let dom = run_chromium_in(&measuring, "--dump-dom", proxy, (width, 1000));
    let measured = dom
        .split("data-measured=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no size measured at {width} px:\n{dom}"));
    let (wide, tall) = measured.split_once('x').unwrap();
    (wide.parse().unwrap(), tall.parse().unwrap())
}

/// A screenshot of the whole of `page` at `width` pixels, as `name`.png beside it and in
/// docs/screenshots-review/; returns the page's laid-out width.
fn whole_page_screenshot(page: &Path, width: u32, name: &str) -> u32 {
    let proxy = ProxyWitness::start();
    let (wide, tall) = laid_out_size(page, width, &proxy);
    let shot = page.with_file_name(format!("{name}.png"));
    run_chromium_in(page, &format!("--screenshot={}", shot.display()), &proxy, (width, tall.min(16_000)));
    assert!(std::fs::metadata(&shot).map(|m| m.len() > 10_000).unwrap_or(false), "no {}", shot.display());
    let review = repo_root().join("docs/screenshots-review");
    std::fs::create_dir_all(&review).expect("docs/screenshots-review");
    std::fs::copy(&shot, review.join(format!("{name}.png"))).expect("copy the screenshot");
    assert_eq!(proxy.page_fetches(), Vec::<String>::new(), "Chromium fetched something for {name}");
    wide
}

/// The text of an element's markup, tags left out.
fn text_of(markup: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in markup.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

#[test]
fn compare_with_diagnose_shows_the_verdict_each_round_each_second_and_every_targets_settings() {
    let dir = tempdir("compare");
    let fixed = python_peer("python_http_server.py", &["--disable-nagle"]);
    let stalling = python_peer("python_http_server.py", &[]);
    let html = dir.join("compare.html");
    let run = nodelay(&[
        "compare",
        "--json",
        "-q",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        "--labels",
        "fixed,stalling",
        "--diagnose",
        "--html",
        html.to_str().unwrap(),
        &fixed.url("/"),
        &stalling.url("/"),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("compare.schema.json", &report);
    let dom = load(&html, "compare");

    // The verdict heads the page, in the targets' names.
    let h1 = text_of(&dom[dom.find("<h1>").unwrap()..dom.find("</h1>").unwrap()]);
    // Every figure that differs, in a few words: p50, p99 and requests/s here.
    assert!(
        h1.starts_with("nodelay compare: stalling is ")
            && h1.contains("× slower at p50, ")
            && h1.contains("× slower in requests/s")
            && h1.ends_with(" than fixed"),
        "{h1}"
    );
    let verdict = report["comparisons"][0]["verdict"].as_str().unwrap().replace('&', "&amp;");
    assert!(dom.contains(&verdict), "the verdict {verdict:?} in the page");
    for heading in dom.split("<h").skip(1).filter(|h| h.starts_with(|c: char| c.is_ascii_digit())) {
        let heading = text_of(&heading[..heading.find("</h").unwrap()]);
        assert!(!heading.trim_end().ends_with(": findings"), "a heading says only 'findings': {heading}");
    }
    assert!(dom.contains("data-diagnosed=\"stalling\">stalling: 1 finding<"), "{dom}");

    // 0.1 ms against 44 ms: every latency axis is log, and says so; one dot per round.
    for plot in ["rounds", "latency-spectrum", "timeline-p50"] {
        let svg = figure(&dom, &format!("data-plot=\"{plot}\""));
        assert!(svg.contains("data-scale=\"log\"") && svg.contains("(ms, log scale)"), "{plot}: {svg}");
    }
    let rounds = figure(&dom, "data-plot=\"rounds\"");
    assert_eq!(rounds.matches("<circle").count(), 10, "5 rounds of 2 targets: {rounds}");
    for plot in ["timeline-rate", "timeline-p50"] {
        let timeline = figure(&dom, &format!("data-plot=\"{plot}\""));
        // A second with no response is a gap on a log axis, so a target's line may come in
        // pieces on a busy machine: one colour per target.
        assert_eq!(series_colours(timeline), 2, "one line per target: {timeline}");
        assert!(timeline.contains("fixed") && timeline.contains("stalling"), "a legend naming both");
    }
    let overview = figure(&dom, "data-plot=\"latency-spectrum\"");
    assert_eq!(series_lines(overview), 2, "one line per target: {overview}");

    // Every target's settings: the URLs side by side, the shared ones once.
    let by_target = &dom[dom.find("settings-by-target").expect("a table of each target's settings")..];
    let by_target = &by_target[..by_target.find("</table>").unwrap()];
    for url in [fixed.url("/"), stalling.url("/")] {
        assert!(by_target.contains(&url), "{url} in {by_target}");
    }
    for (index, url) in [fixed.url("/"), stalling.url("/")].iter().enumerate() {
        assert_eq!(report["targets"][index]["settings"]["url"], url.as_str(), "{report:#}");
    }

    // The findings: their code as code, no backtick, each proof line once with its p50 once.
    assert!(dom.contains("data-finding=\"server-nagle-delayed-ack\""), "the stalling target's finding");
    assert!(dom.contains("data-finding=\"healthy\""), "the fixed target's verdict");
    assert!(!text_of(&dom).contains('`'), "a backtick in the page");
    let fix = report["targets"][1]["diagnosis"]["findings"][0]["fix_summary"].as_str().unwrap();
    if let Some(code) = fix.split('`').nth(1).filter(|_| fix.matches('`').count() >= 2) {
        let code = code.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        assert!(dom.contains(&format!("<code>{code}</code>")), "`{code}` of {fix:?} as code");
    }
    let proofs: Vec<String> = dom
        .split("<ul class=\"proof\">")
        .skip(1)
        .flat_map(|list| {
            list[..list.find("</ul>").unwrap()].split("<li>").skip(1).map(text_of).collect::<Vec<_>>()
        })
        .collect();
    assert!(!proofs.is_empty(), "{dom}");
    for (index, proof) in proofs.iter().enumerate() {
        assert!(proof.matches("p50").count() <= 1, "the p50 said twice: {proof}");
        assert!(!proofs[..index].contains(proof), "said twice: {proof}");
    }

    // Nothing wider than a 800 px window; the whole page at 800 and 1280 px for people to see.
    assert!(whole_page_screenshot(&html, 800, "compare-800") <= 800, "sideways scroll at 800 px");
    assert!(whole_page_screenshot(&html, 1280, "compare-1280") <= 1280, "sideways scroll at 1280 px");
}

#[test]
fn bench_html_shows_what_the_numbers_suggest_and_doctor_html_its_probes() {
    let dir = tempdir("suggest");
    // Bench on a stalling server: its read gaps at the delayed-ACK timer suggest Nagle.
    let stalling = python_peer("python_http_server.py", &[]);
    let (html, report) = bench_to(&dir, "suggestions", &stalling);
    let suggestion = &report["suggestions"][0];
    assert_eq!(suggestion["id"], "server-nagle-delayed-ack", "{report:#}");
    let dom = load(&html, "bench-suggestions");
    assert!(dom.contains("What these numbers suggest"), "{dom}");
    assert!(dom.contains("data-suggestion=\"server-nagle-delayed-ack\""), "{dom}");
    let prove = suggestion["prove"].as_str().unwrap().replace('&', "&amp;");
    assert!(dom.contains(&prove), "the proving command {prove} in the page");
    // Doctor with a body on a server that ignores Expect: the probe's sentence is on the page.
    let silent = python_peer("expect_server.py", &["--protocol", "HTTP/1.0"]);
    let page = dir.join("doctor-probes.html");
    let run =
        nodelay(&["doctor", "--json", "-b", "hello", "--html", page.to_str().unwrap(), &silent.url("/up")]);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    let dom = load(&page, "doctor-probes");
    assert!(dom.contains("data-finding=\"expect-100-continue-wait\""), "{dom}");
    assert!(dom.contains("Expect: 100-continue: no answer within"), "{dom}");
    // A probe changes nothing, so it shows what it saw, not a before/after of zeros.
    assert!(!dom.contains("0 ns → 0 ns"), "{dom}");
}
