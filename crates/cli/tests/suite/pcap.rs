//! `nodelay pcap`: committed fixtures for every file format and link type, bad files, and
//! captures taken by tcpdump of real peers, whose verdicts must match the live doctor's.

use crate::common;

use crate::common::capture::Capture;
use crate::common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn fixture(name: &str) -> String {
    repo_root().join("tests/fixtures/pcap").join(name).to_string_lossy().into_owned()
}

fn pcap_json(file: &str) -> (Run, serde_json::Value) {
    let run = nodelay(&["pcap", "--json", file]);
    let report = run.json();
    validate_against_schema("pcap.schema.json", &report);
    (run, report)
}

/// Runs `nodelay args...` with `input` written to its stdin through a pipe.
fn nodelay_stdin(args: &[&str], input: &[u8]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nodelay");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A writer thread: the pipe holds only so much while nodelay's stdout fills too.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("wait for nodelay");
    writer.join().unwrap().expect("nodelay read all of its stdin");
    Run { output, elapsed: started.elapsed() }
}

#[test]
fn every_format_and_link_type_finds_the_three_server_stalls() {
    for file in [
        "ethernet_usec_le.pcap",
        "ethernet_nsec_be.pcap",
        "ethernet_vlan.pcap",
        "linux_sll.pcap",
        "linux_sll2.pcap",
        "bsd_null.pcap",
        "raw_ipv6.pcap",
        "two_interfaces.pcapng",
    ] {
        let (run, report) = pcap_json(&fixture(file));
        assert_eq!(run.code(), 3, "{file}: {}", run.stderr());
        assert_eq!(finding_ids(&report), vec!["server-nagle-delayed-ack"], "{file}");
        assert_eq!(report["stalls"], 3, "{file}");
        let flow = &report["top_flows"][0];
        assert_eq!(flow["held_by"], "server", "{file}");
        assert_eq!(flow["ack_delayed_by"], "client", "{file}");
        assert_eq!(flow["roles_from_handshake"], true, "{file}");
        assert_eq!(flow["exchanges"], 3, "{file}");
        let example = &flow["examples"][0];
        assert_eq!(example["segment_bytes"], 120, "{file}");
        assert!((example["ack_delay_ms"].as_f64().unwrap() - 39.95).abs() < 0.01, "{file}: {example}");
        assert!((example["release_after_ack_us"].as_f64().unwrap() - 20.0).abs() < 0.5, "{file}: {example}");
        assert!(flow["suggested_stack"].as_str().unwrap().contains("Linux"), "{file}");
    }
}

#[test]
fn pcapng_keeps_each_interface_apart() {
    let (_, report) = pcap_json(&fixture("two_interfaces.pcapng"));
    assert_eq!(report["flows"], 2, "a healthy flow on interface 0, the stalling one on interface 1");
    assert_eq!(report["flows_with_stalls"], 1);
    // Interface 1 stamps in nanoseconds: the 20 µs release survives exactly.
    assert_eq!(report["top_flows"][0]["examples"][0]["release_after_ack_us"], 20.0);
}

#[test]
fn client_held_requests_and_retransmissions() {
    let (run, report) = pcap_json(&fixture("client_split.pcap"));
    assert_eq!(run.code(), 3);
    assert_eq!(finding_ids(&report), vec!["client-nagle-delayed-ack"]);
    assert_eq!(report["top_flows"][0]["held_by"], "client");
    let (run, report) = pcap_json(&fixture("retransmission.pcap"));
    assert_eq!(run.code(), 0, "a retransmission after a timeout is not a stall");
    assert_eq!(finding_ids(&report), vec!["healthy"]);
}

#[test]
fn text_output_lists_flows_and_units() {
    let run = nodelay(&["pcap", &fixture("ethernet_usec_le.pcap")]);
    assert_eq!(run.code(), 3);
    // Prose wraps at the width: compare with its words on one line.
    let text = run.stdout().split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "stalls: 3 in 1 flow, 119.91 ms lost",
        "10.0.0.1:40000 -> 10.0.0.2:8080",
        "exchange 1 at",
        "ACK #",
        "after 39.95 ms",
        "server-nagle-delayed-ack (proven, high confidence)",
        "(seen in the capture)",
        "verdict: server-nagle-delayed-ack",
        "stream 0: 10.0.0.1:40000 -> 10.0.0.2:8080",
        "Wireshark: tcp.stream eq 0 && ip.addr==10.0.0.1 && ip.addr==10.0.0.2 && tcp.port==40000 && tcp.port==8080",
        "ACKs delayed by the client: the Linux/FreeBSD delayed-ACK timer (40 ms)",
    ] {
        assert!(text.contains(needle), "missing {needle:?}:\n{text}");
    }
}

