//! `bench --hdr-log` and `report merge`: four load processes against one server, their
//! interval logs merged; nothing is lost between a run and its log, nor in the merge.

use crate::common::{canned_server, nodelay, validate_against_schema};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::PathBuf;

const LOADS: usize = 4;
const REQUESTS_EACH: &str = "300";

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("merge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Every interval histogram of a log, added into one.
fn log_histogram(path: &PathBuf) -> Histogram<u64> {
    let bytes = std::fs::read(path).expect("log");
    let mut all = Histogram::<u64>::new_with_bounds(1, 2, 3).unwrap();
    all.auto(true);
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(interval) = entry.expect("the log parses") {
            let encoded =
                base64::engine::general_purpose::STANDARD.decode(interval.encoded_histogram()).unwrap();
            let histogram: Histogram<u64> = Deserializer::new().deserialize(&mut &encoded[..]).unwrap();
            all.add(&histogram).unwrap();
        }
    }
    all
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn four_loads_merge_into_one_histogram_of_every_sample() {
    let url = format!(
        "http://{}/",
        canned_server(b"\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec())
    );
    let dir = scratch("four");
    let logs: Vec<PathBuf> = (0..LOADS).map(|i| dir.join(format!("{i}.hlog"))).collect();
    // Concurrently, as load machines would run.
    let runs: Vec<serde_json::Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = logs
            .iter()
            .map(|log| {
                let url = &url;
                scope.spawn(move || {
                    let log = log.to_str().unwrap();
                    let args =
                        ["bench", "-q", "--json", "-c", "2", "-n", REQUESTS_EACH, "--interval", "100ms"];
                    let run = nodelay(&[&args[..], &["--hdr-log", log, url]].concat());
                    assert_eq!(run.code(), 0, "{}", run.stderr());
                    run.json()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let mut every_sample = Histogram::<u64>::new_with_bounds(1, 2, 3).unwrap();
    every_sample.auto(true);
    for (run, log) in runs.iter().zip(&logs) {
        validate_against_schema("bench.schema.json", run);
        let completed = run["requests_completed"].as_u64().unwrap();
        let histogram = log_histogram(log);
        assert_eq!(histogram.len(), completed, "{} lost responses", log.display());
        let timeline = run["timeline"].as_array().unwrap();
        assert_eq!(timeline.iter().map(|i| i["requests"].as_u64().unwrap()).sum::<u64>(), completed);
        every_sample.add(&histogram).unwrap();
    }

    let paths: Vec<&str> = logs.iter().map(|p| p.to_str().unwrap()).collect();
    let merge = nodelay(&[&["report", "merge", "--json"][..], &paths].concat());
    assert_eq!(merge.code(), 0, "{}", merge.stderr());
    let merged = merge.json();
    validate_against_schema("merge.schema.json", &merged);
    let sum: u64 = runs.iter().map(|r| r["requests_completed"].as_u64().unwrap()).sum();
    assert_eq!(merged["requests_completed"].as_u64(), Some(sum));
    assert_eq!(every_sample.len(), sum);
    let latency = &merged["latency_ms"];
    for (name, quantile) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        assert_eq!(latency[name].as_f64(), Some(ms(every_sample.value_at_quantile(quantile))), "{name}");
    }
    assert_eq!(latency["max"].as_f64(), Some(ms(every_sample.max())));
    let timeline = merged["timeline"].as_array().unwrap();
    assert_eq!(timeline.iter().map(|i| i["requests"].as_u64().unwrap()).sum::<u64>(), sum);
    for (log, run) in merged["logs"].as_array().unwrap().iter().zip(&runs) {
        assert_eq!(log["requests"], run["requests_completed"]);
    }

    let text = nodelay(&[&["report", "merge"][..], &paths].concat());
    assert_eq!(text.code(), 0, "{}", text.stderr());
    assert!(text.stdout().contains(&format!("{sum} responses in ")), "{}", text.stdout());
    assert!(text.stdout().lines().all(|l| l.chars().count() <= 80), "{}", text.stdout());
}

#[test]
fn what_is_not_an_interval_log_is_one_clear_error() {
    let dir = scratch("bad");
    let text = dir.join("notes.txt");
    std::fs::write(&text, "some notes\nnot a log\n").unwrap();
    let json = dir.join("run.json");
    std::fs::write(&json, "{\n  \"schema\": \"nodelay-bench/1\"\n}\n").unwrap();
    let empty = dir.join("empty.hlog");
    std::fs::write(&empty, "#[StartTime: 1700000000.000 (seconds since epoch)]\n").unwrap();
    let missing = dir.join("missing.hlog");
    let endless = std::path::PathBuf::from("/dev/zero");
    for (path, says) in [
        (&missing, "cannot read"),
        (&endless, "is larger than 256 MiB, the most nodelay reads"),
        (&text, "not an HdrHistogram interval log"),
        (&json, "not an HdrHistogram interval log"),
        (&empty, "without intervals"),
    ] {
        let run = nodelay(&["report", "merge", path.to_str().unwrap()]);
        assert_ne!(run.code(), 0, "{}", path.display());
        let stderr = run.stderr();
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says) && stderr.contains(path.to_str().unwrap()), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(run.stdout().is_empty());
    }
}

#[test]
fn logs_far_apart_in_time_widen_the_timeline_step_instead_of_filling_the_gap() {
    let url = format!(
        "http://{}/",
        canned_server(b"\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec())
    );
    let dir = scratch("far");
    let near = dir.join("near.hlog");
    let run = nodelay(&["bench", "-q", "-c", "1", "-n", "200", "--hdr-log", near.to_str().unwrap(), &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // The same intervals thirty years later.
    let later: String = std::fs::read_to_string(&near)
        .unwrap()
        .lines()
        .map(|line| match line.split_once(',') {
            Some((start, rest)) if line.starts_with(|c: char| c.is_ascii_digit()) => {
                format!("{:.3},{rest}\n", start.parse::<f64>().unwrap() + 1e9)
            }
            _ => format!("{line}\n"),
        })
        .collect();
    let far = dir.join("far.hlog");
    std::fs::write(&far, later).unwrap();
    let merged = nodelay(&["report", "merge", "--json", near.to_str().unwrap(), far.to_str().unwrap()]);
    assert_eq!(merged.code(), 0, "{}", merged.stderr());
    let report = merged.json();
    assert_eq!(report["requests_completed"], 400);
    let points = report["timeline"].as_array().unwrap().len();
    assert!((2..=10_000).contains(&points), "{points} timeline points");
}

#[test]
fn logs_of_different_targets_merge_with_a_warning_naming_both_urls() {
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let urls = [canned_server(b"\r\n\r\n", ok.clone()), canned_server(b"\r\n\r\n", ok)]
        .map(|a| format!("http://{a}/"));
    let dir = scratch("targets");
    let logs = [dir.join("a.hlog"), dir.join("b.hlog")];
    for (url, log) in urls.iter().zip(&logs) {
        let run = nodelay(&["bench", "-q", "-c", "1", "-n", "50", "--hdr-log", log.to_str().unwrap(), url]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
    }
    let paths = logs.each_ref().map(|p| p.to_str().unwrap());
    let merged = nodelay(&[&["report", "merge", "--json"][..], &paths].concat());
    assert_eq!(merged.code(), 0, "{}", merged.stderr());
    let stderr = merged.stderr();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("nodelay: warning: the logs loaded different targets"), "{stderr}");
    for (url, path) in urls.iter().zip(paths) {
        assert!(stderr.contains(&format!("{url} ({path})")), "{stderr}");
    }
    let report = merged.json();
    validate_against_schema("merge.schema.json", &report);
    assert_eq!(report["logs"][1]["url"], urls[1].as_str());
    // Logs of one target merge without a word.
    let same = nodelay(&["report", "merge", "--json", paths[0], paths[0]]);
    assert_eq!((same.code(), same.stderr().as_str()), (0, ""));
}
