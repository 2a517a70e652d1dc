//! `OwnerIndex` against real sockets on loopback: a Python server's listener and accepted
//! connection and this process's client end, IPv6 and dual-stack listeners, processes that end
//! while a scan reads them, and the scan's cost with 10 000 sockets open.
#![cfg(target_os = "linux")]

use nodelay_host::socket_owner::OwnerIndex;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Listens on `HOST` port 0 (dual-stack when HOST is `::`), prints `PORT n`, accepts one
/// connection, prints `FD listener accepted`, then waits for stdin to close.
const SERVER: &str = r#"
import socket, sys
host = sys.argv[1]
family = socket.AF_INET6 if ':' in host else socket.AF_INET
listener = socket.socket(family)
if family == socket.AF_INET6:
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
listener.bind((host, 0))
listener.listen()
print('PORT', listener.getsockname()[1], flush=True)
accepted, _ = listener.accept()
print('FD', listener.fileno(), accepted.fileno(), flush=True)
sys.stdin.read()
"#;

struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(host: &str) -> (Server, u16) {
        let mut child = Command::new("python3")
            .args(["-c", SERVER, host])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut server = Server { stdout: BufReader::new(child.stdout.take().unwrap()), child };
        let port = server.line("PORT")[0].parse().unwrap();
        (server, port)
    }

    /// The words after `tag` on the next line.
    fn line(&mut self, tag: &str) -> Vec<String> {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        assert_eq!(words.first().map(String::as_str), Some(tag), "{line:?}");
        words[1..].to_vec()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// This test binary's name: `comm` has only its first 15 bytes, argv[0] all of it.
fn own_command() -> String {
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap().trim().to_string();
    let exe = std::env::current_exe().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    assert!(comm.len() == 15 && exe.len() > 15 && exe.starts_with(&comm), "{comm} {exe}");
    exe
}

#[test]
fn both_ends_of_a_connection_and_the_listener_are_owned_by_their_processes() {
    let (mut server, port) = Server::start("127.0.0.1");
    let server_address: SocketAddr = ([127, 0, 0, 1], port).into();
    let client = TcpStream::connect(server_address).unwrap();
    let fds: Vec<i32> = server.line("FD").iter().map(|fd| fd.parse().unwrap()).collect();
    let client_address = client.local_addr().unwrap();

    let index = OwnerIndex::scan().unwrap();
    let ours = index.owner(client_address, server_address).expect("the client's end");
    assert_eq!(
        (ours.pid, ours.fd, ours.command.as_str()),
        (std::process::id(), client.as_raw_fd(), own_command().as_str())
    );
    let theirs = index.owner(server_address, client_address).expect("the server's end");
    assert_eq!((theirs.pid, theirs.fd, theirs.command.as_str()), (server.child.id(), fds[1], "python3"));
    let listener = index.owner_of_port(port).expect("the listener");
    assert_eq!((listener.pid, listener.fd), (server.child.id(), fds[0]));
    assert_eq!(index.listener_for(server_address), Some(listener));
    assert_eq!(index.flow_owners(server_address, client_address), [Some(theirs), Some(ours)]);
    assert_ne!(ours.inode, theirs.inode);
    assert_eq!(index.by_inode(ours.inode), Some(ours));
    assert_eq!(index.owner(server_address, "127.0.0.1:1".parse().unwrap()), None, "no such flow");
}

#[test]
fn a_dual_stack_listener_owns_ipv4_flows_listed_as_mapped_addresses() {
    let (mut server, port) = Server::start("::");
    let server_address: SocketAddr = ([127, 0, 0, 1], port).into();
    let client = TcpStream::connect(server_address).unwrap();
    server.line("FD");
    let client_address = client.local_addr().unwrap();
    let index = OwnerIndex::scan().unwrap();
    // The server's end is an IPv6 socket ([::ffff:127.0.0.1]); a capture sees IPv4.
    let theirs = index.owner(server_address, client_address).expect("the server's end, by IPv4");
    assert_eq!(theirs.pid, server.child.id());
    let mapped: SocketAddr = format!("[::ffff:127.0.0.1]:{port}").parse().unwrap();
    assert_eq!(index.owner(mapped, client_address), Some(theirs));
    assert_eq!(index.listener_for(server_address).map(|o| o.pid), Some(server.child.id()));
    assert_eq!(index.listener_for(format!("[::1]:{port}").parse().unwrap()).map(|o| o.pid), Some(theirs.pid));
}

#[test]
fn an_ipv6_only_listener_accepts_no_ipv4_and_ipv6_flows_are_owned() {
    let socket = socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None).unwrap();
    socket.set_only_v6(true).unwrap();
    socket.bind(&"[::]:0".parse::<SocketAddr>().unwrap().into()).unwrap();
    socket.listen(8).unwrap();
    let listener: TcpListener = socket.into();
    let port = listener.local_addr().unwrap().port();
    let client = TcpStream::connect(("::1", port)).unwrap();
    let (accepted, _) = listener.accept().unwrap();
    let index = OwnerIndex::scan().unwrap();
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let owner = index.owner(v6, client.local_addr().unwrap()).expect("the accepted end");
    assert_eq!((owner.pid, owner.fd), (std::process::id(), accepted.as_raw_fd()));
    assert_eq!(index.listener_for(v6).map(|o| o.fd), Some(listener.as_raw_fd()));
    assert_eq!(index.listener_for(([127, 0, 0, 1], port).into()), None, "IPV6_V6ONLY refuses IPv4");
}