/// `nodelay pcap FILE` text with stdout a pipe, COLUMNS set or not.
fn pcap_text(file: &str, columns: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nodelay"));
    command.args(["pcap", file]).stdin(Stdio::null()).env_remove("COLUMNS");
    if let Some(columns) = columns {
        command.env("COLUMNS", columns);
    }
    let run = Run { output: command.output().expect("run nodelay"), elapsed: Default::default() };
    assert!([0, 3].contains(&run.code()), "{file}: {}", run.stderr());
    run.stdout()
}

/// The units of the numbers in `lines`, a number being a word that parses as one and is
/// followed by a word (counts and packet numbers have none and are left out).
fn duration_units<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut units = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if pair[0].parse::<f64>().is_ok() && ["ns", "µs", "ms", "s"].contains(&pair[1]) {
                units.push(pair[1].to_string());
            }
        }
    }
    units
}

#[test]
fn text_fits_80_columns_when_piped_and_each_table_has_one_unit() {
    for file in [
        "several_flows.pcap",
        "raw_ipv6.pcap",
        "client_split.pcap",
        "two_interfaces.pcapng",
        "retransmission.pcap",
        "truncated.pcap",
        "ethernet_usec_le.pcap.gz",
    ] {
        let text = pcap_text(&fixture(file), None);
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{file}: {} columns: {line:?}\n{text}", line.chars().count());
        }
        // The flow table: from its header to the blank line after it.
        let table = text.lines().skip_while(|l| !l.starts_with("stream  ")).take_while(|l| !l.is_empty());
        let units = duration_units(table);
        if file != "retransmission.pcap" {
            assert!(!units.is_empty(), "{file}: no durations in the flow table:\n{text}");
        }
        assert!(units.iter().all(|u| u == "ms"), "{file}: flow table units {units:?}:\n{text}");
        // Each finding's evidence table.
        let mut lines = text.lines();
        while lines.any(|l| l == "  evidence:") {
            let evidence: Vec<&str> = lines.clone().take_while(|l| l.starts_with("    ")).collect();
            let units = duration_units(evidence.iter().copied());
            assert!(units.iter().all(|u| u == "ms"), "{file}: evidence units {units:?}:\n{text}");
        }
    }
    // The long IPv6 flow keeps its addresses whole in its details, the ACK delay its unit.
    let text = pcap_text(&fixture("several_flows.pcap"), None);
    assert!(text.contains("\nstream 3: [fd12:3456:789a:bcde:f012:3456:789a:bcd1]:40002 ->\n"), "{text}");
    assert!(text.contains("  && ipv6.addr==fd12:3456:789a:bcde:f012:3456:789a:bcd2"), "{text}");
}

#[test]
fn text_follows_columns_when_piped() {
    let file = fixture("several_flows.pcap");
    for (columns, limit) in [("60", 60), ("132", 132), ("20", 50), ("0", 80), ("wide", 80)] {
        let text = pcap_text(&file, Some(columns));
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= limit, "COLUMNS={columns}: a line of {widest} columns:\n{text}");
        assert!(text.contains("verdict: "), "COLUMNS={columns}");
    }
    // 132 columns leave room for whole flows in the table.
    let text = pcap_text(&file, Some("132"));
    assert!(text.contains("     1  10.0.0.1:40000 -> 10.0.0.2:8080  "), "{text}");
}

