//! io_uring's loop, the default where its waits can batch (closed loop, keep-alive, 4 or more
//! connections on a thread): the same requests and times as the epoll loop against real
//! servers, with responses timed by their arrival (a server that answers one request at a
//! time, an open-loop schedule, a held response); closed sockets released at once; epoll
//! where it would batch nothing, with `--epoll`, or where the machine refuses io_uring (here a
//! seccomp filter), the text and the JSON saying which loop ran and why; where io_uring is
//! refused, epoll's timer-batched waits measure what the classic loop does. Every test holds
//! the machine (`alone`): the timing tests' thresholds assume no other load.

use crate::common;

use crate::common::nginx::Nginx;
use crate::common::tls::certs;
use crate::common::{
    OK_RESPONSE, alone, ms, node_peer, nodelay, python_peer, read_request_head, squeeze,
    validate_against_schema,
};
use nodelay_diagnose::compare_rounds;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn the_default_loop_is_io_uring_where_its_waits_batch_and_the_output_says_which_ran() {
    let _alone = alone();
    let peer = node_peer("node_http_server.js", &[]);
    let url = peer.url("/");
    let settings = |flags: &[&str]| {
        let mut args = vec!["bench", "--json", "-n", "40"];
        args.extend(flags);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{flags:?}: {}", run.stderr());
        assert_eq!(run.stderr(), "", "{flags:?}: a default is no warning");
        let report = run.json();
        validate_against_schema("bench.schema.json", &report);
        assert_eq!(report["requests_completed"], 40, "{flags:?}");
        let s = &report["settings"];
        assert_eq!(s["io_uring"], s["event_loop"] == "io_uring", "{s:#}");
        // io_uring is allowed here: the runs that batch are io_uring's.
        assert_eq!(s["batched_waits"], s["io_uring"], "{s:#}");
        (s["event_loop"].as_str().unwrap().to_string(), s["event_loop_why"].as_str().unwrap().to_string())
    };
    let chosen = |event_loop: &str, why: &str| (event_loop.to_string(), why.to_string());
    assert_eq!(settings(&["-t", "1", "-c", "8"]), chosen("io_uring", "default"));
    assert_eq!(settings(&["-t", "2", "-c", "7"]), chosen("io_uring", "default"), "4 and 3 connections");
    assert_eq!(settings(&["-t", "2", "-c", "6"]), chosen("epoll", "default under 4 connections per thread"));
    assert_eq!(settings(&["-c", "1"]), chosen("epoll", "default under 4 connections per thread"));
    assert_eq!(settings(&["-t", "1", "-c", "8", "--epoll"]), chosen("epoll", "--epoll"));
    assert_eq!(settings(&["-c", "1", "--io-uring"]), chosen("io_uring", "--io-uring"));
    assert_eq!(settings(&["-t", "1", "-c", "8", "--busy-poll=1ms"]), chosen("epoll", "--busy-poll"));
    assert_eq!(
        settings(&["-t", "1", "-c", "8", "--no-keepalive"]),
        chosen("epoll", "default for a new connection per request")
    );
    assert_eq!(settings(&["-t", "1", "-c", "8", "--rate", "400"]), chosen("epoll", "default for open loop"));
    // One line of the text, before the run.
    let text = nodelay(&["bench", "-t", "1", "-c", "8", "-n", "40", &url]).stdout();
    let lines: Vec<&str> = text.lines().filter(|line| line.contains(" loop (")).collect();
    assert_eq!(lines, ["  io_uring loop (default): batched waits, kernel arrival times"], "{text}");
    let text = nodelay(&["bench", "-c", "1", "-n", "5", "--epoll", &url]).stdout();
    assert!(text.lines().any(|line| line == "  epoll loop (--epoll)"), "{text}");
    let both = nodelay(&["bench", "--epoll", "--io-uring", "-n", "1", &url]);
    assert_eq!(both.code(), 2, "{}", both.stderr());
}

