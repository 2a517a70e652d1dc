//! The Kubernetes and Grafana material of `docs/kubernetes.md`: the DaemonSet parses and asks
//! for what watch needs and nothing more, and every metric the Grafana dashboard queries is
//! one that `/metrics` exposes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use nodelay_capture::Role;
use nodelay_watch::prometheus::{Mode, WatchMetrics};
use serde::Deserialize;
use serde_json::Value as Json;
use serde_norway::Value as Yaml;

fn repo_file(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The DaemonSet document of deploy/kubernetes/daemonset.yaml (beside its Namespace).
fn daemonset() -> Yaml {
    let text = repo_file("deploy/kubernetes/daemonset.yaml");
    let documents: Vec<Yaml> = serde_norway::Deserializer::from_str(&text)
        .map(|document| Yaml::deserialize(document).expect("YAML"))
        .collect();
    let kinds: Vec<_> = documents.iter().map(|d| d["kind"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["Namespace", "DaemonSet"]);
    let namespace = documents[0]["metadata"]["name"].clone();
    let daemonset = documents[1].clone();
    assert_eq!(daemonset["metadata"]["namespace"], namespace);
    daemonset
}

fn strings(value: &Yaml) -> Vec<&str> {
    value.as_sequence().expect("a list").iter().map(|v| v.as_str().expect("a string")).collect()
}

#[test]
fn the_daemonset_runs_on_the_hosts_network_with_three_capabilities() {
    let daemonset = daemonset();
    assert_eq!(daemonset["apiVersion"], "apps/v1");
    let pod = &daemonset["spec"]["template"];
    let selector = &daemonset["spec"]["selector"]["matchLabels"];
    assert_eq!(&pod["metadata"]["labels"], selector, "the selector matches the pods");
    let spec = &pod["spec"];
    assert_eq!(spec["hostNetwork"], true, "the node's interfaces, not the pod's");
    assert_eq!(spec["hostPID"], true, "the node's processes, to name a socket's owner");
    let containers = spec["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let watch = &containers[0];
    assert_eq!(watch["image"], "localhost/nodelay:0.1");
    let security = &watch["securityContext"];
    assert_eq!(security["privileged"], false);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(strings(&security["capabilities"]["drop"]), ["ALL"]);
    let added: BTreeSet<_> = strings(&security["capabilities"]["add"]).into_iter().collect();
    assert_eq!(added, BTreeSet::from(["DAC_READ_SEARCH", "NET_RAW", "SYS_PTRACE"]));
    assert_eq!(watch["resources"]["limits"]["memory"], "64Mi", "the issue's churn target");
}

#[test]
fn the_scrape_annotations_point_at_the_port_watch_listens_on() {
    let daemonset = daemonset();
    let pod = &daemonset["spec"]["template"];
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
    let port: u16 = annotations["prometheus.io/port"].as_str().unwrap().parse().unwrap();
    let watch = &pod["spec"]["containers"][0];
    let args = strings(&watch["args"]);
    assert_eq!(&args[..3], ["watch", "-i", "any"]);
    let listen = args.iter().position(|a| *a == "--prometheus").map(|i| args[i + 1]).expect("--prometheus");
    let listen = nodelay_watch::prometheus::parse_listen_addr(listen).unwrap();
    assert_eq!(listen.port(), port);
    assert!(listen.ip().is_unspecified(), "reachable on the node's address: {listen}");
    assert_eq!(watch["ports"][0]["containerPort"].as_u64(), Some(u64::from(port)));
    assert_eq!(watch["livenessProbe"]["httpGet"]["path"], "/metrics");
}

/// Every expression of the dashboard: panels' targets (rows' nested panels too) and the
/// template variables' queries.
fn dashboard_expressions(dashboard: &Json) -> Vec<String> {
    fn panels(list: &Json, out: &mut Vec<String>) {
        for panel in list.as_array().into_iter().flatten() {
            let targets = panel["targets"].as_array().into_iter().flatten();
            out.extend(targets.filter_map(|t| t["expr"].as_str()).map(str::to_owned));
            panels(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    panels(&dashboard["panels"], &mut out);
    let variables = dashboard["templating"]["list"].as_array().into_iter().flatten();
    out.extend(variables.filter_map(|v| v["definition"].as_str()).map(str::to_owned));
    out
}

/// The `nodelay_watch_*` names in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("nodelay_watch_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// The metric families `/metrics` exposes with one of everything recorded, by their
/// Prometheus names: a histogram's samples (`_bucket`, `_sum`, `_count`) under its own.
fn exposed_families() -> BTreeSet<String> {
    let metrics = WatchMetrics::new();
    metrics.stall("server-nagle-delayed-ack", "nginx", 8080, Role::Server, Duration::from_millis(41));
    metrics.path_rtt(Duration::from_micros(80));
    metrics.flows_watched(1);
    metrics.flows_seen(1);
    metrics.flows_evicted(1);
    metrics.packets(10, 1);
    metrics.mode(Mode::Capture);
    let text = metrics.encode();
    let samples = text.lines().filter(|line| !line.starts_with('#'));
    samples.map(|line| family(line.split(['{', ' ']).next().unwrap()).to_owned()).collect()
}

fn family(name: &str) -> &str {
    ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name)
}

#[test]
fn every_metric_the_dashboard_queries_is_exposed() {
    let dashboard: Json =
        serde_json::from_str(&repo_file("deploy/grafana/nodelay-watch.json")).expect("JSON");
    assert_eq!(dashboard["uid"], "nodelay-watch");
    let expressions = dashboard_expressions(&dashboard);
    assert!(expressions.len() >= 10, "{expressions:?}");
    let exposed = exposed_families();
    let mut queried = BTreeSet::new();
    for expr in &expressions {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "an expression over no watch metric: {expr}");
        for name in names {
            assert!(exposed.contains(family(&name)), "{name} is not exposed ({exposed:?}): {expr}");
            queried.insert(family(&name).to_owned());
        }
    }
    // The panels the issue asks for: stalls, their durations, path RTT, flows, drops.
    for wanted in [
        "nodelay_watch_stalls_total",
        "nodelay_watch_stall_duration_seconds",
        "nodelay_watch_path_rtt_seconds",
        "nodelay_watch_flows",
        "nodelay_watch_packets_dropped_total",
    ] {
        assert!(queried.contains(wanted), "the dashboard has no panel over {wanted}");
    }
}

#[test]
fn metric_names_are_read_from_promql() {
    let expr = "histogram_quantile(0.5, sum by (le) (rate(nodelay_watch_stall_duration_seconds_bucket{x=\"1\"}[5m]))) \
                / nodelay_watch_flows";
    assert_eq!(metric_names(expr), ["nodelay_watch_stall_duration_seconds_bucket", "nodelay_watch_flows"]);
    assert_eq!(family("nodelay_watch_stall_duration_seconds_bucket"), "nodelay_watch_stall_duration_seconds");
    assert!(exposed_families().contains("nodelay_watch_stall_duration_seconds"));
    assert!(!exposed_families().contains("nodelay_watch_stalls"), "a counter is exposed as _total");
}

#[test]
fn the_dashboards_promql_is_valid_for_promtool() {
    let dashboard: Json =
        serde_json::from_str(&repo_file("deploy/grafana/nodelay-watch.json")).expect("JSON");
    // Grafana's variables as Grafana would fill them in.
    let rules: Vec<Json> = dashboard_expressions(&dashboard)
        .iter()
        .filter(|expr| !expr.starts_with("label_values("))
        .enumerate()
        .map(|(i, expr)| {
            let expr =
                expr.replace("$__rate_interval", "1m").replace("$__range", "1h").replace("$instance", ".*");
            serde_json::json!({ "record": format!("dashboard:expr{i}"), "expr": expr })
        })
        .collect();
    let file = std::env::temp_dir().join(format!("nodelay-watch-dashboard-rules-{}.yml", std::process::id()));
    // JSON is YAML: promtool reads it as a rules file.
    let groups = serde_json::json!({ "groups": [{ "name": "dashboard", "rules": rules }] });
    std::fs::write(&file, groups.to_string()).unwrap();
    let output = std::process::Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(&file)
        .output()
        .expect("run promtool: the Debian package `prometheus` (bash scripts/setup.sh installs it)");
    let _ = std::fs::remove_file(&file);
    let said =
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "promtool: {said}");
    assert!(said.contains(&format!("SUCCESS: {} rules found", rules.len())), "{said}");
}
