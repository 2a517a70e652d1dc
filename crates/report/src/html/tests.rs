//! The page drawn from fixed models: what each kind of run shows, that input text is escaped,
//! and which JSON is refused.

use super::plots::series_lines;
use super::{html_page, html_page_of_files};
use crate::model::bench::{BenchReport, BenchSettings, RunEnd};
use crate::model::compare::{COMPARE_SCHEMA_ID, CompareReport, CompareTarget, Comparison, RoundFigures};
use crate::model::doctor::DoctorReport;
use crate::model::series::{IntervalPoint, Machine};
use crate::model::status::SuccessStatuses;
use nodelay_diagnose::{Confidence, Evidence, Finding, FindingId, Fix, Observations, Proof, ProofKind};
use nodelay_engine::Stats;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::time::Duration;

fn settings(url: &str) -> BenchSettings {
    BenchSettings {
        url: url.into(),
        address: "127.0.0.1:8080".into(),
        method: "GET".into(),
        protocol: "http".into(),
        connections: 2,
        threads: 1,
        requests: Some(1000),
        duration_s: None,
        rate_per_second: None,
        keep_alive: true,
        write_split: Vec::new(),
        timeout_s: 10.0,
        connect_timeout_s: 2.0,
        success_status: "2xx,3xx".into(),
        tls: None,
        busy_poll: false,
        busy_poll_after_us: None,
        io_uring: false,
        batched_waits: false,
        event_loop: "epoll".into(),
        event_loop_why: "default".into(),
        http_version: Some("1.1".into()),
        http2: None,
    }
}

/// A bench run of 1000 responses: 1 ms to 10 ms, and a tail at 40 ms.
pub(crate) fn bench_report(url: &str, slower_by_ms: u64) -> BenchReport {
    let mut stats = Stats::new();
    for i in 0..1000u64 {
        let ms = if i % 100 == 0 { 40 } else { 1 + i % 10 } + slower_by_ms;
        stats.latency_ns.record(ms * 1_000_000).unwrap();
        stats.read_gap_ns.record(ms * 100_000).unwrap();
        stats.first_byte_ns.record(ms * 900_000).unwrap();
    }
    stats.completed = 1000;
    let end = RunEnd { elapsed: Duration::from_secs(2), interrupted: false, due_not_sent: 0 };
    let mut report = BenchReport::new(settings(url), &SuccessStatuses::default(), &stats, &[], end);
    report.timeline = (0..2)
        .map(|s| IntervalPoint {
            start_s: s as f64,
            duration_s: 1.0,
            requests: 500,
            errors: 0,
            requests_per_second: 500.0,
            p50_ms: Some(5.0 + slower_by_ms as f64),
            p99_ms: if s == 0 { Some(40.0) } else { None },
        })
        .collect();
    report
}

pub(crate) fn nagle_finding(title: &str) -> Finding {
    Finding {
        id: FindingId::ServerNagleDelayedAck,
        title: title.into(),
        proven: true,
        confidence: Confidence::High,
        evidence: vec![Evidence::new("responses paused mid-way", 40.2, "ms")],
        proof: vec![Proof {
            kind: ProofKind::Experiment,
            experiment: "quick-ack".into(),
            baseline_p50_ms: 41.0,
            experiment_p50_ms: 0.3,
            removed: true,
            result: "the pause went away".into(),
        }],
        fix_summary: "Set TCP_NODELAY on the server's sockets.".into(),
        fix: vec![Fix { detected: true, ..Fix::of("Python http.server", "disable_nagle_algorithm = True") }],
    }
}

pub(crate) fn doctor_report(url: &str, findings: Vec<Finding>) -> DoctorReport {
    DoctorReport::new(
        url.into(),
        "127.0.0.1:1".into(),
        Duration::from_secs(10),
        Duration::from_secs(3),
        &Observations::default(),
        nodelay_diagnose::Diagnosis::of(findings),
        &[],
    )
}

