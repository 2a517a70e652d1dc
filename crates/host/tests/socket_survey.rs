//! The socket survey against real sockets on loopback: TCP_NODELAY read on and off, a Nagle
//! hold and the peer's pending delayed ACK caught while they last, filters by port and by
//! PID, and a survey run as `nobody`, who may read neither root's processes nor capture.
#![cfg(target_os = "linux")]

use nodelay_host::SocketState;
use nodelay_host::socket_survey::{
    FULL_SURVEY_EVERY, Nodelay, Survey, SurveyFilter, SurveyedSocket, Surveyor, UnknownWhy, capture_allowed,
    survey,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;

/// The survey's record of the socket from `local` to `remote`.
fn find(survey: &Survey, local: SocketAddr, remote: SocketAddr) -> &SurveyedSocket {
    survey
        .sockets
        .iter()
        .find(|s| s.local == local && s.remote == Some(remote))
        .unwrap_or_else(|| panic!("{local} -> {remote} in {:#?}", survey.sockets))
}

/// A connected pair on a fresh listener: (listener, client, accepted).
fn pair() -> (TcpListener, TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let accepted = listener.accept().unwrap().0;
    (listener, client, accepted)
}

fn ends(stream: &TcpStream) -> (SocketAddr, SocketAddr) {
    (stream.local_addr().unwrap(), stream.peer_addr().unwrap())
}

#[test]
fn tcp_nodelay_is_read_off_and_on_and_the_filter_keeps_only_its_port() {
    let (listener, off, accepted) = pair();
    let on = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    on.set_nodelay(true).unwrap();
    let _accepted_on = listener.accept().unwrap();
    let (_other_listener, other, _) = pair();
    let port = listener.local_addr().unwrap().port();

    let found = survey(&SurveyFilter::ports([port])).unwrap();
    let (local, remote) = ends(&off);
    let record = find(&found, local, remote);
    assert_eq!(record.nodelay, Nodelay::Off);
    assert_eq!(record.corked, Some(false));
    assert_eq!(record.state, SocketState::Established);
    let owner = record.owner.as_ref().expect("our own socket's owner");
    assert_eq!((owner.pid, owner.fd), (std::process::id(), std::os::fd::AsRawFd::as_raw_fd(&off)));
    assert!(record.tcp.expect("TCP_INFO").snd_mss_bytes > 500);
    let (local, remote) = ends(&on);
    assert_eq!(find(&found, local, remote).nodelay, Nodelay::On);
    let (local, remote) = ends(&accepted);
    assert_eq!(find(&found, local, remote).nodelay, Nodelay::Off, "the server's end of the first");
    let listening: Vec<_> = found.sockets.iter().filter(|s| s.state == SocketState::Listen).collect();
    assert_eq!(listening.len(), 1, "{listening:#?}");
    assert!(listening[0].accept_queue.is_some() && listening[0].remote.is_none());
    assert_eq!(found.sockets.len(), 5, "the listener and both ends of two connections");
    let other_port = other.peer_addr().unwrap().port();
    assert!(found.sockets.iter().all(|s| s.local.port() != other_port), "another port's sockets");
    let ours = &found.by_process()[0];
    assert_eq!((ours.pid, ours.sockets, ours.nodelay_off), (Some(std::process::id()), 5, 4));
    assert_eq!(ours.listening_ports, [port]);

    // A port only bound, never listened on nor connected: an honest empty survey.
    let unused = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    unused.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    let unused_port = unused.local_addr().unwrap().as_socket().unwrap().port();
    let empty = survey(&SurveyFilter::ports([unused_port])).unwrap();
    assert!(empty.sockets.is_empty() && empty.by_process().is_empty(), "{:#?}", empty.sockets);
}

/// A surveyor reads a socket that appears at once, forgets one that closed, and keeps what it
/// read of the others until its next full survey: a TCP_NODELAY set meanwhile shows then.
#[test]
fn a_surveyor_reads_new_sockets_and_reads_old_ones_again_at_each_full_survey() {
    let (listener, first, _first_accepted) = pair();
    let port = listener.local_addr().unwrap().port();
    let mut surveyor = Surveyor::new(SurveyFilter::ports([port]));
    let (first_local, _) = ends(&first);
    let nodelay_of = |survey: &Survey, local: SocketAddr| {
        survey.sockets.iter().find(|s| s.local == local).map(|s| s.nodelay)
    };
    assert_eq!(nodelay_of(&surveyor.survey().unwrap(), first_local), Some(Nodelay::Off));
    first.set_nodelay(true).unwrap();
    let second = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    second.set_nodelay(true).unwrap();
    let second_accepted = listener.accept().unwrap().0;
    let (second_local, _) = ends(&second);
    let kept = surveyor.survey().unwrap();
    assert_eq!(nodelay_of(&kept, second_local), Some(Nodelay::On), "a new socket is read");
    assert_eq!(nodelay_of(&kept, first_local), Some(Nodelay::Off), "an old one is kept as read");
    assert_eq!(kept.sockets.len(), 5);
    drop((second, second_accepted));
    let mut surveys = 2;
    let full = loop {
        let now = surveyor.survey().unwrap();
        surveys += 1;
        assert_eq!(nodelay_of(&now, second_local), None, "closed: {:#?}", now.sockets);
        if surveys > FULL_SURVEY_EVERY {
            break now;
        }
        assert_eq!(nodelay_of(&now, first_local), Some(Nodelay::Off));
    };
    assert_eq!(nodelay_of(&full, first_local), Some(Nodelay::On), "read again");
}

/// Listens on 127.0.0.1 port 0, prints `PORT n`, accepts one connection and prints `FD fd`,
/// then waits for stdin to close.
const SERVER: &str = r#"
import socket, sys
listener = socket.socket()
listener.bind(('127.0.0.1', 0))
listener.listen()
print('PORT', listener.getsockname()[1], flush=True)
accepted, _ = listener.accept()
print('FD', accepted.fileno(), flush=True)
sys.stdin.read()
"#;

#[test]
fn a_pid_filter_lists_that_process_sockets_only() {
    let mut child = Command::new("python3")
        .args(["-c", SERVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let port: u16 = line.trim().strip_prefix("PORT ").unwrap().parse().unwrap();
    let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let fd: i32 = line.trim().strip_prefix("FD ").unwrap().parse().unwrap();

    let found = survey(&SurveyFilter::pid(child.id())).unwrap();
    assert_eq!(found.sockets.len(), 2, "its listener and accepted socket: {:#?}", found.sockets);
    assert!(found.sockets.iter().all(|s| s.owner.as_ref().map(|o| o.pid) == Some(child.id())));
    let (local, remote) = ends(&client);
    let accepted = find(&found, remote, local);
    assert_eq!(accepted.owner.as_ref().map(|o| (o.fd, o.command.as_str())), Some((fd, "python3")));
    assert_eq!(accepted.nodelay, Nodelay::Off);

    drop(child.stdin.take());
    child.wait().unwrap();
    let gone = survey(&SurveyFilter::pid(child.id())).unwrap();
    assert!(gone.sockets.is_empty(), "a process that ended has no sockets: {:#?}", gone.sockets);
}

/// A server answering each 1-byte request with a 10-byte head and a 10-byte body in two
/// writes (TCP_NODELAY as given); `written` hears when both writes returned.
fn split_writer(
    mut accepted: TcpStream,
    nodelay: bool,
    written: mpsc::Sender<()>,
) -> std::thread::JoinHandle<()> {
    accepted.set_nodelay(nodelay).unwrap();
    std::thread::spawn(move || {
        let mut request = [0u8; 1];
        while accepted.read_exact(&mut request).is_ok() {
            accepted.write_all(b"head......").unwrap();
            accepted.write_all(b"body......").unwrap();
            if written.send(()).is_err() {
                return;
            }
        }
    })
}

/// From the second exchange on the client delays its ACKs (pingpong), so the server's body
/// waits ~40 ms for the ACK of its head: a survey taken as soon as both writes returned sees
/// the server holding and the client owing the ACK. Bounded to 20 exchanges.
#[test]
fn a_nagle_hold_and_the_peers_pending_delayed_ack_are_seen_while_they_last() {
    let (listener, mut client, accepted) = pair();
    let port = listener.local_addr().unwrap().port();
    let (written, was_written) = mpsc::channel();
    let server = split_writer(accepted, false, written);
    let (client_local, server_local) = ends(&client);
    let filter = SurveyFilter::ports([port]);
    let first = survey(&filter).unwrap();
    let mut caught = None;
    for _ in 0..20 {
        client.write_all(b"?").unwrap();
        was_written.recv().unwrap();
        let during = survey(&filter).unwrap();
        let mut response = [0u8; 20];
        client.read_exact(&mut response).unwrap();
        let holding = find(&during, server_local, client_local);
        if holding.nagle_holding() {
            caught = Some(during);
            break;
        }
    }
    let during = caught.expect("a hold caught in 20 exchanges");
    let holding = find(&during, server_local, client_local);
    assert!(holding.nagle_prone(), "{holding:#?}");
    assert_eq!(holding.notsent_bytes(), 10, "the body, held");
    assert_eq!(holding.unacked_bytes(), 10, "the head, unacknowledged");
    assert_eq!(find(&during, client_local, server_local).delayed_ack_pending, Some(true));
    assert_eq!(holding.delayed_ack_pending, Some(false), "the server owes nothing");
    let by_process = during.by_process();
    assert_eq!((by_process[0].nagle_holding, by_process[0].delayed_ack_pending), (1, 1));
    let after = survey(&filter).unwrap();
    let change = Survey::compare(&first, &after);
    assert!(change.delayed_acks >= Some(1), "the client's timer fired for the head: {change:?}");
    assert_eq!((change.sockets_opened, change.sockets_closed), (0, 0));
    assert!(change.processes[0].data_segments_out >= 2, "{change:?}");
    drop(client);
    server.join().unwrap();
}

/// The same exchanges with TCP_NODELAY on: the body leaves at once, nothing is ever held.
#[test]
fn a_nodelay_server_is_never_seen_holding() {
    let (listener, mut client, accepted) = pair();
    let port = listener.local_addr().unwrap().port();
    let (written, was_written) = mpsc::channel();
    let server = split_writer(accepted, true, written);
    let (client_local, server_local) = ends(&client);
    for _ in 0..5 {
        client.write_all(b"?").unwrap();
        was_written.recv().unwrap();
        let during = survey(&SurveyFilter::ports([port])).unwrap();
        let server_end = find(&during, server_local, client_local);
        assert_eq!(server_end.nodelay, Nodelay::On);
        assert!(!server_end.nagle_holding() && !server_end.nagle_prone(), "{server_end:#?}");
        let mut response = [0u8; 20];
        client.read_exact(&mut response).unwrap();
    }
    drop(client);
    server.join().unwrap();
}

#[test]
fn root_may_capture() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root");
        return;
    }
    assert_eq!(capture_allowed(), Ok(()));
}

/// Set in the environment of this test binary run again as `nobody`.
const AS_NOBODY: &str = "NODELAY_HOST_SURVEY_AS_NOBODY";

/// `setpriv` runs this test binary again as `nobody` (no capabilities): it surveys root's
/// listener and connection and a listener of its own.
#[test]
fn as_nobody_root_sockets_have_no_owner_and_unreadable_processes_are_counted() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a survey as another user");
        return;
    }
    let (listener, client, _accepted) = pair();
    let port = listener.local_addr().unwrap().port();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "survey_as_nobody", "--nocapture", "--test-threads=1"])
        .env(AS_NOBODY, format!("{port} {}", client.local_addr().unwrap()))
        .output()
        .expect("setpriv (util-linux)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("NOBODY OK"), "the survey ran as nobody: {stdout}\n{stderr}");
}

