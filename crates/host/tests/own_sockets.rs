//! The host crate against real sockets: this test process's own (pidfd_getfd works on
//! oneself) and a child process's, found by its port.
#![cfg(target_os = "linux")]

mod support;

use nodelay_host::{HostError, SocketState, Target, inspect, restore, set_nodelay};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};

fn own() -> Target {
    Target::Pid(std::process::id() as i32)
}

#[test]
fn a_listener_and_its_connection_are_listed_set_and_restored() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let (accepted, _) = listener.accept().unwrap();
    let mine = |inspection: &nodelay_host::Inspection| {
        inspection
            .sockets
            .iter()
            .filter(|s| s.local.port() == port)
            .map(|s| (s.state, s.nodelay))
            .collect::<Vec<_>>()
    };
    let before = inspect(Target::Port(port)).unwrap();
    assert_eq!(before.processes[0].pid, std::process::id() as i32);
    let mut states = mine(&before);
    states.sort_by_key(|(state, _)| *state as u8);
    assert_eq!(states, [(SocketState::Listen, false), (SocketState::Established, false)]);
    let established = before.sockets.iter().find(|s| s.state == SocketState::Established).unwrap();
    assert_eq!(established.peer, Some(client.local_addr().unwrap()));
    assert!(established.tcp_info.is_some());

    let dry = set_nodelay(Target::Port(port), true).unwrap();
    assert_eq!(dry.changed.len(), 2);
    // The doctor's target, named by the address the client connected to: its listener only.
    let by_address = set_nodelay(Target::Address(([127, 0, 0, 1], port).into()), true).unwrap();
    assert_eq!(by_address.changed.len(), 1);
    assert_eq!(by_address.listening_changed(), 1);
    assert!(!accepted.nodelay().unwrap(), "a dry run changes nothing");

    let change = set_nodelay(Target::Port(port), false).unwrap();
    assert_eq!((change.changed.len(), change.listening_changed(), change.already_on), (2, 1, 0));
    assert!(accepted.nodelay().unwrap());
    // The client side (another local port) is not part of "port N".
    assert!(!client.nodelay().unwrap());
    let (late_client, late) =
        (TcpStream::connect(("127.0.0.1", port)).unwrap(), listener.accept().unwrap().0);
    assert!(late.nodelay().unwrap(), "connections accepted afterwards inherit it");

    assert_eq!(restore(&change), nodelay_host::Restored { restored: 2, gone: 0, failed: Vec::new() });
    assert!(!accepted.nodelay().unwrap());
    let after = inspect(Target::Port(port)).unwrap();
    let listening = after.sockets.iter().find(|s| s.state == SocketState::Listen).unwrap();
    assert!(!listening.nodelay);
    drop((late_client, late));
}