/// The text of escaped HTML (as much as these tests need).
fn unescape(html: &str) -> String {
    html.replace("&#x2f;", "/")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn value<T: serde::Serialize>(report: &T) -> Value {
    serde_json::to_value(report).unwrap()
}

#[test]
fn a_bench_page_has_its_plots_numbers_settings_and_machine() {
    let report = bench_report("http://example.test/", 0);
    let page = html_page(&[value(&report)]).unwrap();
    for plot in ["latency-spectrum", "histogram", "timeline-rate", "timeline-p99", "read-gap-spectrum"] {
        let at = page.find(&format!("data-plot=\"{plot}\"")).unwrap_or_else(|| panic!("{plot} in {page}"));
        assert!(page[at..].find("<svg") < page[at..].find("</figure>"), "{plot} has no SVG");
    }
    let p50 = report.latency_ms.unwrap().p50;
    assert!(page.contains(&format!(
        "id=\"run-1-p50\" data-value=\"{p50}\">{}<",
        crate::format::format_duration_ms(p50)
    )));
    for text in [
        "latency (ms, linear scale)",
        "99.9%",
        "time since the start (s)",
        "throughput (req/s, linear scale)",
        "kernel",
        "cores nodelay may use",
        "keep alive",
    ] {
        assert!(page.contains(text), "{text}");
    }
    assert!(!page.contains("href=") && !page.contains("src="), "nothing links out");
    assert!(!page.contains("<script"), "no script");
}

#[test]
fn an_upstream_count_whose_ports_went_round_is_drawn_as_a_floor_with_its_bound() {
    let report = bench_report("http://example.test/", 0)
        .with_server_view(crate::model::server_view::tests::churning_proxy());
    let page = unescape(&html_page(&[value(&report)]).unwrap());
    assert!(page.contains("<td class=\"n\">≥ 13496</td><td class=\"n\">≥ 0.346</td>"), "{page}");
    assert!(
        page.contains("but nodelay made 39062 connects during the run: the most the server's can be"),
        "{page}"
    );
}

#[test]
fn an_open_loop_page_shows_the_uncorrected_latency_beside_the_corrected() {
    let closed = html_page(&[value(&bench_report("http://example.test/", 0))]).unwrap();
    assert!(!closed.contains("uncorrected"));
    let mut report = bench_report("http://example.test/", 0);
    report.latency_uncorrected_ms = report.first_byte_ms;
    let page = html_page(&[value(&report)]).unwrap();
    let head = page.find("<th class=\"n\">total</th><th class=\"n\">uncorrected</th>");
    assert!(head.is_some(), "{page}");
    assert!(page.contains("from when each request was due (corrected for coordinated omission)"));
}

#[test]
fn a_run_without_a_timeline_says_so() {
    let mut report = bench_report("http://example.test/", 0);
    report.timeline.clear();
    let page = html_page(&[value(&report)]).unwrap();
    assert!(page.contains("No timeline was recorded for this run."));
}

#[test]
fn a_run_without_read_gaps_draws_no_empty_frame_and_says_why() {
    let mut report = value(&bench_report("http://example.test/", 0));
    for point in report["read_gap_spectrum"].as_array_mut().unwrap() {
        point["latency_ms"] = json!(0.0);
    }
    let page = html_page(&[report]).unwrap();
    assert!(page.contains("No pause to draw: every response came in one read"), "{page}");
    assert!(!page.contains("data-plot=\"read-gap-spectrum\"><svg"), "{page}");
}

#[test]
fn counts_that_span_more_than_a_hundredfold_are_drawn_on_a_log_axis() {
    let mut report = value(&bench_report("http://example.test/", 0));
    report["latency_histogram"] = json!([
        {"up_to_ms": 1.0, "count": 66000},
        {"up_to_ms": 2.0, "count": 40},
        {"up_to_ms": 3.0, "count": 2}
    ]);
    let page = unescape(&html_page(&[report]).unwrap());
    let histogram = figure(&page, "histogram");
    assert!(histogram.contains("responses (log scale)"), "{histogram}");
    // Three bars: the one of 2 responses is drawn, not lost under the one of 66,000.
    assert_eq!(histogram.matches("<rect").count(), 3, "{histogram}");
}

#[test]
fn several_runs_share_an_overview_with_a_legend_naming_their_files() {
    let runs = vec![
        ("today.json".to_string(), value(&bench_report("http://a.test/", 0))),
        ("last-week.json".to_string(), value(&bench_report("http://a.test/", 5))),
    ];
    let page = html_page_of_files(&runs).unwrap();
    let overview = &page[page.find("data-plot=\"overview-spectrum\"").unwrap()..];
    let overview = &overview[..overview.find("</figure>").unwrap()];
    assert_eq!(series_lines(overview), 2, "{overview}");
    let legend = unescape(overview);
    assert!(
        legend.contains("today.json — http://a.test/") && legend.contains("last-week.json"),
        "{overview}"
    );
}

#[test]
fn a_doctor_page_shows_findings_with_evidence_proof_and_fix() {
    let report = doctor_report("http://example.test/", vec![nagle_finding("The server waits for the ACK")]);
    let page = html_page(&[value(&report)]).unwrap();
    for text in [
        "data-finding=\"server-nagle-delayed-ack\"",
        // The headline names the finding, not the word "findings".
        "Verdict: <b>server-nagle-delayed-ack</b>: The server waits for the ACK (",
        "responses paused mid-way: 40.2 ms",
        "quick-ack",
        "symptom removed",
        "disable_nagle_algorithm = True",
        "data-plot=\"phase-spectrum\"",
    ] {
        assert!(page.contains(text), "{text} in {page}");
    }
}

#[test]
fn a_doctor_page_shows_the_notes_under_the_verdict() {
    let mut report = doctor_report("http://example.test/", vec![]);
    report.notes = vec![nodelay_diagnose::Note {
        id: nodelay_diagnose::FindingId::InitialWindowLimited,
        title: "A fresh connection would cost 1 more round trip (9.4 ms) for a 25 KB response".into(),
        evidence: Vec::new(),
        proof: Vec::new(),
    }];
    let page = html_page(&[value(&report)]).unwrap();
    let note = "<p class=\"note\" data-note=\"initial-window-limited\">Note (initial-window-limited): A fresh \
                connection would cost 1 more round trip (9.4 ms) for a 25 KB response</p>";
    assert!(page.contains(note), "{page}");
}

#[test]
fn a_ratio_of_counts_keeps_its_decimals_and_a_whole_count_has_none() {
    let mut finding = nagle_finding("The server waits for the ACK");
    finding.evidence.push(Evidence::new("connections opened per response", 1.0002, "count"));
    finding.evidence.push(Evidence::new("responses", 40.0, "count"));
    let page = html_page(&[value(&doctor_report("http://example.test/", vec![finding]))]).unwrap();
    assert!(page.contains("connections opened per response: 1.00<"), "{page}");
    assert!(page.contains("responses: 40<"), "{page}");
}

/// A compare report of targets `a` and `b`, `b` slower by `b_slower_by_ms`, both diagnosed.
pub(crate) fn compare_report(b_slower_by_ms: u64) -> CompareReport {
    let target = |label: &str, slower_by_ms: u64, diagnosis: Option<DoctorReport>| CompareTarget {
        label: label.into(),
        url: format!("http://{label}.test/"),
        settings: settings(&format!("http://{label}.test/")),
        error: None,
        rounds: (1..=3)
            .map(|round| RoundFigures {
                round,
                requests_completed: 300,
                errors: 0,
                requests_per_second: 100.0 + round as f64,
                p50_ms: Some(5.0 + slower_by_ms as f64 + round as f64 / 10.0),
                p90_ms: Some(9.0),
                p99_ms: Some(40.0),
                first_byte_p50_ms: Some(4.0),
                read_gap_p50_ms: Some(0.0),
            })
            .collect(),
        run: Some(bench_report(&format!("http://{label}.test/"), slower_by_ms)),
        diagnosis,
        diagnosis_error: None,
        saved: None,
    };
    CompareReport {
        schema: Cow::Borrowed(COMPARE_SCHEMA_ID),
        rounds: 3,
        rounds_completed: 3,
        settings: settings("http://a.test/"),
        targets: vec![
            target("a", 0, Some(doctor_report("http://a.test/", vec![]))),
            target(
                "b",
                b_slower_by_ms,
                Some(doctor_report("http://b.test/", vec![nagle_finding("B waits for the ACK")])),
            ),
        ],
        comparisons: vec![Comparison {
            label: "b".into(),
            against: "a".into(),
            metric: Cow::Borrowed("p50_ms"),
            ratio: 6.8,
            interval_low: Some(6.1),
            interval_high: Some(7.4),
            p_value: 0.01,
            every_round_agrees: true,
            significant: true,
            verdict: "b is 6.8× slower at p50 than a (every round agrees; p = 0.01)".into(),
        }],
        verdicts: Vec::new(),
        test: "Mann-Whitney U over the rounds".into(),
        alpha: 0.05,
        machine: Machine { kernel: "Linux 6.1.0".into(), cores: 2, hostname: "box".into() },
        interrupted: false,
        interrupted_round: None,
        thresholds: Vec::new(),
    }
}

/// The markup of the figure whose `data-plot` is `plot`.
fn figure<'a>(page: &'a str, plot: &str) -> &'a str {
    let at = page.find(&format!("data-plot=\"{plot}\"")).unwrap_or_else(|| panic!("no {plot} in {page}"));
    &page[at..at + page[at..].find("</figure>").unwrap()]
}

