//! A target of a saved compare run, read back to be compared again (`compare --baseline
//! RUN.json`): its label, URL, load and rounds. The rounds are the samples the test needs, so
//! only a compare run serves; a bench run has one sample and is refused with how to save one.

use crate::model::bench::{BENCH_SCHEMA_ID, BenchSettings};
use crate::model::compare::{COMPARE_SCHEMA_ID, CompareReport, CompareTarget, SavedTarget};
use nodelay_flags::Flag::{
    BusyPoll, Epoll, Grpc, H2Window, IoUring, Json, Rate, Rounds, Streams, Timeout, WriteSplit,
};
use serde_json::Value;

/// How to make a baseline, for the errors that meet a file that is none.
fn how_to_save() -> String {
    format!("save one with: nodelay compare {Rounds} 5 {Json} URL > FILE.json")
}

/// The target `wanted` of the saved run `text` (`file` names it), or the only one when
/// `wanted` is `None`; one line why not.
pub fn saved_target(text: &str, file: &str, wanted: Option<&str>) -> Result<CompareTarget, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{file}: not JSON: {e}"))?;
    match value.get("schema").and_then(Value::as_str) {
        Some(COMPARE_SCHEMA_ID) => {}
        Some(BENCH_SCHEMA_ID) => {
            return Err(format!(
                "{file} is a bench run: one run is one sample, and a baseline needs rounds to test against; {}",
                how_to_save()
            ));
        }
        Some(other) => {
            return Err(format!("{file} is a \"{other}\" report, not a compare run; {}", how_to_save()));
        }
        None => return Err(format!("{file} is no nodelay report (it has no schema id); {}", how_to_save())),
    }
    let saved: CompareReport = serde_json::from_value(value)
        .map_err(|e| format!("{file} is not a valid \"{COMPARE_SCHEMA_ID}\" report: {e}"))?;
    let labels: Vec<&str> = saved.targets.iter().map(|t| t.label.as_str()).collect();
    let index = match wanted {
        Some(label) => saved.targets.iter().position(|t| t.label == label).ok_or_else(|| {
            format!("{file} has no target \"{label}\" (its targets: {})", labels.join(", "))
        })?,
        None if saved.targets.len() == 1 => 0,
        None => {
            return Err(format!(
                "{file} has {} targets ({}): name one as {file}#LABEL",
                labels.len(),
                labels.join(", ")
            ));
        }
    };
    let target = saved.targets.into_iter().nth(index).expect("index found among the targets");
    if let Some(why) = &target.error {
        return Err(format!("{file}: target {} was not measured: {why}", target.label));
    }
    if target.rounds.len() < 2 {
        return Err(format!(
            "{file}: target {} has {} complete rounds: a test needs 2 or more (5 can tell a difference)",
            target.label,
            target.rounds.len()
        ));
    }
    // The first version wrote no load per target: its targets' settings read as empty, and
    // the report's own (the first target's, the same load for all) stands for them.
    let settings = if target.settings.url.is_empty() { saved.settings } else { target.settings };
    let machine = (!saved.machine.kernel.is_empty()).then_some(saved.machine);
    Ok(CompareTarget {
        label: target.label,
        url: target.url,
        settings,
        error: None,
        rounds: target.rounds,
        run: None,
        diagnosis: None,
        diagnosis_error: None,
        saved: Some(SavedTarget { file: file.to_string(), machine }),
    })
}

