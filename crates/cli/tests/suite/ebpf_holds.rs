//! Nagle holds timed in the kernel (nodelay_ebpf::HoldWatch, the core of `nodelay watch`
//! from the kernel) against real servers: Python's http.server as shipped (head and body in
//! two writes, Nagle on) on a keep-alive connection opened before the programs were
//! attached, its TCP_NODELAY twin, and a static Go server that turns TCP_NODELAY off on each
//! connection. Ground truth is the client's own time per request. The programs kernels
//! before 6.2 get (a helper call where newer kernels cast) time the same holds.

use crate::common;

use crate::common::*;
use nodelay_ebpf::{EbpfError, HoldStats, HoldThresholds, HoldWatch};
use nodelay_watch::kernel::hold_thresholds;
use std::net::TcpStream;
use std::time::Duration;

/// A keep-alive connection to `peer`, with a read timeout.
fn connect(peer: &Peer) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", peer.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream
}

/// Ten GETs on `stream`, the client's own times in ms, sorted.
fn ten_gets_ms(stream: &mut TcpStream) -> Vec<f64> {
    let mut times: Vec<f64> = (0..10).map(|_| keep_alive_get(stream).as_secs_f64() * 1e3).collect();
    times.sort_by(f64::total_cmp);
    times
}

/// The programs' figures for the server's side of its connections.
fn server_side(watch: &HoldWatch, peer: &Peer) -> HoldStats {
    followed(watch, peer).unwrap_or_else(|| panic!("no figures for PID {}: {:?}", peer.pid(), watch.read()))
}

/// The programs' figures for `peer`'s server side, if they followed it at all: a socket with
/// TCP_NODELAY never holds, so they leave it at its first read.
fn followed(watch: &HoldWatch, peer: &Peer) -> Option<HoldStats> {
    let all = watch.read().unwrap();
    let mine: Vec<_> = all.iter().filter(|s| s.pid == peer.pid() && s.local.port() == peer.port).collect();
    assert!(mine.len() <= 1, "{all:?}");
    mine.first().map(|stats| (*stats).clone())
}

/// Each hold costs the client about what it lost: within 25 % of its median.
fn assert_hold_is_the_clients_wait(held: &HoldStats, client_ms: &[f64]) {
    let median = client_ms[client_ms.len() / 2];
    assert!(median > 30.0, "the client's median: {median:.2} ms");
    let total = held.total();
    let hold_ms = total.held.as_secs_f64() / total.holds as f64 * 1e3;
    assert!((hold_ms / median - 1.0).abs() < 0.25, "hold {hold_ms:.2} ms, client {median:.2} ms: {held:?}");
}

#[test]
fn holds_are_timed_on_a_connection_opened_before_the_programs_and_not_on_the_twin() {
    let watch = timed_on_a_pre_opened_connection_and_not_on_the_twin(HoldWatch::start);
    // This kernel (6.2 or later) casts a socket to a tcp_sock for free: the programs use that.
    assert!(watch.casts_in_kernel());
}

#[test]
fn the_programs_of_kernels_before_6_2_time_the_same_holds() {
    let watch = timed_on_a_pre_opened_connection_and_not_on_the_twin(HoldWatch::start_with_helper_casts);
    assert!(!watch.casts_in_kernel());
}

/// Python's server as shipped and its TCP_NODELAY twin, each on a keep-alive connection opened
/// before `start` attaches the programs: the Nagle server's holds are timed and classed, the
/// twin's never followed. The programs, still attached.
fn timed_on_a_pre_opened_connection_and_not_on_the_twin(
    start: fn(HoldThresholds) -> Result<HoldWatch, EbpfError>,
) -> HoldWatch {
    let (nagle, twin) = (
        python_peer("python_http_server.py", &[]),
        python_peer("python_http_server.py", &["--disable-nagle"]),
    );
    let (mut to_nagle, mut to_twin) = (connect(&nagle), connect(&twin));
    // Opened and used before the programs start: the case a capture gets backwards.
    keep_alive_get(&mut to_nagle);
    keep_alive_get(&mut to_twin);

    let watch = start(hold_thresholds()).unwrap();
    let client_ms = ten_gets_ms(&mut to_nagle);
    ten_gets_ms(&mut to_twin);

    let held = server_side(&watch, &nagle);
    // Each released by the client's delayed ACK, and classed so in the kernel.
    let delayed = held.delayed_ack;
    assert!(delayed.holds >= 9, "{held:?}");
    assert_eq!(held.round_trip.holds, 0, "{held:?}");
    assert_eq!(held.exchanges, 10, "{held:?}");
    let ack_delay_ms =
        (delayed.held.as_secs_f64() - delayed.round_trips.as_secs_f64()) / delayed.holds as f64 * 1e3;
    // Linux's delayed-ACK timer: 40 ms (its lowest), timed from the hold's start.
    assert!((30.0..60.0).contains(&ack_delay_ms), "{ack_delay_ms:.2} ms per hold: {held:?}");
    // The addresses the kernel read are the connection's.
    assert_eq!(held.remote, to_nagle.local_addr().unwrap(), "{held:?}");
    assert_hold_is_the_clients_wait(&held, &client_ms);

    assert_eq!(followed(&watch, &twin), None, "the TCP_NODELAY twin");
    watch
}