#[test]
fn a_compare_page_overlays_the_targets_and_sets_their_diagnoses_side_by_side() {
    let page = html_page(&[value(&compare_report(30))]).unwrap();
    let spectrum = figure(&page, "latency-spectrum");
    assert_eq!(series_lines(spectrum), 2, "one line per target");
    assert!(spectrum.contains("class=\"legend\""));
    let text = unescape(&page);
    for text_in_page in [
        "<h1>nodelay compare: b is 6.80× slower at p50 than a</h1>",
        "b is 6.8× slower at p50 than a (every round agrees; p = 0.01)",
        "6.10× – 7.40×",
        "101 req/s – 103 req/s",
        "Diagnoses side by side",
        "<h4 data-diagnosed=\"b\">b: 1 finding</h4>",
        "<h4 data-diagnosed=\"a\">a: healthy</h4>",
        "B waits for the ACK",
        "Linux 6.1.0",
    ] {
        assert!(text.contains(text_in_page), "{text_in_page} in {page}");
    }
}

#[test]
fn a_ratio_far_below_one_keeps_three_significant_digits() {
    let mut report = compare_report(30);
    report.comparisons.push(Comparison {
        metric: Cow::Borrowed("requests_per_second"),
        ratio: 0.00101,
        interval_low: Some(0.000987),
        interval_high: Some(0.00105),
        ..report.comparisons[0].clone()
    });
    let text = unescape(&html_page(&[value(&report)]).unwrap());
    assert!(text.contains("0.00101×") && text.contains("0.000987× – 0.00105×"), "{text}");
    assert!(!text.contains("0.001×"), "{text}");
}