#[test]
fn flow_filter_selects_flows() {
    let (_, report) = pcap_json(&fixture("two_interfaces.pcapng"));
    assert_eq!(report["flows"], 2);
    let run = nodelay(&["pcap", "--json", "--flow", "10.0.0.4:9090", &fixture("two_interfaces.pcapng")]);
    assert_eq!(run.code(), 0);
    assert_eq!(run.json()["flows"], 1);
    let run = nodelay(&[
        "pcap",
        "--json",
        "--flow",
        "10.0.0.1:40000-10.0.0.2:8080",
        &fixture("two_interfaces.pcapng"),
    ]);
    assert_eq!(run.code(), 3);
    assert_eq!(run.json()["stalls"], 3);
    let run = nodelay(&["pcap", "--flow", "10.9.9.9:1", &fixture("two_interfaces.pcapng")]);
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("no TCP flow matches --flow"), "{}", run.stderr());
    assert_eq!(nodelay(&["pcap", "--flow", "nonsense", &fixture("empty.pcap")]).code(), 2);
}

#[test]
fn flow_filter_takes_a_bare_port_for_either_side() {
    let file = fixture("two_interfaces.pcapng");
    for (port, code, flows) in [("8080", 3, 1), ("40000", 3, 1), ("9090", 0, 1), ("40001", 0, 1)] {
        let run = nodelay(&["pcap", "--json", "--flow", port, &file]);
        assert_eq!(run.code(), code, "--flow {port}: {}", run.stderr());
        assert_eq!(run.json()["flows"], flows, "--flow {port}");
    }
    let run = nodelay(&["pcap", "--flow", "1", &file]);
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("no TCP flow matches --flow"), "{}", run.stderr());
    for (bad, why) in
        [("0", "port 0 is out of range (1-65535)"), ("65536", "port 65536 is out of range (1-65535)")]
    {
        let run = nodelay(&["pcap", "--flow", bad, &file]);
        assert_eq!(run.code(), 2, "--flow {bad}");
        // clap's own hint follows on later lines; the error is the first.
        let first = run.stderr().lines().next().unwrap_or_default().to_string();
        assert!(first.contains(why), "--flow {bad}: {}", run.stderr());
    }
}