/// Run only by the test above, as `nobody`: a no-op otherwise.
#[test]
fn survey_as_nobody() {
    let Ok(given) = std::env::var(AS_NOBODY) else { return };
    let (port, root_client) = given.split_once(' ').unwrap();
    let port: u16 = port.parse().unwrap();
    let root_client: SocketAddr = root_client.parse().unwrap();
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 65534);
    let error = capture_allowed().expect_err("nobody may not open a packet socket");
    assert!(error.starts_with("no CAP_NET_RAW: ") && error.len() <= 80, "{error}");

    let (own_listener, own_client, _own_accepted) = pair();
    let own_port = own_listener.local_addr().unwrap().port();
    let found = survey(&SurveyFilter::ports([port, own_port])).unwrap();
    assert!(found.unreadable_processes >= 1, "root's test process at least");
    let root_server: SocketAddr = ([127, 0, 0, 1], port).into();
    let roots = find(&found, root_client, root_server);
    assert_eq!((roots.owner.as_ref(), roots.nodelay), (None, Nodelay::Unknown(UnknownWhy::OwnerUnreadable)));
    assert!(roots.tcp.is_some(), "sock_diag gives anyone TCP_INFO");
    let (local, remote) = ends(&own_client);
    let own = find(&found, local, remote);
    assert_eq!(own.owner.as_ref().map(|o| o.pid), Some(std::process::id()));
    assert_eq!(own.nodelay, Nodelay::Off, "its own sockets are read");
    println!("NOBODY OK: {} processes not readable; {error}", found.unreadable_processes);
}