#[test]
fn each_rounds_p50_is_a_dot_and_each_target_has_its_timeline() {
    let page = html_page(&[value(&compare_report(30))]).unwrap();
    let rounds = figure(&page, "rounds");
    assert_eq!(rounds.matches("<circle").count(), 6, "3 rounds of 2 targets: {rounds}");
    assert!(rounds.contains("round (in the order run)") && rounds.contains("class=\"legend\""), "{rounds}");
    for plot in ["timeline-rate", "timeline-p50"] {
        let timeline = figure(&page, plot);
        assert_eq!(series_lines(timeline), 2, "one line per target: {timeline}");
        assert!(timeline.contains("seconds measured (each target"), "{timeline}");
    }
}

#[test]
fn targets_more_than_ten_times_apart_share_a_log_axis_that_says_so() {
    // 5 ms against 7 ms: linear; 5 ms against 305 ms: log.
    let near = html_page(&[value(&compare_report(2))]).unwrap();
    let far = html_page(&[value(&compare_report(300))]).unwrap();
    for plot in ["rounds", "latency-spectrum", "timeline-p50"] {
        let linear = figure(&near, plot);
        assert!(linear.contains("data-scale=\"linear\"") && linear.contains("ms, linear scale)"), "{linear}");
        let log = figure(&far, plot);
        assert!(log.contains("data-scale=\"log\"") && log.contains("ms, log scale)"), "{log}");
    }
    // Both targets answered 500 req/s each second: their throughput stays linear.
    assert!(figure(&far, "timeline-rate").contains("data-scale=\"linear\""));
}