/// tshark's `tcp.stream` of every frame of `file`, by frame number.
fn tshark_streams(file: &str) -> std::collections::BTreeMap<u64, u64> {
    let fields = tshark(&["-r", file, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream"]);
    fields
        .iter()
        .map(|line| {
            let (frame, stream) = line.split_once('\t').unwrap_or_else(|| panic!("tshark printed {line:?}"));
            (frame.parse().unwrap(), stream.parse().unwrap())
        })
        .collect()
}

/// tshark's output lines.
fn tshark(args: &[&str]) -> Vec<String> {
    let output = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark (scripts/setup.sh installs it) to check the tcp.stream numbers");
    assert!(output.status.success(), "tshark {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn flows_carry_wiresharks_tcp_stream_and_a_filter_that_shows_them() {
    let file = fixture("several_flows.pcap");
    let streams = tshark_streams(&file);
    let (_, report) = pcap_json(&file);
    let flows = report["top_flows"].as_array().unwrap();
    // Streams 0 (bare ACKs) and 2 (a handshake) have no stall; 5 reuses stream 1's 4-tuple.
    let mut numbers: Vec<u64> = flows.iter().map(|f| f["tcp_stream"].as_u64().unwrap()).collect();
    numbers.sort();
    assert_eq!(numbers, [1, 3, 4, 5]);
    for flow in flows {
        let stream = flow["tcp_stream"].as_u64().unwrap();
        for example in flow["examples"].as_array().unwrap() {
            for packet in ["held_after_packet", "ack_packet", "release_packet"] {
                let frame = example[packet].as_u64().unwrap();
                assert_eq!(streams[&frame], stream, "tshark's tcp.stream of frame {frame} in {flow:#}");
            }
        }
        // The display filter shows exactly that stream's frames.
        let filter = flow["wireshark_filter"].as_str().unwrap();
        let shown: Vec<u64> = tshark(&["-r", &file, "-Y", filter, "-T", "fields", "-e", "frame.number"])
            .iter()
            .map(|f| f.parse().unwrap())
            .collect();
        let expected: Vec<u64> = streams.iter().filter(|(_, s)| **s == stream).map(|(f, _)| *f).collect();
        assert_eq!(shown, expected, "{filter}");
    }
    let loopback = flows.iter().find(|f| f["tcp_stream"] == 4).unwrap();
    assert_eq!(
        loopback["wireshark_filter"],
        "tcp.stream eq 4 && ip.addr==127.0.0.1 && tcp.port==46043 && tcp.port==51234"
    );
    // --flow leaves out flows, not numbers.
    let run = nodelay(&["pcap", "--json", "--flow", "8080", &file]);
    let numbers: Vec<u64> = run.json()["top_flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["tcp_stream"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 5]);
}

#[test]
fn bad_files_say_what_and_where() {
    let check = |file: &str, code: i32, needle: &str| {
        let run = nodelay(&["pcap", &fixture(file)]);
        assert_eq!(run.code(), code, "{file}: {}", run.stderr());
        assert!(run.stderr().contains(needle), "{file}: {}", run.stderr());
        assert!(!run.stderr().contains("panicked"), "{file}: {}", run.stderr());
    };
    check("empty.pcap", 1, "it is empty (0 bytes)");
    check("not_a_capture.pcap", 1, "not a pcap or pcapng file (it starts with 47 45 54 20)");
    check("udp_only.pcap", 1, "no TCP packets among its 1 packets");
    check("unknown_link_type.pcap", 1, "link type 147 cannot be decoded");
    check(
        "caplen_over_snaplen.pcap",
        1,
        "packet #1 at byte offset 24: captured length 58 exceeds the snap length 40",
    );
    // Truncated: what was read is reported, and the cut is located.
    check("truncated.pcap", 3, "packet record #14 at byte offset 1364 is cut short");
    let (_, report) = pcap_json(&fixture("truncated.pcap"));
    assert_eq!(report["packets"], 13);
    assert_eq!(report["stalls"], 2);
    assert!(report["error"].as_str().unwrap().contains("truncated"));
    // Not a file to read: a bad argument (2), as any file named on the command line.
    fails_with(&["pcap", "/nonexistent/capture.pcap"], 2, &["cannot open"]);
    fails_with(&["pcap", "/tmp"], 2, &["nodelay: cannot open /tmp: it is a directory, not a capture file"]);
}

/// A capture whose third packet is timed a second before the second: read, and said.
#[test]
fn a_clock_that_steps_back_is_a_warning() {
    let mut bytes = std::fs::read(fixture("ethernet_usec_le.pcap")).unwrap();
    // Little-endian µs pcap: a 24-byte header, then records of 16 bytes (seconds,
    // microseconds, captured and original length) and their data.
    let field = |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let (mut at, mut seconds) = (24, Vec::new());
    for _ in 0..3 {
        seconds.push(at);
        at += 16 + field(&bytes, at + 8) as usize;
    }
    let earlier = field(&bytes, seconds[1]) - 1;
    bytes[seconds[2]..seconds[2] + 4].copy_from_slice(&earlier.to_le_bytes());
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("steps-back.pcap");
    std::fs::write(&path, &bytes).unwrap();
    let (_, report) = pcap_json(path.to_str().unwrap());
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with("1 packet is timed earlier than the packet before it (by up to 999.97 ms)")),
        "{warnings:#?}"
    );
}

#[test]
fn a_capture_on_stdin_reads_like_the_file() {
    let bytes = std::fs::read(fixture("ethernet_usec_le.pcap")).unwrap();
    let run = nodelay_stdin(&["pcap", "--json", "-"], &bytes);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    let report = run.json();
    validate_against_schema("pcap.schema.json", &report);
    assert_eq!(report["file"], "stdin");
    assert_eq!((report["packets"].as_u64(), report["stalls"].as_u64()), (Some(21), Some(3)));
    // Errors name it stdin, and show its first bytes though it cannot be read again.
    let not_a_capture = std::fs::read(fixture("not_a_capture.pcap")).unwrap();
    let run = nodelay_stdin(&["pcap", "-"], &not_a_capture);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr().contains("nodelay: stdin: not a pcap or pcapng file (it starts with 47 45 54 20)"),
        "{}",
        run.stderr()
    );
    let run = nodelay_stdin(&["pcap", "-"], &bytes[..1400]);
    assert_eq!(run.code(), 3);
    assert!(run.stderr().contains("stdin: truncated: packet record #14"), "{}", run.stderr());
    let run = nodelay_stdin(&["pcap", "-"], b"");
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("nodelay: stdin: it is empty (0 bytes)"), "{}", run.stderr());
}