/// Children start and end on another thread while scans run: none fails.
#[test]
fn processes_ending_during_scans_do_not_fail_them() {
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut spawned = 0u32;
            while !stop.load(Ordering::Relaxed) && spawned < 5_000 {
                let mut child = Command::new("true").spawn().unwrap();
                child.wait().unwrap();
                spawned += 1;
            }
            spawned
        })
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for _ in 0..30 {
        let index = OwnerIndex::scan().expect("a scan while processes end");
        assert_eq!(index.owner_of_port(port).map(|o| o.pid), Some(std::process::id()));
    }
    stop.store(true, Ordering::Relaxed);
    assert!(churn.join().unwrap() > 0);
}

/// The figure in `socket_owner`'s module doc: `cargo test -p nodelay-host --test socket_owner
/// -- --ignored --nocapture scan_time`.
#[test]
#[ignore = "opens 10 000 sockets; run by hand for the figure"]
fn scan_time_with_10k_sockets() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    assert!(limit.rlim_cur > 10_100, "10 000 sockets need more descriptors: {}", limit.rlim_cur);
    let time = |what: &str| {
        let runs = 10;
        let start = Instant::now();
        let mut owned = 0;
        for _ in 0..runs {
            owned = OwnerIndex::scan().unwrap().owned_sockets();
        }
        let each_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(runs);
        println!("{what}: {each_ms:.1} ms a scan, {owned} sockets owned");
    };
    time("before");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let held: Vec<_> = (0..5_000)
        .map(|_| {
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            (client, listener.accept().unwrap().0)
        })
        .collect();
    time("with 10 000 more");
    let mut first = &held[0].0;
    first.write_all(b"x").unwrap();
}

/// Set in the environment of this test binary run again where netlink sockets are refused.
const WITHOUT_NETLINK: &str = "NODELAY_HOST_OWNER_WITHOUT_NETLINK";

/// Where a seccomp profile refuses netlink sockets, the index reads /proc/net/tcp instead: run
/// again under such a filter, this test binary still finds its own listener's owner.
#[test]
fn where_netlink_is_refused_the_table_is_read_from_proc() {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", "scan_without_netlink", "--nocapture"]).env(WITHOUT_NETLINK, "1");
    let output = refuse_netlink(&mut command).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("WITHOUT NETLINK OK"), "{stdout}");
}

/// Run only by the test above, under its filter: a no-op otherwise.
#[test]
fn scan_without_netlink() {
    if std::env::var(WITHOUT_NETLINK).is_err() {
        return;
    }
    // SAFETY: socket(2) with constant arguments; a descriptor is closed at once.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM, libc::NETLINK_SOCK_DIAG) };
    assert!(fd < 0, "the filter refuses netlink");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let index = OwnerIndex::scan().expect("the table from /proc");
    let owner = index.owner_of_port(listener.local_addr().unwrap().port()).expect("our listener");
    assert_eq!((owner.pid, owner.fd), (std::process::id(), listener.as_raw_fd()));
    println!("WITHOUT NETLINK OK");
}

/// The child's socket(AF_NETLINK, ...) fails with EPERM, as under a seccomp profile that
/// blocks netlink (x86_64 numbering; seccomp_data has the call at offset 0, its first
/// argument at 16).
fn refuse_netlink(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    let statement = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter { code: code as u16, jt, jf, k };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let equals = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    let filter = [
        statement(load, 0, 0, 0),
        statement(equals, libc::SYS_socket as u32, 0, 3),
        statement(load, 16, 0, 0),
        statement(equals, libc::AF_NETLINK as u32, 0, 1),
        statement(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32, 0, 0),
        statement(ret, libc::SECCOMP_RET_ALLOW, 0, 0),
    ];
    // SAFETY: between fork and exec only prctl is called, with a filter the closure owns.
    unsafe {
        command.pre_exec(move || {
            let program = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut _ };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