#[test]
fn every_targets_settings_are_shown_the_shared_ones_once() {
    let mut report = compare_report(30);
    report.targets[1].settings.connections = 8;
    let page = unescape(&html_page(&[value(&report)]).unwrap());
    let by_target = &page[page.find("settings-by-target").unwrap()..];
    let by_target = &by_target[..by_target.find("</table>").unwrap()];
    for row in [
        "<th>url</th><td>http://a.test/</td><td>http://b.test/</td>",
        "<th>connections</th><td>2</td><td>8</td>",
    ] {
        assert!(by_target.contains(row), "{row} in {by_target}");
    }
    let shared = &page[page.find("settings-shared").unwrap()..];
    let shared = &shared[..shared.find("</table>").unwrap()];
    assert!(shared.contains("<th>threads</th><td>1</td>") && !shared.contains("<th>url</th>"), "{shared}");
}

#[test]
fn an_interrupted_compare_says_which_round_was_left_out() {
    let mut report = compare_report(30);
    report.rounds = 5;
    report.interrupted = true;
    report.interrupted_round = Some(4);
    let page = html_page(&[value(&report)]).unwrap();
    assert!(
        page.contains(
            "Interrupted (Ctrl-C) in round 4 of 5: that round was cut short and is left out; 3 complete rounds are compared."
        ),
        "{page}"
    );
    assert!(page.contains("a, b measured in 3 of 5 rounds each"), "{page}");
}

#[test]
fn code_in_a_finding_is_code_and_a_proof_says_its_p50_once() {
    let mut finding = nagle_finding("The server waits for the ACK");
    finding.fix_summary = "Start it with `nodelay exec -- PROGRAM`, or run `nodelay fix :PORT`.".into();
    let mut twice = finding.proof[0].clone();
    twice.result = "p50 41.00 ms -> 0.30 ms; a pause in 0 of 29 responses".into();
    finding.proof = vec![twice.clone(), twice, finding.proof[0].clone()];
    let page = html_page(&[value(&doctor_report("http://example.test/", vec![finding]))]).unwrap();
    assert!(!page.contains('`'), "no backtick left: {page}");
    assert!(page.contains(
        "Start it with <code>nodelay exec -- PROGRAM</code>, or run <code>nodelay fix :PORT</code>."
    ));
    let proof = &page[page.find("<ul class=\"proof\">").unwrap()..];
    let proof = &proof[..proof.find("</ul>").unwrap()];
    let lines: Vec<&str> = proof.split("<li>").skip(1).collect();
    assert_eq!(lines.len(), 2, "the same proof once: {proof}");
    assert_eq!(lines[0].matches("p50").count(), 1, "{}", lines[0]);
    assert!(
        lines[0].contains("p50 41.00 ms → 0.30 ms; a pause in 0 of 29 responses (symptom removed)"),
        "{proof}"
    );
    assert!(lines[1].contains("p50 41.00 ms → 300.0 µs; the pause went away (symptom removed)"), "{proof}");
}

#[test]
fn text_from_the_input_is_escaped() {
    let evil = "http://x.test/<script>alert(1)</script>\"'&";
    let mut doctor = doctor_report(evil, vec![nagle_finding("<img src=x onerror=alert(1)>")]);
    doctor.server = Some("<b>nginx</b>".into());
    let page = html_page(&[value(&bench_report(evil, 0)), value(&doctor)]).unwrap();
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img") && !page.contains("<b>nginx"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"), "{page}");
}