/// The figures in `socket_survey`'s module doc: `cargo test --release -p nodelay-host --test
/// socket_survey -- --ignored --nocapture survey_time`.
#[test]
#[ignore = "opens 10 000 sockets; run by hand for the figure"]
fn survey_time_with_10k_sockets() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    assert!(limit.rlim_cur > 10_100, "10 000 sockets need more descriptors: {}", limit.rlim_cur);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held: Vec<_> = (0..5_000)
        .map(|_| {
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            (client, listener.accept().unwrap().0)
        })
        .collect();
    let mut surveyor = Surveyor::new(SurveyFilter::default());
    surveyor.survey().unwrap();
    let start = std::time::Instant::now();
    let listed = surveyor.survey().unwrap().sockets.len();
    println!(
        "a surveyor's survey after the first: {:.1} ms, {listed} sockets",
        start.elapsed().as_secs_f64() * 1e3
    );
    for (what, filter) in [
        ("every socket", SurveyFilter::default()),
        ("their port", SurveyFilter::ports([port])),
        ("another port", SurveyFilter::ports([1])),
        ("this PID", SurveyFilter::pid(std::process::id())),
    ] {
        let runs = 10;
        let start = std::time::Instant::now();
        let mut listed = 0;
        for _ in 0..runs {
            listed = survey(&filter).unwrap().sockets.len();
        }
        let each_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(runs);
        println!("{what}: {each_ms:.1} ms a survey, {listed} sockets listed");
    }
}