#[test]
fn a_static_go_server_turning_nodelay_off_is_seen_holding() {
    // Its listener calls SetNoDelay(false) on each connection; an 8000-byte body leaves
    // net/http's 4 KB buffer in two writes, the second held.
    let server = start_peer(&compiled_static("go_http_server.go"), &["-nagle", "-body-bytes", "8000"]);
    let watch = HoldWatch::start(hold_thresholds()).unwrap();
    let client_ms = ten_gets_ms(&mut connect(&server));
    let held = server_side(&watch, &server);
    // The first exchange of a new connection is ACKed at once (quick-ACK mode).
    assert!(held.delayed_ack.holds >= 8, "{held:?}");
    assert_hold_is_the_clients_wait(&held, &client_ms);
}

#[test]
fn a_hold_across_a_10ms_path_is_timed_at_the_round_trip_it_costs() {
    // Latencies across a user-space link on 2 cores: one path at a time.
    let _alone = alone();
    let rtt_ms = 10.0;
    let link = common::wan::Link::up(&format!("{rtt_ms}ms"), &[]);
    let nagle = link.python_server("python_http_server.py", &["--body-bytes", "2000"]);
    let twin = link.python_server("python_http_server.py", &["--body-bytes", "2000", "--disable-nagle"]);
    let watch = HoldWatch::start(hold_thresholds()).unwrap();
    // The independent client (Python's http.client in the client's namespace). The ground
    // truth is the test's precondition: beside the suite the twin once took 17.34 ms a call
    // on this 10 ms path (the link's forwarders waiting for a core), 5.6 ms from the Nagle
    // server, while the kernel timed all 16 holds at 10.3 ms. Three tries at most.
    let (nagle_ms, _) = link.slower_by(nagle.port, twin.port, 15, 7.0);
    let held = server_side(&watch, &nagle);
    eprintln!("kernel: {held:?}");
    // Released by ACKs the client sent at once: round-trip holds, classed so in the kernel.
    let round_trip = held.round_trip;
    // Most of them: the link's forwarders share the 2 cores with the suite, so a round trip
    // now and then runs 3 ms past the socket's min_rtt, past the class's slack (CI: 11
    // round-trip holds and 5 of 13 ms unclassed, of 16 exchanges).
    assert!(round_trip.holds >= 8 && round_trip.holds + held.unclassed.holds >= 12, "{held:?}");
    // (A client's ACK now and then delayed by its timer is not the rule.)
    assert!(held.delayed_ack.holds <= 2, "{held:?}");
    // The hold is the round trip the client lost: within 30 % of the path's round trip,
    // which the ground truth above shows lost. Not of the two medians' difference: 15 calls
    // each beside the suite gave 7.27 ms once (CI), while the kernel held 10.65 ms.
    let hold_ms = round_trip.held.as_secs_f64() / round_trip.holds as f64 * 1e3;
    assert!((hold_ms / rtt_ms - 1.0).abs() < 0.3, "hold {hold_ms:.2} ms on a {rtt_ms} ms path: {held:?}");
    assert!(hold_ms < nagle_ms, "hold {hold_ms:.2} ms, the client's median {nagle_ms:.2} ms: {held:?}");
    assert_eq!(followed(&watch, &twin), None, "the TCP_NODELAY twin");
}
