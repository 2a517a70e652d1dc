//! The Kubernetes and Grafana material of `docs/kubernetes.md`: the DaemonSet parses and asks
//! for what watch needs and nothing more, and every metric the Grafana dashboard queries is
//! one that `/metrics` exposes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use nodelay_capture::Role;
use nodelay_watch::prometheus::{Holder, Mode, WatchMetrics};
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
fn the_daemonset_runs_on_the_hosts_network_with_five_capabilities() {
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
    assert_eq!(added, BTreeSet::from(["BPF", "DAC_READ_SEARCH", "NET_RAW", "PERFMON", "SYS_PTRACE"]));
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
    assert_eq!(&args[..3], ["watch", "--source", "auto"]);
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

/// nginx's 41 ms server-side stall on port 8080, as the docs quote it.
fn record_one_stall(metrics: &WatchMetrics) {
    let nginx = Holder::named("nginx");
    metrics.stall("server-nagle-delayed-ack", nginx, 8080, Role::Server, Duration::from_millis(41));
}

/// The metric families `/metrics` exposes with one of everything recorded, by their
/// Prometheus names: a histogram's samples (`_bucket`, `_sum`, `_count`) under its own.
fn exposed_families() -> BTreeSet<String> {
    let metrics = WatchMetrics::new();
    record_one_stall(&metrics);
    metrics.exchanges(Holder { command: "nginx", pid: Some(812) }, 8080, Role::Server, 58);
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

/// Runs `promtool ARGS FILE` on `text` written to a temporary file; its output on success.
fn promtool(args: &[&str], name: &str, text: &str) -> String {
    let file = std::env::temp_dir().join(format!("nodelay-watch-{name}-{}.yml", std::process::id()));
    std::fs::write(&file, text).unwrap();
    let output = std::process::Command::new("promtool")
        .args(args)
        .arg(&file)
        .output()
        .expect("run promtool: the Debian package `prometheus` (bash scripts/setup.sh installs it)");
    let _ = std::fs::remove_file(&file);
    let said =
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "promtool {args:?} on {text}: {said}");
    said
}

/// `promtool check rules` on the expressions, each as a recording rule.
fn check_promql(name: &str, expressions: &[String]) {
    let rules: Vec<Json> = expressions
        .iter()
        .enumerate()
        .map(|(i, expr)| serde_json::json!({ "record": format!("check:expr{i}"), "expr": expr }))
        .collect();
    // JSON is YAML: promtool reads it as a rules file.
    let groups = serde_json::json!({ "groups": [{ "name": name, "rules": rules }] });
    let said = promtool(&["check", "rules"], name, &groups.to_string());
    assert!(said.contains(&format!("SUCCESS: {} rules found", rules.len())), "{said}");
}

#[test]
fn the_dashboards_promql_is_valid_for_promtool() {
    let dashboard: Json =
        serde_json::from_str(&repo_file("deploy/grafana/nodelay-watch.json")).expect("JSON");
    let expressions: Vec<String> = dashboard_expressions(&dashboard)
        .iter()
        .filter(|expr| !expr.starts_with("label_values("))
        // Grafana's variables as Grafana fills them in.
        .map(|expr| {
            expr.replace("$__rate_interval", "1m").replace("$__range", "1h").replace("$instance", ".*")
        })
        .collect();
    check_promql("dashboard", &expressions);
}

/// The fenced blocks of `language` (`""`: none given) in a Markdown text.
fn fenced_blocks(markdown: &str, language: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(&str, String)> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (open.take(), fence) {
            (None, Some(tag)) => open = Some((tag, String::new())),
            (None, None) => {}
            (Some((tag, block)), Some(_)) => blocks.extend((tag == language).then_some(block)),
            (Some((tag, mut block)), None) => {
                block.push_str(line);
                block.push('\n');
                open = Some((tag, block));
            }
        }
    }
    blocks
}

#[test]
fn the_docs_scrape_job_and_queries_are_valid_for_promtool() {
    let docs = repo_file("docs/kubernetes.md");
    let scrape =
        fenced_blocks(&docs, "yaml").into_iter().find(|b| b.contains("scrape_configs:")).expect("a job");
    // Debian's Prometheus is built without Kubernetes discovery: the same job over a static
    // target still has its relabelling checked (actions, regular expressions, labels).
    let role = "    kubernetes_sd_configs:\n      - role: pod\n";
    assert!(scrape.contains(role), "{scrape}");
    let scrape = scrape.replace(role, "    static_configs:\n      - targets: ['127.0.0.1:9464']\n");
    let said = promtool(&["check", "config"], "scrape", &scrape);
    assert!(said.contains("SUCCESS"), "{said}");
    let queries: Vec<String> = fenced_blocks(&docs, "promql")
        .iter()
        .flat_map(|block| block.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(str::to_owned))
        .collect();
    assert_eq!(queries.len(), 3, "{queries:?}");
    let exposed = exposed_families();
    for name in queries.iter().flat_map(|q| metric_names(q)) {
        assert!(exposed.contains(family(&name)), "docs query {name}, which is not exposed");
    }
    check_promql("docs", &queries);
}

#[test]
fn the_docs_name_every_metric_and_quote_metrics_as_it_is() {
    let docs = repo_file("docs/kubernetes.md");
    // The table of metrics: one row each, its name first.
    let rows = docs.lines().filter(|line| line.starts_with("| `nodelay_watch_"));
    let named: BTreeSet<String> = rows.flat_map(|row| metric_names(row).into_iter().take(1)).collect();
    assert_eq!(named, exposed_families(), "the table of docs/kubernetes.md against /metrics");
    // The /metrics excerpt: every line of it is a line of the real text.
    let excerpt = fenced_blocks(&docs, "").into_iter().find(|b| b.contains("# EOF")).expect("an excerpt");
    let metrics = WatchMetrics::new();
    record_one_stall(&metrics);
    metrics.mode(Mode::Capture);
    let text = metrics.encode();
    for line in excerpt.lines().filter(|l| *l != "...") {
        assert!(text.lines().any(|real| real == line), "docs quote {line:?}, /metrics says:\n{text}");
    }
}

#[test]
fn the_daemonsets_arguments_are_watchs_own() {
    let daemonset = daemonset();
    let args = strings(&daemonset["spec"]["template"]["spec"]["containers"][0]["args"]);
    // Parsed by the nodelay command line itself, as the container runs it.
    let parsed = <nodelay::Cli as clap::Parser>::try_parse_from(
        std::iter::once("nodelay").chain(args.iter().copied()),
    );
    let nodelay::Command::Watch(watch) = parsed.unwrap_or_else(|e| panic!("{args:?}: {e}")).command else {
        panic!("{args:?} is not a watch command")
    };
    assert_eq!(watch.interface, "any");
    assert_eq!(watch.source, nodelay::SourceArg::Auto, "the kernel's programs where allowed");
    assert_eq!(watch.prometheus, Some("0.0.0.0:9464".parse().unwrap()));
}