/// `nodelay bench --json -t 1 -c 4 ARGS... URL` (io_uring by default: one thread of 4
/// connections): the report, its loop checked against `event_loop`.
fn bench_on_four(url: &str, args: &[&str], event_loop: &str) -> serde_json::Value {
    bench_on_four_in(Machine::AsItIs, url, args, event_loop)
}

/// Where a run goes: this machine, or this machine refusing io_uring (a seccomp filter).
#[derive(Clone, Copy, PartialEq)]
enum Machine {
    AsItIs,
    RefusingIoUring,
}

/// The three loops of a closed-loop run on 4 connections: the classic epoll loop (wrk's
/// clock), io_uring's batched waits (the default), and epoll's timer-batched waits (the
/// default where io_uring is refused). Each: where it runs, its flags, its `event_loop`.
const THREE_LOOPS: [(Machine, &[&str], &str); 3] = [
    (Machine::AsItIs, &["--epoll"], "epoll"),
    (Machine::AsItIs, &[], "io_uring"),
    (Machine::RefusingIoUring, &[], "epoll"),
];

fn bench_on_four_in(machine: Machine, url: &str, args: &[&str], event_loop: &str) -> serde_json::Value {
    let mut all = vec!["bench", "--json", "-t", "1", "-c", "4"];
    all.extend(args);
    all.push(url);
    let (code, stdout, stderr) = match machine {
        Machine::AsItIs => {
            let run = nodelay(&all);
            (run.code(), run.stdout(), run.stderr())
        }
        Machine::RefusingIoUring => {
            let (code, stdout, stderr) = refused_io_uring(&all);
            (code.unwrap_or(-1), stdout, stderr)
        }
    };
    assert_eq!(code, 0, "{args:?}: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let settings = &report["settings"];
    assert_eq!(settings["event_loop"], event_loop, "{settings:#}");
    // A closed loop on 4 connections batches its waits, whichever the poller, but in the
    // classic loop; an open loop only under --io-uring.
    let batches =
        if args.contains(&"--rate") { args.contains(&"--io-uring") } else { !args.contains(&"--epoll") };
    assert_eq!(settings["batched_waits"], batches, "{settings:#}");
    report
}

/// A keep-alive HTTP server of concurrency 1: whatever the connections, it answers one request
/// at a time, in the order they came, each after `service` (a reading thread per connection,
/// one answering thread taking the requests from a queue).
fn one_at_a_time_server(service: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (queue, requests) = std::sync::mpsc::channel::<std::net::TcpStream>();
    std::thread::spawn(move || {
        for mut stream in requests {
            // The server's own work: what the test measures, not a wait.
            std::thread::sleep(service);
            let _ = stream.write_all(OK_RESPONSE);
        }
    });
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let queue = queue.clone();
            std::thread::spawn(move || {
                stream.set_nodelay(true).unwrap();
                while !read_request_head(&mut stream).is_empty() {
                    if queue.send(stream.try_clone().unwrap()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn against_a_server_of_one_request_at_a_time_io_uring_measures_what_epoll_does() {
    let _alone = alone();
    // The responses come one at a time, 4 connections queued at the server: the batched wait
    // learns to hold out for one, and its probes for two (each holding a response up to
    // 500 µs, timed by its arrival stamp) grow rarer. Times end at the arrival rather than
    // after the read, shorter by the generator's wake-up: here 1 to 2 % of a 4.4 ms p50, within
    // what compare calls no difference. Judged as compare judges two targets: rounds
    // interleaved, the Mann-Whitney test and the Hodges-Lehmann ratio of compare_rounds.
    // Epoll's timer-batched waits (io_uring refused) likewise.
    //
    // Three tries at most. Beside the suite the generator's wake-up grows to milliseconds,
    // and the classic loop's times carry it while io_uring's do not: one clean-clone run
    // measured epoll's p90 at 6.5-10.3 ms against io_uring's 4.4-6.4 ms, every round agreeing.
    // A loop that distorts times does so in every try; the machine's load comes and goes.
    let url = one_at_a_time_server(Duration::from_millis(1));
    let mut differences = Vec::new();
    for _ in 0..3 {
        match first_difference_between_the_loops(&url) {
            None => return,
            Some(difference) => differences.push(difference),
        }
    }
    panic!("the loops measured differently in three tries:\n{}", differences.join("\n"));
}

/// Six interleaved rounds of the three loops against `url`: the first of their p50, p90 and
/// req/s that differs from the classic epoll loop's, said, or None.
fn first_difference_between_the_loops(url: &str) -> Option<String> {
    let mut figures: [[Vec<f64>; 3]; 3] = Default::default();
    for round in 0..6 {
        let order = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1], [2, 0, 1], [1, 0, 2]][round];
        for which in order {
            let (machine, flags, event_loop) = THREE_LOOPS[which];
            let mut args = vec!["-d", "0.5s"];
            args.extend(flags);
            let report = bench_on_four_in(machine, url, &args, event_loop);
            figures[0][which].push(ms(&report, "latency_ms", "p50"));
            figures[1][which].push(ms(&report, "latency_ms", "p90"));
            figures[2][which].push(report["requests_per_second"].as_f64().unwrap());
        }
    }
    // Six comparisons at once: each at 0.05 / 6 (Bonferroni), so that the six together call
    // a difference where there is none at most 5 % of the time. At 0.05 each, a loaded
    // machine's noise failed one of them (p90, p = 0.041) in about one run of four.
    const COMPARISONS: f64 = 6.0;
    for (name, [epoll, uring, batched_epoll]) in ["p50 ms", "p90 ms", "req/s"].iter().zip(&figures) {
        for (what, batched) in [("io_uring", uring), ("batched epoll", batched_epoll)] {
            let difference = compare_rounds(epoll, batched).unwrap();
            if difference.is_real() && difference.p_value < 0.05 / COMPARISONS {
                return Some(format!(
                    "{name}: {what} {batched:.2?} against epoll {epoll:.2?}: {difference:?}"
                ));
            }
        }
    }
    None
}

/// A keep-alive HTTP server that answers at once and notes when each request head arrived.
fn arrivals_server() -> (String, Arc<Mutex<Vec<Instant>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let noted = arrivals.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let noted = noted.clone();
            std::thread::spawn(move || {
                stream.set_nodelay(true).unwrap();
                while !read_request_head(&mut stream).is_empty() {
                    noted.lock().unwrap().push(Instant::now());
                    if stream.write_all(OK_RESPONSE).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://127.0.0.1:{port}/"), arrivals)
}

#[test]
fn an_open_loop_schedule_is_kept_with_either_loop() {
    let _alone = alone();
    // A loop that does not keep the schedule misses it every time; a machine busy enough to
    // push the sends off (a clean clone's run: half of io_uring's within 0.82 ms of their
    // slot, beside the suite) is busy now and then. Three tries at most, as the loops'
    // comparison has.
    let mut tries = Vec::new();
    for _ in 0..3 {
        match schedule_missed_by_either_loop() {
            None => return,
            Some(missed) => {
                eprintln!("try {}: {missed}", tries.len() + 1);
                tries.push(missed);
            }
        }
    }
    panic!("the open-loop schedule was missed in three tries: {tries:#?}");
}

/// 200 req/s for 3 s, under epoll then io_uring: how the first loop that did not keep the
/// schedule missed it, or None.
fn schedule_missed_by_either_loop() -> Option<String> {
    // 600 requests, due every 5 ms. Open loop holds out for nothing, so io_uring (asked for:
    // the default for open loop is epoll) must send as epoll does.
    let mut epoll_lag_ms = None;
    for (flags, event_loop) in [(&[][..], "epoll"), (&["--io-uring"][..], "io_uring")] {
        let (url, arrivals) = arrivals_server();
        let mut args = vec!["--rate", "200", "-d", "3s"];
        args.extend(flags);
        let report = bench_on_four(&url, &args, event_loop);
        let completed = report["requests_completed"].as_u64().unwrap();
        assert!((594..=606).contains(&completed), "{event_loop}: {completed} requests for 600");
        let mut arrived = arrivals.lock().unwrap().clone();
        arrived.sort();
        assert!(arrived.len().abs_diff(completed as usize) <= 4, "{event_loop}: {} arrived", arrived.len());
        // The spacing: the gaps between arrivals, and each request's lateness against the
        // schedule, the median lateness taken out (the first requests open the connections).
        let mut gaps_ms: Vec<f64> = arrived.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3).collect();
        gaps_ms.sort_by(f64::total_cmp);
        let median_gap = gaps_ms[gaps_ms.len() / 2];
        if (median_gap - 5.0).abs() >= 0.1 {
            return Some(format!("{event_loop}: median gap {median_gap} ms"));
        }
        let mut late_ms: Vec<f64> = arrived
            .iter()
            .enumerate()
            .map(|(i, at)| (*at - arrived[0]).as_secs_f64() * 1e3 - i as f64 * 5.0)
            .collect();
        late_ms.sort_by(f64::total_cmp);
        let median = late_ms[late_ms.len() / 2];
        let mut off_ms: Vec<f64> = late_ms.iter().map(|late| (late - median).abs()).collect();
        off_ms.sort_by(f64::total_cmp);
        // The median: on this 2-core machine a tenth of either loop's requests may be a few ms
        // off when another process takes the core.
        let median_off = off_ms[off_ms.len() / 2];
        if median_off >= 0.25 {
            return Some(format!("{event_loop}: half the requests within {median_off:.3} ms of their slot"));
        }
        // Sent when due: the median time from when due is the median time from the write,
        // give or take the loop's lag behind its schedule. That lag is the machine's (0.57 ms
        // for epoll beside a busy process per core, under 0.1 ms on a quiet machine), so
        // io_uring is held to epoll's of the same run: a loop holding out for completions
        // would add its wait (up to 500 µs) to every send. The machine's lag moves between
        // the two runs by about the spread of this run's sends (median_off) either way.
        let (corrected, uncorrected) =
            (ms(&report, "latency_ms", "p50"), ms(&report, "latency_uncorrected_ms", "p50"));
        let lag_ms = corrected - uncorrected;
        if lag_ms >= 5.0 {
            return Some(format!(
                "{event_loop}: p50 {corrected} ms from due, {uncorrected} ms: a stale schedule"
            ));
        }
        match epoll_lag_ms {
            None => epoll_lag_ms = Some(lag_ms),
            Some(epoll) if lag_ms >= epoll + 0.5 + 2.0 * median_off => {
                return Some(format!(
                    "{event_loop}: p50 {corrected} ms from due, {uncorrected} ms; epoll lagged {epoll:.3} ms"
                ));
            }
            Some(_) => {}
        }
    }
    None
}

#[test]
fn a_held_response_is_timed_when_it_arrives_as_epoll_times_it() {
    let _alone = alone();
    // Python's http.server as shipped (its body ~40 ms after its head: Nagle and the delayed
    // ACK) and thinking 40 ms before one write: 4 connections whose responses come together,
    // so the waits hold out for several; timed by arrival, each total is epoll's.
    for (what, peer_args) in [("stall", &[][..]), ("think", &["--delay-ms", "40", "--disable-nagle"][..])] {
        let peer = python_peer("python_http_server.py", peer_args);
        // Three runs of each, interleaved: one run's p50 may move a few ms with the delayed
        // ACK's timer, whatever the loop.
        let mut p50: [Vec<f64>; 3] = Default::default();
        for round in 0..9 {
            let which = [0, 1, 2, 2, 1, 0, 1, 0, 2][round];
            let (machine, flags, event_loop) = THREE_LOOPS[which];
            let mut args = vec!["-n", "80"];
            args.extend(flags);
            let report = bench_on_four_in(machine, &peer.url("/"), &args, event_loop);
            assert_eq!(report["requests_completed"], 80, "{what} {event_loop}");
            p50[which].push(ms(&report, "latency_ms", "p50"));
        }
        let [epoll, uring, batched_epoll] = common::median_runs(&p50);
        assert!((35.0..60.0).contains(&epoll), "{what}: epoll p50 {epoll} ms");
        // The loops agree as closely as one loop's runs agree with each other: 2 ms on a
        // quiet machine, the widest spread of one loop's three runs on a busy one. The stall
        // ends on the delayed-ACK timer, which fires on a kernel tick (4 ms at this kernel's
        // HZ=250): a run's p50 falls on one tick or the next (43.9 or 47.9 ms), so two loops'
        // medians of three may be a tick apart with no difference between the loops.
        const TIMER_TICK_MS: f64 = 4.0;
        let timer = if what == "stall" { TIMER_TICK_MS + 0.5 } else { 0.0 };
        let tolerance = common::widest_spread(&p50).max(2.0).max(timer);
        for (loop_name, batched) in [("io_uring", uring), ("batched epoll", batched_epoll)] {
            assert!(
                (batched - epoll).abs() <= tolerance,
                "{what}: p50 {batched} ms with {loop_name}, {epoll} ms with epoll (within {tolerance:.2} ms): {p50:?}"
            );
        }
    }
}

#[test]
fn a_stalled_response_is_timed_by_its_arrival_under_io_uring() {
    let _alone = alone();
    // Nagle on in the server: the head comes at once, the body ~40 ms later, when the client's
    // delayed ACK lets it go. Two reads, each timed by the kernel's arrival stamp.
    let peer = python_peer("python_http_server.py", &[]);
    let run = nodelay(&["bench", "--io-uring", "--json", "-c", "2", "-n", "12", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["io_uring"], true, "io_uring refused here: {}", run.stderr());
    assert_eq!(report["requests_completed"], 12);
    let (total, first_byte, gap) = (
        ms(&report, "latency_ms", "p50"),
        ms(&report, "first_byte_ms", "p50"),
        ms(&report, "read_gap_ms", "p50"),
    );
    assert!((30.0..90.0).contains(&total), "p50 total {total} ms");
    assert!(first_byte < 10.0, "p50 first byte {first_byte} ms");
    assert!((30.0..90.0).contains(&gap), "p50 read gap {gap} ms");
}

/// A keep-alive HTTP server whose first connection is answered at once and the others
/// `slow_ms` later, each connection by a thread of its own.
fn one_fast_connection_server(slow_ms: u64) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (number, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                stream.set_nodelay(true).unwrap();
                let mut pending = Vec::new();
                let mut buffer = [0u8; 4096];
                loop {
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if number > 0 {
                            std::thread::sleep(Duration::from_millis(slow_ms));
                        }
                        if stream.write_all(OK_RESPONSE).is_err() {
                            return;
                        }
                    }
                    match stream.read(&mut buffer) {
                        Ok(n @ 1..) => pending.extend_from_slice(&buffer[..n]),
                        _ => return,
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_fast_connection_among_slow_ones_loses_nothing_to_the_waits() {
    let _alone = alone();
    // -t 1 -c 4, one fast connection and three answered 50 ms late: the responses come one at
    // a time, so the wait learns to hold out for one. A probe for two holds the fast response
    // up to 500 µs, and its next request with it: a probe in every eight waits left this
    // connection 0.26 to 0.31 of epoll's rate; probes that gain nothing now come further apart.
    let bench = |flags: &[&str]| {
        // A server of its own for each run: its first connection is the fast one.
        let url = format!("http://127.0.0.1:{}/", one_fast_connection_server(50));
        let mut args = vec!["bench", "--json", "-t", "1", "-c", "4", "-d", "0.5s"];
        args.extend(flags);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        run.json()
    };
    // Rounds interleaved, judged as compare judges two targets (compare_rounds).
    let mut rates = [Vec::new(), Vec::new()];
    for round in 0..6 {
        for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let report = bench(if which == 0 { &["--epoll"] } else { &[] });
            // io_uring by default here: one thread of 4 connections.
            assert_eq!(report["settings"]["event_loop"], ["epoll", "io_uring"][which]);
            rates[which].push(report["requests_per_second"].as_f64().unwrap());
        }
    }
    // Whether a held response is timed at its arrival is judged where holds are common
    // (every_loop_that_batches_its_waits_times_a_response_by_its_arrival): a p90 here did not
    // tell, passing with the arrival stamps switched off and failing on a busy host with them.
    // The probes' fault left the fast connection 0.26 to 0.31 of epoll's rate. On a quiet
    // machine the loops agree; on a busy one, where each run's rate moves 2x with the
    // scheduler, io_uring measured 0.54 of epoll's (interval 0.41 to 0.79, p = 0.03). So the
    // test fails when the whole interval lies below half of epoll's rate.
    let [epoll, uring] = &rates;
    let difference = compare_rounds(epoll, uring).unwrap();
    let (_, high) = difference.interval.unwrap_or((difference.ratio, difference.ratio));
    assert!(
        !(difference.is_real() && high < 0.5),
        "io_uring {uring:?} req/s against epoll {epoll:?}: the probes held the fast one: {difference:?}"
    );
}

#[test]
fn every_request_completes_against_a_fast_server_and_the_text_says_io_uring() {
    let _alone = alone();
    let peer = node_peer("node_http_server.js", &[]);
    let run = nodelay(&["bench", "--io-uring", "--json", "-c", "16", "-n", "3000", &peer.url("/")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["io_uring"], true);
    assert_eq!(report["requests_completed"], 3000);
    let errors: u64 = report["errors"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(errors, 0, "{:#}", report["errors"]);
    assert_eq!(report["connections_opened"], 16);
    let text = nodelay(&["bench", "--io-uring", "-c", "2", "-n", "20", &peer.url("/")]).stdout();
    assert!(
        squeeze(&text).contains("io_uring loop (--io-uring): batched waits, kernel arrival times"),
        "{text}"
    );
    let both = nodelay(&["bench", "--io-uring", "--busy-poll", "-n", "1", &peer.url("/")]);
    assert_eq!(both.code(), 2, "--io-uring waits, --busy-poll never does: {}", both.stderr());
}

#[test]
fn tls_runs_over_the_same_waits_on_kept_and_fresh_connections() {
    let _alone = alone();
    let c = certs();
    let www = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("www-tls-io-uring");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("body.txt"), "n".repeat(3000)).unwrap();
    let nginx = Nginx::start_tls(&format!(
        "server {{ ssl_certificate {}; ssl_certificate_key {}; root {}; }}",
        c.cert,
        c.key,
        www.display()
    ));
    let url = nginx.https_url("/body.txt");
    for (more, opened) in [(None, 4), (Some("--no-keepalive"), 100)] {
        let mut args = vec!["bench", "--io-uring", "--json", "-c", "4", "-n", "100", "--cacert", &c.ca];
        args.extend(more);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{more:?}: {}", run.stderr());
        let report = run.json();
        assert_eq!(report["settings"]["io_uring"], true);
        assert_eq!(report["requests_completed"], 100, "{more:?}: {:#}", report["errors"]);
        assert_eq!(report["connections_opened"], opened, "{more:?}");
        // Plaintext: the 3000-byte body and nginx's head, not TLS records.
        let per_response = report["response_bytes"].as_u64().unwrap() / 100;
        assert!((3100..3500).contains(&per_response), "{more:?}: {per_response} bytes per response");
    }
}

#[test]
fn open_loop_under_io_uring_sends_on_time_and_reaps_without_blocking() {
    let _alone = alone();
    let nginx = Nginx::start("server { location / { return 200 'ok'; } }");
    // Open loop holds out for nothing, and at 10 k req/s the pacer's next slot is always under
    // a millisecond away, so the loop mostly polls without blocking: the rate and the times
    // must be epoll's (nginx here: p50 0.03 ms either way; 0.7 ms with both cores loaded).
    let url = nginx.url("/");
    let run = |flags: &[&str]| {
        let mut args = vec!["bench", "--json", "--rate", "10000", "-c", "20", "-d", "1s"];
        args.extend(flags);
        args.push(&url);
        let run = nodelay(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let report = run.json();
        // Every slot of the schedule is accounted for: answered, due while every connection
        // was busy, or in flight at the end. Exact on any machine; on a busy one nginx, starved,
        // leaves slots unsent (9,921 answered and 59 unsent, with a busy process per core).
        let count = |field: &str| report[field].as_u64().unwrap_or_else(|| panic!("{field}: {report:#}"));
        let slots =
            count("requests_completed") + count("requests_due_not_sent") + count("requests_unfinished");
        assert!(slots.abs_diff(10_000) <= 100, "{flags:?}: {slots} slots of 10000 accounted for: {report:#}");
        // The schedule is never outrun. How many slots were answered is nginx's business on a
        // busy machine (9,006 req/s once in CI, every slot still accounted for), so the rate
        // is held against the other loop's, below, not against a quiet machine's.
        let rate = report["requests_per_second"].as_f64().unwrap();
        assert!(rate <= 10_100.0, "{flags:?}: {rate} req/s");
        (ms(&report, "latency_ms", "p50"), rate)
    };
    // Three runs of each, interleaved: one run's p50 moves with whatever else the machine
    // does (epoll alone measured 0.59 ms beside another test, where 0.03 ms is usual), so the
    // loops' medians are held as close as one loop's own runs agree with each other.
    let mut p50: [Vec<f64>; 2] = Default::default();
    let mut rates: [Vec<f64>; 2] = Default::default();
    for which in [0, 1, 1, 0, 0, 1] {
        let (run_p50, rate) = run(if which == 0 { &["--epoll"] } else { &["--io-uring"] });
        p50[which].push(run_p50);
        rates[which].push(rate);
    }
    let [epoll, uring] = common::median_runs(&p50);
    let tolerance = common::widest_spread(&p50);
    assert!(
        uring < 2.0 * epoll + 0.1 + tolerance,
        "p50 {uring} ms with --io-uring, {epoll} ms with epoll: {p50:?}"
    );
    // A loop that blocked in its wait would answer fewer of the same slots than epoll does.
    let [epoll_rate, uring_rate] = common::median_runs(&rates);
    let rate_tolerance = common::widest_spread(&rates);
    assert!(
        uring_rate >= 0.95 * epoll_rate - rate_tolerance,
        "{uring_rate} req/s with --io-uring, {epoll_rate} req/s with epoll: {rates:?}"
    );
}

/// A server that answers each request with `Connection: close` framing left to the client:
/// it keeps its end open until the client's FIN, and counts the connections open at once.
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let most_open = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicUsize::new(0));
    let most = most_open.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (open, most) = (open.clone(), most.clone());
            most.fetch_max(open.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                read_request_head(&mut stream);
                let _ = stream.write_all(OK_RESPONSE);
                // Until the client's FIN (or reset): what the count is about.
                let mut buffer = [0u8; 64];
                while matches!(stream.read(&mut buffer), Ok(1..)) {}
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, most_open)
}

#[test]
fn a_connection_closed_under_io_uring_is_released_at_once() {
    let _alone = alone();
    // A poll holds a reference to its socket: were it not removed when the worker closes the
    // socket, no FIN would leave until the run ends, and the server would hold all 200 open.
    let (port, most_open) = counting_server();
    let url = format!("http://127.0.0.1:{port}/");
    let run = nodelay(&["bench", "--io-uring", "--json", "--no-keepalive", "-c", "4", "-n", "200", &url]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = run.json();
    assert_eq!(report["settings"]["io_uring"], true);
    assert_eq!(report["requests_completed"], 200);
    assert_eq!(report["connections_opened"], 200);
    // A connection counts until the server's thread for it sees the FIN, so a few closed ones
    // overlap the next ones: the epoll loop, too, peaks at 7 to 9 here, and 17 with the
    // server's threads kept from the cores by a busy process per core. Held polls would
    // keep all 200 open; a quarter of that is far from both.
    let most = most_open.load(Ordering::SeqCst);
    assert!(most < 50, "the server had {most} connections open at once for -c 4");
}

/// nodelay run with io_uring_setup refused (EPERM), as `kernel.io_uring_disabled=2` or a
/// container's seccomp profile would: its exit code, stdout and stderr.
fn refused_io_uring(args: &[&str]) -> (Option<i32>, String, String) {
    let output = common::seccomp::refuse(
        Command::new(env!("CARGO_BIN_EXE_nodelay")).args(args).stdin(Stdio::null()),
        libc::SYS_io_uring_setup,
        None,
    )
    .output()
    .expect("run nodelay");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn a_machine_that_refuses_io_uring_gets_a_warning_and_the_epoll_loop() {
    let _alone = alone();
    let peer = node_peer("node_http_server.js", &[]);
    let refusal = "io_uring refused: Operation not permitted (os error 1)";
    let (code, stdout, stderr) =
        refused_io_uring(&["bench", "--io-uring", "--json", "-c", "2", "-n", "50", &peer.url("/")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "nodelay: warning: --io-uring: not available here (Operation not permitted (os error 1)); waiting with epoll"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["settings"]["io_uring"], false);
    assert_eq!(
        (&report["settings"]["event_loop"], &report["settings"]["event_loop_why"]),
        (&"epoll".into(), &refusal.into())
    );
    assert_eq!(report["requests_completed"], 50);

    // Not asked for, it is no warning: the loop line says which ran and why.
    let (code, stdout, stderr) =
        refused_io_uring(&["bench", "-t", "1", "-c", "8", "-n", "50", &peer.url("/")]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""), "{stdout}");
    // Epoll batches its waits by timer instead, as io_uring would have.
    let line = format!("epoll loop ({refusal}): batched waits, kernel arrival times");
    assert!(squeeze(&stdout).contains(&line), "{stdout}");
    let (_, stdout, _) =
        refused_io_uring(&["bench", "--json", "-t", "1", "-c", "8", "-n", "50", &peer.url("/")]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    validate_against_schema("bench.schema.json", &report);
    assert_eq!(report["settings"]["event_loop_why"], refusal);
    assert_eq!(report["settings"]["batched_waits"], true);
    assert_eq!(report["requests_completed"], 50);
}

#[test]
fn every_loop_that_batches_its_waits_times_a_response_by_its_arrival() {
    let _alone = alone();
    // Four connections answered at once, each by a thread of its own. The classic loop times
    // a response when it has woken and read it; a batched wait reads it after the wait,
    // which may have held it, and takes its time from the kernel's arrival stamp instead.
    // Measured p50 (debug build, 4 connections): classic epoll 0.070 ms, io_uring 0.027 ms
    // with the stamps and 0.075 ms with them switched off. Medians of three rounds.
    let mut p50: [Vec<f64>; 3] = Default::default();
    for round in 0..3 {
        for which in [[0, 1, 2], [2, 1, 0], [1, 2, 0]][round] {
            let (machine, flags, event_loop) = THREE_LOOPS[which];
            let url = format!("http://127.0.0.1:{}/", one_fast_connection_server(0));
            let mut args = vec!["-d", "0.5s"];
            args.extend(flags);
            let report = bench_on_four_in(machine, &url, &args, event_loop);
            p50[which].push(ms(&report, "latency_ms", "p50"));
        }
    }
    let [epoll, uring, batched_epoll] = common::median_runs(&p50);
    for (loop_name, batched) in [("io_uring", uring), ("batched epoll", batched_epoll)] {
        assert!(
            batched < 0.7 * epoll,
            "p50 {batched} ms with {loop_name}, {epoll} ms with classic epoll: not timed by arrival: {p50:?}"
        );
    }
}
