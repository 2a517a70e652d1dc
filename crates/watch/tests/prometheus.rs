//! `nodelay_watch::prometheus`: the text `WatchMetrics::encode` writes (names, units, labels,
//! buckets, the label cap), the `/metrics` endpoint over a real loopback socket, and a real
//! Prometheus (the Debian `prometheus` package) scraping it and answering its query API.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nodelay_capture::Role;
use nodelay_watch::prometheus::{
    CONTENT_TYPE, Holder, LABEL_SETS_MAX, Mode, OVERFLOW_LABEL, WatchMetrics, parse_listen_addr, serve,
};

const NAGLE: &str = "server-nagle-delayed-ack";

/// The value of the sample line `name{labels}` (labels as written, in order), if any.
fn sample(text: &str, series: &str) -> Option<String> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ').map(str::to_owned))
}

/// The series of a stall counted for a process known by name (no PID) or, past the cap, for
/// the overflow label.
fn stall_series(finding: &str, process: &str, port: &str, side: &str) -> String {
    let pid = if process == OVERFLOW_LABEL { OVERFLOW_LABEL } else { "(unknown)" };
    format!(
        "nodelay_watch_stalls_total{{finding=\"{finding}\",process=\"{process}\",pid=\"{pid}\",port=\"{port}\",side=\"{side}\"}}"
    )
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn stalls_are_counted_by_finding_process_port_and_side() {
    let metrics = WatchMetrics::new();
    for _ in 0..3 {
        metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(41));
    }
    metrics.stall("client-split-write", Holder::named("curl"), 40312, Role::Client, ms(200));
    let text = metrics.encode();
    assert!(text.contains("# TYPE nodelay_watch_stalls counter\n"), "{text}");
    assert_eq!(sample(&text, &stall_series(NAGLE, "nginx", "8080", "server")).as_deref(), Some("3"));
    let client = stall_series("client-split-write", "curl", "40312", "client");
    assert_eq!(sample(&text, &client).as_deref(), Some("1"), "{text}");
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF: {text}");
}

#[test]
fn stall_durations_land_in_buckets_that_tell_40_ms_from_200_ms() {
    let metrics = WatchMetrics::new();
    metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(41));
    metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(201));
    let text = metrics.encode();
    assert!(text.contains("# UNIT nodelay_watch_stall_duration_seconds seconds\n"), "{text}");
    let bucket = |le: &str| {
        let series =
            format!("nodelay_watch_stall_duration_seconds_bucket{{le=\"{le}\",finding=\"{NAGLE}\"}}");
        sample(&text, &series).unwrap_or_else(|| panic!("no bucket le={le}: {text}"))
    };
    // Cumulative counts: 41 ms is above 38 ms and within 50 ms; 201 ms above 190 ms.
    assert_eq!(bucket("0.038"), "0");
    assert_eq!(bucket("0.05"), "1");
    assert_eq!(bucket("0.19"), "1");
    assert_eq!(bucket("0.25"), "2");
    assert_eq!(bucket("+Inf"), "2");
    let count = format!("nodelay_watch_stall_duration_seconds_count{{finding=\"{NAGLE}\"}}");
    assert_eq!(sample(&text, &count).as_deref(), Some("2"));
    let sum = format!("nodelay_watch_stall_duration_seconds_sum{{finding=\"{NAGLE}\"}}");
    let sum: f64 = sample(&text, &sum).unwrap().parse().unwrap();
    assert!((sum - 0.242).abs() < 1e-9, "sum {sum} s");
}