#[test]
fn the_owner_of_a_port_is_found_in_another_process() {
    let mut child = Command::new("python3")
        .args(["-c", "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap();
    let owners = inspect(Target::Address(([127, 0, 0, 1], port).into())).unwrap().processes;
    assert_eq!(owners.iter().map(|p| p.pid).collect::<Vec<_>>(), [child.id() as i32]);
    assert_eq!(owners[0].command, "python3");
    // The same port on an address the listener is not bound to is someone else's.
    assert!(
        matches!(inspect(Target::Address(([127, 0, 0, 2], port).into())), Err(HostError::NobodyListens(p)) if p == port)
    );
    let change = set_nodelay(Target::Pid(child.id() as i32), false).unwrap();
    assert_eq!(change.listening_changed(), 1);
    drop(child.stdin.take());
    child.wait().unwrap();
}

#[test]
fn nobody_and_nothing_are_clear_errors() {
    // Bound but not listening, held for the test: no other test's listener can take the port.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    let free = held.local_addr().unwrap().as_socket().unwrap().port();
    let error = inspect(Target::Port(free)).unwrap_err();
    assert_eq!(error.to_string(), format!("nothing listens on TCP port {free} on this machine"));
    // PIDs are below /proc/sys/kernel/pid_max (at most 2^22).
    let error = inspect(Target::Pid(i32::MAX)).unwrap_err();
    assert_eq!(error.to_string(), format!("no process with PID {}", i32::MAX));
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let sockets = inspect(own()).unwrap().sockets;
    assert!(sockets.iter().all(|s| s.local != udp.local_addr().unwrap()), "UDP sockets are not listed");
}

/// The doctor's `--try-fix` names the server by the address its client connected to: a
/// listener of the other address family, or one that refuses IPv4, is someone else's.
#[test]
fn an_address_target_changes_only_the_listener_that_accepts_it() {
    use socket2::{Domain, Socket, Type};
    let (ipv6, ipv4_any, port) = two_on_one_port(
        || TcpListener::bind("[::1]:0").unwrap(),
        |listener| listener.local_addr().unwrap().port(),
        |port| TcpListener::bind(("0.0.0.0", port)),
    );
    let changes = |address: &str| {
        let change = set_nodelay(Target::Address(address.parse().unwrap()), true).unwrap();
        change.changed.iter().map(|s| s.local.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(changes(&format!("[::1]:{port}")), [format!("[::1]:{port}")]);
    assert_eq!(changes(&format!("127.0.0.1:{port}")), [format!("0.0.0.0:{port}")]);
    drop((ipv6, ipv4_any));

    // [::] with IPV6_V6ONLY beside 0.0.0.0 on one port: an IPv4 client reaches only the latter.
    let v6only = || {
        let socket = Socket::new(Domain::IPV6, Type::STREAM, None).unwrap();
        socket.set_only_v6(true).unwrap();
        socket.bind(&"[::]:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
        socket.listen(8).unwrap();
        socket
    };
    let (_v6only, _ipv4_any, port) = two_on_one_port(
        v6only,
        |socket| socket.local_addr().unwrap().as_socket().unwrap().port(),
        |port| TcpListener::bind(("0.0.0.0", port)),
    );
    assert_eq!(changes(&format!("127.0.0.1:{port}")), [format!("0.0.0.0:{port}")]);
    assert_eq!(changes(&format!("[::1]:{port}")), [format!("[::]:{port}")]);
}

/// A listener on an ephemeral port, then a second on the same port. Other tests running at
/// the same time may take that port between the two binds, so a taken port means a new
/// first listener (bounded: 100 tries).
fn two_on_one_port<A, B>(
    first: impl Fn() -> A,
    port_of: impl Fn(&A) -> u16,
    second: impl Fn(u16) -> std::io::Result<B>,
) -> (A, B, u16) {
    for _ in 0..100 {
        let a = first();
        let port = port_of(&a);
        match second(port) {
            Ok(b) => return (a, b, port),
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(error) => panic!("binding the second listener on port {port}: {error}"),
        }
    }
    panic!("no port free for both listeners in 100 tries");
}

#[test]
fn a_thread_is_not_a_process() {
    let (sender, receiver) = std::sync::mpsc::channel();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        sender.send(unsafe { libc::gettid() }).unwrap();
        let _ = stopped.recv();
    });
    let tid = receiver.recv().unwrap();
    let pid = std::process::id() as i32;
    let error = inspect(Target::Pid(tid)).unwrap_err();
    assert_eq!(error.to_string(), format!("{tid} is a thread of PID {pid}, not a process: name PID {pid}"));
    stop.send(()).unwrap();
    thread.join().unwrap();
}

/// nginx's shape: a master and a worker hold one listening socket, listed once; both are
/// processes of the change made through it.
#[test]
fn every_holder_of_a_shared_listener_is_named() {
    let server = support::Server::spawn_forked();
    let mut expected = vec![server.pid(), server.worker_pid.expect("a forked worker")];
    expected.sort_unstable();
    let change = set_nodelay(Target::Address(server.address()), true).unwrap();
    let mut pids: Vec<i32> = change.processes.iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    assert_eq!(pids, expected);
    assert_eq!(change.listening_changed(), 1, "one socket, however many hold it");
}