#[test]
fn tcpdump_writes_into_nodelay_through_a_pipe() {
    // The documented use: tcpdump -w - ... | nodelay pcap -
    let mut tcpdump = Command::new("tcpdump")
        .args(["-r", &fixture("linux_sll2.pcap"), "-w", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump (scripts/setup.sh installs it)");
    let output = Command::new(env!("CARGO_BIN_EXE_nodelay"))
        .args(["pcap", "--json", "-"])
        .stdin(tcpdump.stdout.take().unwrap())
        .output()
        .unwrap();
    tcpdump.wait().unwrap();
    let run = Run { output, elapsed: Default::default() };
    assert_eq!(run.code(), 3, "{}", run.stderr());
    assert_eq!(run.json()["stalls"], 3);
}

#[test]
fn gzip_captures_are_read_whatever_their_name() {
    let gz = fixture("ethernet_usec_le.pcap.gz");
    let (run, report) = pcap_json(&gz);
    assert_eq!(run.code(), 3, "{}", run.stderr());
    assert_eq!((report["packets"].as_u64(), report["stalls"].as_u64()), (Some(21), Some(3)));
    assert_eq!(report["bytes"], pcap_json(&fixture("ethernet_usec_le.pcap")).1["bytes"]);
    // Found by its magic number: the same bytes named .pcap, and on stdin.
    let bytes = std::fs::read(&gz).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gzip");
    std::fs::create_dir_all(&dir).unwrap();
    let renamed = dir.join("capture.pcap");
    std::fs::write(&renamed, &bytes).unwrap();
    assert_eq!(pcap_json(renamed.to_str().unwrap()).1["stalls"], 3);
    let run = nodelay_stdin(&["pcap", "--json", "-"], &bytes);
    assert_eq!(run.json()["stalls"], 3, "{}", run.stderr());
    // Cut short: the packets before the cut are reported, and the cut is named.
    let cut = dir.join("cut.pcap.gz");
    std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let run = nodelay(&["pcap", "--json", cut.to_str().unwrap()]);
    assert!([0, 3].contains(&run.code()), "{}", run.stderr());
    assert!(run.stderr().contains("the gzip stream is cut short; reporting the"), "{}", run.stderr());
    assert_eq!(run.json()["error"], "the gzip stream is cut short");
    // Decompressed content that is no capture says so, and what it starts with.
    let run = nodelay(&["pcap", &fixture("not_a_capture.pcap.gz")]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr().contains("(decompressed): not a pcap or pcapng file (it starts with 47 45 54 20)"),
        "{}",
        run.stderr()
    );
}

#[test]
fn inputs_the_fuzzer_found_read_without_panic() {
    // Timestamps near the end of time once overflowed the ACK-clock window arithmetic; a
    // pcapng block shorter than its frame underflows inside pcap-parser 0.17.
    for file in ["fuzz_rtt_overflow.pcapng", "fuzz_short_block.pcapng"] {
        let run = nodelay(&["pcap", &fixture(file)]);
        assert!([0, 1, 3].contains(&run.code()), "{file}: {}", run.stderr());
        assert!(!run.stderr().contains("panicked"), "{file}: {}", run.stderr());
    }
    let short = nodelay(&["pcap", &fixture("fuzz_short_block.pcapng")]);
    assert!(short.stderr().contains("shorter than a block's 12-byte frame"), "{}", short.stderr());
}

#[test]
fn every_prefix_of_a_fixture_reads_without_panic() {
    // A cheap, deterministic cousin of the fuzz target (fuzz/): cut a capture at every byte.
    let bytes = std::fs::read(fixture("two_interfaces.pcapng")).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("prefixes");
    std::fs::create_dir_all(&dir).unwrap();
    for cut in (0..bytes.len()).step_by(97) {
        let path = dir.join(format!("cut{cut}.pcapng"));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let run = nodelay(&["pcap", path.to_str().unwrap()]);
        assert!([0, 1, 3].contains(&run.code()), "cut {cut}: {}", run.stderr());
        assert!(!run.stderr().contains("panicked"), "cut {cut}: {}", run.stderr());
    }
}

// ---- captures of real peers ------------------------------------------------------------

fn capture_bench(name: &str, peer: &Peer, interface: &str, nano: bool, bench_args: &[&str]) -> PathBuf {
    let capture = Capture::start(name, peer.port, interface, nano);
    let run = nodelay(&[&["bench", "-c", "1", "-n", "10", "-q"], bench_args].concat());
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // Ten requests and ten responses and the SYN and SYN-ACK: at least 22 packets, after the
    // datagrams that showed tcpdump capturing. Not more: the ACKs a busy machine sends on
    // their own or with data vary, and so may the close (waits for 26, then 25, gave up once
    // each in CI); the tests hold the run's packets, not its close.
    capture.finish(22)
}

fn doctor_verdict(args: &[&str]) -> Vec<String> {
    let run = nodelay(&[&["doctor", "--json"], args].concat());
    finding_ids(&run.json())
}

fn pcap_file_verdict(path: &Path) -> serde_json::Value {
    let (_, report) = pcap_json(path.to_str().unwrap());
    std::fs::remove_file(path).ok();
    report
}

#[test]
fn tcpdump_of_a_stalling_server_matches_the_doctor() {
    let peer = python_peer("python_http_server.py", &[]);
    let path = capture_bench("stall", &peer, "lo", false, &[&peer.url("/")]);
    let report = pcap_file_verdict(&path);
    assert_eq!(finding_ids(&report), vec!["server-nagle-delayed-ack"]);
    // Ten keep-alive requests: the first escapes (quick ACKs), the other nine stall.
    assert_eq!(report["stalls"], 9, "{report:#}");
    assert_eq!(report["top_flows"][0]["examples"][0]["exchange"], 2);
    assert_eq!(doctor_verdict(&[&peer.url("/")]), finding_ids(&report));
}

#[test]
fn tcpdump_of_a_server_stalling_through_tls_is_found() {
    // TLS changes nothing at the TCP level: the pause between two records is a pause
    // between two segments, and the capture shows it like the plain case.
    let c = common::tls::certs();
    let peer = python_peer("python_https_server.py", &["--cert", &c.cert, "--key", &c.key]);
    let url = format!("https://127.0.0.1:{}/", peer.port);
    let path = capture_bench("tls-stall", &peer, "lo", false, &["--cacert", &c.ca, &url]);
    let report = pcap_file_verdict(&path);
    assert_eq!(finding_ids(&report), vec!["server-nagle-delayed-ack"], "{report:#}");
    assert!(report["stalls"].as_u64().unwrap() >= 8, "{report:#}");
    assert_eq!(report["top_flows"][0]["held_by"], "server", "{report:#}");
}

#[test]
fn tcpdump_of_the_fixed_server_is_healthy_like_the_doctor() {
    let peer = python_peer("python_http_server.py", &["--disable-nagle"]);
    // Nanosecond timestamps. Not `-i any` (Linux cooked v2 frames, which the fixtures cover):
    // on this kernel it lost loopback TCP packets mid-run while later UDP ones got through.
    let path = capture_bench("fixed", &peer, "lo", true, &[&peer.url("/")]);
    let report = pcap_file_verdict(&path);
    assert_eq!(finding_ids(&report), vec!["healthy"]);
    // Ten requests and responses plus the handshake, on the run's one connection: bench
    // opens no probe connection before the run, so the capture holds exactly one flow.
    assert!(report["tcp_packets"].as_u64().unwrap() >= 20, "{report:#}");
    assert_eq!(report["flows"], 1, "{report:#}");
    assert_eq!(doctor_verdict(&[&peer.url("/")]), finding_ids(&report));
}

#[test]
fn tcpdump_of_a_split_writing_client_matches_the_doctor() {
    let peer = start_peer(&compiled("go_lenprefix_server.go"), &[]);
    let url = format!("tcp://127.0.0.1:{}", peer.port);
    let raw = ["--send", r"\x00\x00\x00\x05hello", "--frame", "len32be", "--write-split", "4,rest"];
    let path = capture_bench("split", &peer, "lo", false, &[&raw[..], &[url.as_str()]].concat());
    let report = pcap_file_verdict(&path);
    assert_eq!(finding_ids(&report), vec!["client-nagle-delayed-ack"], "{report:#}");
    assert_eq!(report["top_flows"][0]["held_by"], "client");
    assert_eq!(doctor_verdict(&[&raw[..], &[url.as_str()]].concat()), finding_ids(&report));
}