#[test]
fn path_rtt_flows_packets_and_mode_are_exposed_in_base_units() {
    let metrics = WatchMetrics::new();
    let text = metrics.encode();
    assert!(!text.contains("nodelay_watch_mode_info"), "no mode before it is known: {text}");
    metrics.path_rtt(Duration::from_micros(60));
    metrics.flows_watched(7);
    metrics.flows_seen(120);
    metrics.flows_evicted(4);
    metrics.packets(5000, 12);
    metrics.mode(Mode::SockDiag);
    let text = metrics.encode();
    for (series, value) in [
        ("nodelay_watch_path_rtt_seconds_bucket{le=\"0.00005\"}", "0"),
        ("nodelay_watch_path_rtt_seconds_bucket{le=\"0.0001\"}", "1"),
        ("nodelay_watch_path_rtt_seconds_count", "1"),
        ("nodelay_watch_flows", "7"),
        ("nodelay_watch_flows_seen_total", "120"),
        ("nodelay_watch_flows_evicted_total", "4"),
        ("nodelay_watch_packets_total", "5000"),
        ("nodelay_watch_packets_dropped_total", "12"),
        ("nodelay_watch_mode_info{mode=\"sock_diag\"}", "1"),
    ] {
        assert_eq!(sample(&text, series).as_deref(), Some(value), "{series} in {text}");
    }
    assert!(text.contains("# TYPE nodelay_watch_flows gauge\n"));
    assert!(text.contains("# TYPE nodelay_watch_mode info\n"));
}

#[test]
fn running_totals_never_go_back() {
    let metrics = WatchMetrics::new();
    metrics.packets(100, 3);
    metrics.packets(40, 1);
    metrics.flows_seen(9);
    metrics.flows_seen(2);
    let text = metrics.encode();
    assert_eq!(sample(&text, "nodelay_watch_packets_total").as_deref(), Some("100"));
    assert_eq!(sample(&text, "nodelay_watch_packets_dropped_total").as_deref(), Some("3"));
    assert_eq!(sample(&text, "nodelay_watch_flows_seen_total").as_deref(), Some("9"));
}

#[test]
fn process_port_pairs_past_the_cap_are_counted_under_one_overflow_label() {
    let metrics = WatchMetrics::new();
    let pairs = LABEL_SETS_MAX + 50;
    for i in 0..pairs {
        let port = 10_000 + i as u16;
        metrics.stall(NAGLE, Holder::named(&format!("p{i}")), port, Role::Server, ms(41));
    }
    // A pair admitted before the cap filled keeps its own labels.
    metrics.stall(NAGLE, Holder::named("p0"), 10_000, Role::Server, ms(41));
    let text = metrics.encode();
    let series = text.lines().filter(|l| l.starts_with("nodelay_watch_stalls_total{")).count();
    assert_eq!(series, LABEL_SETS_MAX + 1, "the cap's pairs and one overflow series");
    let overflow = stall_series(NAGLE, OVERFLOW_LABEL, OVERFLOW_LABEL, "server");
    assert_eq!(sample(&text, &overflow).as_deref(), Some("50"));
    assert_eq!(sample(&text, &stall_series(NAGLE, "p0", "10000", "server")).as_deref(), Some("2"));
}

#[test]
fn odd_process_names_are_escaped_and_empty_ones_named_unknown() {
    let metrics = WatchMetrics::new();
    metrics.stall(NAGLE, Holder::named("we\"ird\\name\n"), 9000, Role::Server, ms(41));
    metrics.stall(NAGLE, Holder::named(""), 9001, Role::Server, ms(41));
    let text = metrics.encode();
    let weird = stall_series(NAGLE, r#"we\"ird\\name\n"#, "9000", "server");
    assert_eq!(sample(&text, &weird).as_deref(), Some("1"), "{text}");
    assert_eq!(sample(&text, &stall_series(NAGLE, "(unknown)", "9001", "server")).as_deref(), Some("1"));
}

/// A plain HTTP/1.0 exchange over loopback (1.0: never chunked, closed after the answer):
/// (status, headers, body).
fn try_http(addr: SocketAddr, method: &str, target: &str) -> std::io::Result<(u16, String, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "{method} {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, head.to_owned(), body.to_owned()))
}

fn http(addr: SocketAddr, method: &str, target: &str) -> (u16, String, String) {
    try_http(addr, method, target).unwrap_or_else(|e| panic!("{method} {target} on {addr}: {e}"))
}

fn local_server(metrics: Arc<WatchMetrics>) -> nodelay_watch::prometheus::MetricsServer {
    serve("127.0.0.1:0".parse().unwrap(), metrics).expect("serve on a free port")
}

#[test]
fn metrics_endpoint_serves_the_text_and_404s_elsewhere() {
    let metrics = Arc::new(WatchMetrics::new());
    metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(41));
    let server = local_server(metrics.clone());
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    let (status, head, body) = http(addr, "GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    let content_type = format!("content-type: {CONTENT_TYPE}");
    assert!(head.to_ascii_lowercase().contains(&content_type.to_ascii_lowercase()), "{head}");
    assert!(body.contains(&stall_series(NAGLE, "nginx", "8080", "server")), "{body}");
    // Each scrape reads the metrics as they are now.
    metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(41));
    let (_, _, body) = http(addr, "GET", "/metrics?x=1");
    assert_eq!(sample(&body, &stall_series(NAGLE, "nginx", "8080", "server")).as_deref(), Some("2"));
    assert_eq!(http(addr, "GET", "/").0, 404);
    assert_eq!(http(addr, "GET", "/metricsx").0, 404);
    assert_eq!(http(addr, "POST", "/metrics").0, 405);
}