/// sock_diag's TCP_INFO is read at the same offsets as getsockopt's: an idle connection after
/// one exchange gives the same figures both ways.
#[test]
fn tcp_info_from_the_dump_matches_getsockopt() {
    let (_listener, mut client, mut accepted) = pair();
    client.write_all(b"ping").unwrap();
    accepted.read_exact(&mut [0u8; 4]).unwrap();
    accepted.write_all(b"pong").unwrap();
    client.read_exact(&mut [0u8; 4]).unwrap();
    let (local, remote) = ends(&client);
    let found = survey(&SurveyFilter::ports([remote.port()])).unwrap();
    let diag = find(&found, local, remote).tcp.expect("TCP_INFO in the dump");
    let own = nodelay_tcp::read_tcp_info(&client).unwrap();
    assert_eq!(
        (diag.rtt_us, diag.min_rtt_us, diag.ato_us, diag.snd_mss_bytes, diag.rcv_mss_bytes),
        (own.rtt_us, own.min_rtt_us, own.ato_us, own.snd_mss_bytes, own.rcv_mss_bytes)
    );
    assert_eq!(
        (diag.segments_out, diag.segments_in, diag.total_retrans_segments, diag.notsent_bytes),
        (own.segments_out, own.segments_in, own.total_retransmits, own.notsent_bytes)
    );
    assert_eq!((diag.bytes_acked, diag.bytes_received, diag.bytes_sent), (5, 4, Some(4)), "the SYN counts 1");
    assert_eq!((diag.data_segments_out, diag.data_segments_in), (1, 1));
}