#[test]
fn other_json_is_refused_naming_its_schema_and_the_ones_read() {
    let old = html_page_of_files(&[("old.json".into(), json!({"schema": "nodelay-bench/0"}))]).unwrap_err();
    assert!(old.0.starts_with("old.json has schema \"nodelay-bench/0\", a schema version"), "{old}");
    assert!(old.0.contains("nodelay-bench/1") && old.0.contains("nodelay-pcap/1"), "{old}");
    let other = html_page_of_files(&[("package.json".into(), json!({"name": "x"}))]).unwrap_err();
    assert!(other.0.starts_with("package.json is not a nodelay report"), "{other}");
    let foreign = html_page(&[json!({"schema": "https://example.test/s"})]).unwrap_err();
    assert!(foreign.0.starts_with("run 1 has schema"), "{foreign}");
    let mut broken = value(&bench_report("http://example.test/", 0));
    broken["requests_completed"] = json!("many");
    let broken = html_page(&[broken]).unwrap_err();
    assert!(broken.0.contains("is not a valid \"nodelay-bench/1\" report"), "{broken}");
    // A schema id alone, or a bench run labelled a capture, is no report: not a page of zeros.
    let bare = html_page(&[json!({"schema": "nodelay-bench/1"})]).unwrap_err();
    assert_eq!(
        bare.0,
        "run 1 is not a valid \"nodelay-bench/1\" report: it lacks requests_completed, requests_per_second, latency_ms"
    );
    let mut relabelled = value(&bench_report("http://example.test/", 0));
    relabelled["schema"] = json!("nodelay-pcap/1");
    let relabelled = html_page(&[relabelled]).unwrap_err();
    assert!(relabelled.0.ends_with("it lacks packets, flows, stalls, verdict"), "{relabelled}");
}

/// Times and rates no run measures are damage: refused with where they are, for the page
/// and the text alike, where drawing them overflowed the plotting library (fuzz, html_page:
/// a bucket up to 5.4e16 ms, a spectrum point at -1e300 ms).
#[test]
fn a_saved_run_with_a_time_or_rate_no_run_measures_is_refused_saying_where() {
    let report = value(&bench_report("http://example.test/", 0));
    for (place, figure, expected) in [
        (
            "/latency_histogram/0/up_to_ms",
            5.39e16,
            "latency_histogram[0].up_to_ms is 5.39e16 ms, beyond any time",
        ),
        ("/latency_spectrum/0/latency_ms", -1e300, "latency_spectrum[0].latency_ms is -1e300 ms"),
        // Percentiles are named p50, p99...: times because the field above them is `_ms`.
        ("/latency_ms/p99", 1e300, "latency_ms.p99 is 1e300 ms"),
        ("/timeline/0/start_s", -1e300, "timeline[0].start_s is -1e300 s"),
        ("/timeline/0/requests_per_second", -1.0, "timeline[0].requests_per_second is -1, outside any rate"),
    ] {
        let mut damaged = report.clone();
        *damaged.pointer_mut(place).unwrap_or_else(|| panic!("{place} in {report:#}")) = json!(figure);
        let page = html_page(&[damaged.clone()]).unwrap_err();
        assert!(page.0.starts_with("run 1 is not a valid \"nodelay-bench/1\" report: "), "{page}");
        assert!(page.0.contains(expected), "{page}");
        let text = crate::text_of_saved_run("damaged.json", &damaged, 80).unwrap_err();
        assert!(text.to_string().contains(expected), "{text}");
    }
    // Within the bounds (a difference may be negative; a sum of times may span days) but
    // millions of axis lengths off the plot, which panicked in the plotting library: drawn,
    // held at the axis.
    let mut far = report;
    far["latency_spectrum"][0]["latency_ms"] = json!(-1e9);
    far["latency_histogram"][0]["up_to_ms"] = json!(1e11);
    far["timeline"][0]["p99_ms"] = json!(-1e9);
    far["timeline"][0]["start_s"] = json!(-1e11);
    assert!(html_page(&[far]).is_ok());
}

#[test]
fn compare_text_shows_each_diagnosed_targets_notes() {
    use crate::render::Render;
    let mut report = compare_report(2);
    let diagnosis = report.targets[1].diagnosis.as_mut().unwrap();
    diagnosis.notes = vec![nodelay_diagnose::Note {
        id: FindingId::ProxyHopStall,
        title: "The server answers as nginx across a 10.2 ms path".into(),
        evidence: Vec::new(),
        proof: Vec::new(),
    }];
    let text = crate::text::FittedText { width: 80 }.render(&report);
    let diagnosed = text.split("b diagnosed").nth(1).unwrap_or_else(|| panic!("{text}"));
    assert!(diagnosed.contains("note: The server answers as nginx across a 10.2 ms path"), "{text}");
}