#[test]
fn dropping_the_server_closes_its_port() {
    let server = local_server(Arc::new(WatchMetrics::new()));
    let addr = server.local_addr();
    assert_eq!(http(addr, "GET", "/metrics").0, 200);
    drop(server);
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(2));
    assert_eq!(refused.map_err(|e| e.kind()).err(), Some(ErrorKind::ConnectionRefused));
}

#[test]
fn an_address_in_use_is_one_line_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let error = serve(addr, Arc::new(WatchMetrics::new())).expect_err("the port is taken");
    assert_eq!(error.kind(), ErrorKind::AddrInUse);
    let message = error.to_string();
    assert!(message.contains(&addr.to_string()) && !message.contains('\n'), "{message}");
    // Not this host's address.
    let foreign: SocketAddr = "192.0.2.1:9464".parse().unwrap();
    let error = serve(foreign, Arc::new(WatchMetrics::new())).expect_err("TEST-NET-1 is not ours");
    assert!(error.to_string().starts_with("cannot serve /metrics on 192.0.2.1:9464: "), "{error}");
}

#[test]
fn listen_addresses_parse_like_an_exporters() {
    assert_eq!(parse_listen_addr("127.0.0.1:9464"), Ok("127.0.0.1:9464".parse().unwrap()));
    assert_eq!(parse_listen_addr(":9464"), Ok("0.0.0.0:9464".parse().unwrap()));
    assert_eq!(parse_listen_addr("[::1]:9464"), Ok("[::1]:9464".parse().unwrap()));
    for bad in ["9464", "localhost:9464", "127.0.0.1", "127.0.0.1:99999", ""] {
        let error = parse_listen_addr(bad).expect_err(bad);
        assert!(error.contains("IP:PORT") && !error.contains('\n'), "{error}");
    }
}