/// The load options of `saved` that differ from `now`'s, each as `connections (-c): 1 saved,
/// 50 now`: the rounds of different loads are no comparison. Empty when the loads agree.
pub fn load_differences(saved: &BenchSettings, now: &BenchSettings) -> Vec<String> {
    let mut differences = Vec::new();
    let mut differ = |what: &str, before: String, after: String| {
        if before != after {
            differences.push(format!("{what}: {before} saved, {after} now"));
        }
    };
    let duration = |s: &BenchSettings| match (s.duration_s, s.requests) {
        (Some(seconds), _) => format!("{seconds}s"),
        (None, Some(requests)) => format!("{requests} requests"),
        (None, None) => "unbounded".into(),
    };
    differ("connections (-c)", saved.connections.to_string(), now.connections.to_string());
    differ("threads (-t)", saved.threads.to_string(), now.threads.to_string());
    differ("each round (-d or -n)", duration(saved), duration(now));
    differ("request", saved.method.clone(), now.method.clone());
    let reuse = |s: &BenchSettings| if s.keep_alive { "keep-alive" } else { "a connection per request" };
    differ("connections", reuse(saved).into(), reuse(now).into());
    let rate = |s: &BenchSettings| s.rate_per_second.map_or("closed loop".into(), |r| format!("{r} req/s"));
    differ(&format!("rate ({Rate})"), rate(saved), rate(now));
    differ(&WriteSplit.to_string(), format!("{:?}", saved.write_split), format!("{:?}", now.write_split));
    let version =
        |s: &BenchSettings| s.http_version.clone().map_or("raw tcp".into(), |v| format!("HTTP/{v}"));
    differ("protocol", version(saved), version(now));
    let http2 = |s: &BenchSettings| {
        s.http2.as_ref().map_or("none".into(), |h| {
            let grpc = h.grpc_method.as_deref().map_or(String::new(), |m| format!(", gRPC {m}"));
            format!(
                "{} streams, windows {}/{} bytes{grpc}",
                h.streams_per_connection, h.stream_window_bytes, h.connection_window_bytes
            )
        })
    };
    differ(&format!("HTTP/2 ({Streams}, {H2Window}, {Grpc})"), http2(saved), http2(now));
    // How responses were timed: an epoll loop's read times or the kernel's arrival stamps.
    let clock = |s: &BenchSettings| {
        let waits = if s.batched_waits { "batched waits, arrival-stamped" } else { "read-timed" };
        format!("{} loop, {waits}{}", s.event_loop, if s.busy_poll { ", busy-polled" } else { "" })
    };
    differ(&format!("event loop ({Epoll}, {IoUring}, {BusyPoll})"), clock(saved), clock(now));
    let tls = |s: &BenchSettings| s.tls.as_ref().map_or("plain".into(), |t| t.describe());
    differ("TLS", tls(saved), tls(now));
    differ(&format!("timeout ({Timeout})"), format!("{}s", saved.timeout_s), format!("{}s", now.timeout_s));
    differences
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(connections: usize) -> Value {
        json!({"url": "http://a/", "address": "127.0.0.1:1", "method": "GET", "protocol": "http",
            "connections": connections, "threads": 1, "requests": null, "duration_s": 1.0,
            "rate_per_second": null, "keep_alive": true, "write_split": [], "timeout_s": 5.0,
            "connect_timeout_s": 3.0, "success_status": "2xx,3xx", "tls": null, "busy_poll": false,
            "busy_poll_after_us": null, "io_uring": false, "batched_waits": false, "event_loop": "epoll",
            "event_loop_why": "default", "http_version": "1.1", "http2": null})
    }

    fn run(labels: &[&str]) -> String {
        let targets: Vec<Value> = labels
            .iter()
            .map(|label| {
                json!({"label": label, "url": "http://a/", "settings": settings(1), "error": null,
                    "rounds": [{"round": 1, "requests_completed": 10, "errors": 0,
                        "requests_per_second": 10.0, "p50_ms": 1.0},
                        {"round": 2, "requests_completed": 10, "errors": 0,
                        "requests_per_second": 10.0, "p50_ms": 1.1}]})
            })
            .collect();
        json!({"schema": COMPARE_SCHEMA_ID, "settings": settings(1), "targets": targets,
            "machine": {"kernel": "Linux 6.1.0", "cores": 2, "hostname": "ci"}})
        .to_string()
    }

    #[test]
    fn a_saved_compare_run_gives_its_one_target_or_the_one_named() {
        let one = saved_target(&run(&["main"]), "main.json", None).unwrap();
        assert_eq!((one.label.as_str(), one.rounds.len(), one.run.is_none()), ("main", 2, true));
        assert_eq!(one.saved.unwrap().machine.unwrap().hostname, "ci");
        let two = run(&["main", "pr"]);
        assert_eq!(saved_target(&two, "r.json", Some("pr")).unwrap().label, "pr");
        let why = saved_target(&two, "r.json", None).unwrap_err();
        assert!(why.contains("r.json has 2 targets (main, pr): name one as r.json#LABEL"), "{why}");
        let why = saved_target(&two, "r.json", Some("x")).unwrap_err();
        assert!(why.contains("no target \"x\" (its targets: main, pr)"), "{why}");
    }

    #[test]
    fn what_is_no_compare_run_is_refused_saying_how_to_save_one() {
        let bench = json!({"schema": BENCH_SCHEMA_ID}).to_string();
        assert!(saved_target(&bench, "b.json", None).unwrap_err().contains("is a bench run"));
        assert!(saved_target("{}", "x.json", None).unwrap_err().contains("no nodelay report"));
        assert!(saved_target("[1", "x.json", None).unwrap_err().starts_with("x.json: not JSON"));
        let broken = json!({"schema": COMPARE_SCHEMA_ID, "targets": 3}).to_string();
        assert!(saved_target(&broken, "x.json", None).unwrap_err().contains("not a valid"));
    }

    #[test]
    fn loads_that_differ_are_named() {
        let read = |connections| serde_json::from_value::<BenchSettings>(settings(connections)).unwrap();
        assert!(load_differences(&read(1), &read(1)).is_empty());
        assert_eq!(load_differences(&read(1), &read(50)), ["connections (-c): 1 saved, 50 now"]);
    }
}