/// A Prometheus server of the Debian package, killed and its files removed on drop.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Prometheus {
    /// Starts one scraping `target` every second, on a free port (another one if that port
    /// was taken meanwhile), and waits until it answers.
    fn start(target: SocketAddr, deadline: Instant) -> Prometheus {
        let dir = std::env::temp_dir().join(format!("nodelay-watch-prometheus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: nodelay-watch\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        for _attempt in 0..3 {
            let addr = free_port();
            let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
            let child = Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
                .arg(format!("--web.listen-address={addr}"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect(
                    "run prometheus: the Debian package `prometheus` (bash scripts/setup.sh installs it)",
                );
            let mut prometheus = Prometheus { child, dir: dir.clone(), addr };
            if prometheus.wait_ready(deadline) {
                return prometheus;
            }
            // It exited (its port was taken meanwhile): try another port, keep the files.
            prometheus.dir = PathBuf::new();
        }
        panic!("prometheus did not start: {}", prometheus_log(&dir));
    }

    /// True once `/-/ready` answers 200; false if the process exited first.
    fn wait_ready(&mut self, deadline: Instant) -> bool {
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if try_http(self.addr, "GET", "/-/ready").is_ok_and(|(status, _, _)| status == 200) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("prometheus not ready within the deadline: {}", prometheus_log(&self.dir));
    }

    /// The result vector of an instant query.
    fn query(&self, promql: &str) -> Vec<serde_json::Value> {
        let (status, _, body) =
            http(self.addr, "GET", &format!("/api/v1/query?query={}", url_encode(promql)));
        assert_eq!(status, 200, "{body}");
        let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        reply["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

fn free_port() -> SocketAddr {
    let probe = TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap()
}

fn prometheus_log(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A series' labels (without `__name__`) and value from a query result.
fn labels_and_value(series: &serde_json::Value) -> (Vec<(String, String)>, String) {
    let mut labels: Vec<(String, String)> = series["metric"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "__name__" | "instance" | "job"))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    labels.sort();
    (labels, series["value"][1].as_str().unwrap().to_owned())
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut labels: Vec<_> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    labels.sort();
    labels
}

#[test]
fn a_real_prometheus_scrapes_the_stall_counter() {
    let started = Instant::now();
    // About 6 s here (Prometheus' start, then its first scrape); the margin is for a loaded CI.
    let deadline = started + Duration::from_secs(30);
    let metrics = Arc::new(WatchMetrics::new());
    for _ in 0..3 {
        metrics.stall(NAGLE, Holder::named("nginx"), 8080, Role::Server, ms(41));
    }
    metrics.stall("client-split-write", Holder::named("we\"ird\\py"), 40312, Role::Client, ms(200));
    metrics.path_rtt(Duration::from_micros(80));
    metrics.packets(1000, 2);
    metrics.mode(Mode::Capture);
    let server = local_server(metrics);
    let prometheus = Prometheus::start(server.local_addr(), deadline);

    let series = loop {
        let result = prometheus.query("nodelay_watch_stalls_total");
        if result.len() == 2 {
            break result;
        }
        assert!(
            Instant::now() < deadline,
            "no scrape within 30 s: {result:?} {}",
            prometheus_log(&prometheus.dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut seen: Vec<_> = series.iter().map(labels_and_value).collect();
    seen.sort();
    let nginx = labels(&[
        ("finding", NAGLE),
        ("process", "nginx"),
        ("pid", "(unknown)"),
        ("port", "8080"),
        ("side", "server"),
    ]);
    let weird = [
        ("finding", "client-split-write"),
        ("process", "we\"ird\\py"),
        ("pid", "(unknown)"),
        ("port", "40312"),
        ("side", "client"),
    ];
    let mut expected = vec![(labels(&weird), "1".to_owned()), (nginx, "3".to_owned())];
    expected.sort();
    assert_eq!(seen, expected);

    // Every family arrived under the name the docs and the dashboard use.
    let names = prometheus.query("count by (__name__) ({__name__=~\"nodelay_watch_.+\"})");
    let mut names: Vec<String> =
        names.iter().map(|s| s["metric"]["__name__"].as_str().unwrap().to_owned()).collect();
    names.sort();
    for name in [
        "nodelay_watch_flows",
        "nodelay_watch_mode_info",
        "nodelay_watch_packets_dropped_total",
        "nodelay_watch_path_rtt_seconds_bucket",
        "nodelay_watch_stall_duration_seconds_bucket",
        "nodelay_watch_stall_duration_seconds_count",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let p50 = prometheus.query("histogram_quantile(0.5, nodelay_watch_stall_duration_seconds_bucket{finding=\"server-nagle-delayed-ack\"})");
    let p50: f64 = labels_and_value(&p50[0]).1.parse().unwrap();
    assert!((0.038..=0.05).contains(&p50), "the 41 ms stalls' median estimate is {p50} s");
    eprintln!("prometheus scraped and answered in {:.1} s", started.elapsed().as_secs_f64());
}
