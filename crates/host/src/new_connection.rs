//! Whether a fix holds for the connections to come: one connection is opened to a listener of
//! the program, the program's side of it is found by its 4-tuple in the socket table (its
//! inode, once accepted, among the program's descriptors), and its TCP_NODELAY is read
//! through a copy, again and again for a short while. A program that turns TCP_NODELAY off
//! on each connection it accepts (Node's `socket.setNoDelay(false)` in a `connection`
//! handler, Go's `SetNoDelay(false)` after `Accept`) does so before it reads a byte, so the
//! connection sends nothing: a database or any other protocol sees a client that left.

use crate::linux::{mapped, open_process, printable};
use crate::pidfd::{self, PidFd};
use crate::socket_fds::socket_fds;
use crate::{NewConnection, NodelayChange, ProcessInfo};
use procfs::net::TcpState;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// How long the program may take to accept the connection.
const ACCEPT_WAIT: Duration = Duration::from_secs(1);
/// How long TCP_NODELAY is watched once accepted: a program turns it off in the code that
/// runs on accept (the same turn of an event loop), well within this.
const WATCH: Duration = Duration::from_millis(100);
/// Between two readings of the socket table or of the option.
const POLL: Duration = Duration::from_millis(1);

/// Opens one connection to the first of the change's listening sockets and reads TCP_NODELAY
/// on the program's side of it. `None` on a dry run (nothing was set) and when the target
/// listens on nothing (a client program: no connection to come from a listener).
pub fn check_new_connection(change: &NodelayChange) -> Option<NewConnection> {
    if change.dry_run {
        return None;
    }
    let address = connect_address(*change.listening.first()?);
    Some(match watch(address, &change.processes) {
        Ok((pid, nodelay, watched)) => {
            let watched_ms = watched.as_secs_f64() * 1e3;
            let summary = if nodelay {
                "a new connection keeps TCP_NODELAY: the fix holds for the connections to come".to_string()
            } else {
                format!(
                    "the program turns TCP_NODELAY off on each new connection; fix cannot hold: start it with \
                     `nodelay exec -- {}`",
                    command_line(pid).unwrap_or_else(|| "PROGRAM ARGS...".into())
                )
            };
            NewConnection { address, accepted_by: Some(pid), nodelay: Some(nodelay), watched_ms, summary }
        }
        Err((accepted_by, why)) => NewConnection {
            address,
            accepted_by,
            nodelay: None,
            watched_ms: 0.0,
            summary: format!("a new connection could not be checked: {why}"),
        },
    })
}

/// Whether a socket of this network namespace listens on TCP `port` (any address).
pub fn listens_on(port: u16) -> bool {
    crate::tcp_table::read_once(None).is_ok_and(|lines| {
        lines.iter().any(|line| line.state == TcpState::Listen && line.local.port() == port)
    })
}

/// Where to connect to reach a listener: loopback for a wildcard address.
fn connect_address(listening: SocketAddr) -> SocketAddr {
    let ip = match listening.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listening.port())
}

type Failure = (Option<i32>, String);

/// Connects, waits for one of `processes` to accept, and watches TCP_NODELAY on its side:
/// (who accepted, whether it stayed on, how long it was watched).
fn watch(address: SocketAddr, processes: &[ProcessInfo]) -> Result<(i32, bool, Duration), Failure> {
    let client = TcpStream::connect_timeout(&address, ACCEPT_WAIT)
        .map_err(|e| (None, format!("cannot connect to {address}: {e}")))?;
    let ours = client.local_addr().map_err(|e| (None, format!("its local address: {e}")))?;
    let (pid, copy) = accepted(address, ours, processes)?;
    let started = Instant::now();
    loop {
        let on = pidfd::tcp_flag(&copy, libc::TCP_NODELAY)
            .map_err(|e| (Some(pid), format!("reading TCP_NODELAY of PID {pid}'s connection: {e}")))?;
        if !on || started.elapsed() >= WATCH {
            return Ok((pid, on, started.elapsed()));
        }
        std::thread::sleep(POLL);
    }
}

/// A copy of the program's side of the connection from `client` to `address`, once one of
/// `processes` has accepted it.
fn accepted(
    address: SocketAddr,
    client: SocketAddr,
    processes: &[ProcessInfo],
) -> Result<(i32, OwnedFd), Failure> {
    let same = |a: SocketAddr, b: SocketAddr| a.port() == b.port() && mapped(a.ip()) == mapped(b.ip());
    let deadline = Instant::now() + ACCEPT_WAIT;
    let mut accepted_elsewhere = false;
    while Instant::now() < deadline {
        let lines = crate::tcp_table::read_once(None)
            .map_err(|e| (None, format!("reading the TCP socket table: {e}")))?;
        // Its inode is 0 until accept() gives the connection a socket of the program's.
        let inode = lines
            .iter()
            .find(|line| same(line.local, address) && same(line.remote, client) && line.inode != 0)
            .map(|line| line.inode);
        if let Some(inode) = inode {
            for process in processes {
                if let Some(found) = take(process.pid, inode) {
                    return found.map(|copy| (process.pid, copy)).map_err(|e| (Some(process.pid), e));
                }
            }
            // Or its descriptor is not installed yet: looked for again.
            accepted_elsewhere = true;
        }
        std::thread::sleep(POLL);
    }
    let who: Vec<String> = processes.iter().map(|p| format!("PID {}", p.pid)).collect();
    let who = who.join(", ");
    Err((
        None,
        if accepted_elsewhere {
            format!("a process other than {who} accepted it (a worker?); name the port, :{}", address.port())
        } else {
            format!("{who} accepted no connection within {} s", ACCEPT_WAIT.as_secs())
        },
    ))
}

/// A copy of `pid`'s descriptor of socket `inode`: `None` when the process holds none (yet).
fn take(pid: i32, inode: u64) -> Option<Result<OwnedFd, String>> {
    let process = open_process(pid).ok()?;
    let fd = socket_fds(&process).ok()?.into_iter().find(|(_, i)| *i == inode)?.0;
    let copy = PidFd::open(pid).and_then(|handle| handle.take(fd));
    Some(match copy {
        Ok(copy) if pidfd::inode(&copy).ok() == Some(inode) => Ok(copy),
        Ok(_) => return None,
        Err(e) => Err(format!("cannot take PID {pid}'s connection (fd {fd}): {e}")),
    })
}

/// The process's command line as a shell would take it back (words with spaces or quotes
/// quoted), for the advice to start it under `nodelay exec`; `None` when unreadable.
fn command_line(pid: i32) -> Option<String> {
    let words = open_process(pid).ok()?.cmdline().ok()?;
    if words.is_empty() {
        return None;
    }
    let quoted: Vec<String> = words.iter().map(|word| quote(&printable(word))).collect();
    Some(quoted.join(" "))
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::net::TcpListener;

    fn change(listener: &TcpListener) -> NodelayChange {
        let me = crate::linux::process_info(&procfs::process::Process::myself().unwrap()).unwrap();
        NodelayChange {
            processes: vec![me],
            dry_run: false,
            changed: Vec::new(),
            already_on: 1,
            listening: vec![listener.local_addr().unwrap()],
        }
    }

    /// This process is the program, its listener fixed: a thread accepts, and sets
    /// TCP_NODELAY as asked.
    fn checked(nodelay: bool) -> NewConnection {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        socket2::SockRef::from(&listener).set_tcp_nodelay(true).unwrap();
        let change = change(&listener);
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream.set_nodelay(nodelay).unwrap();
            // Held until the check has read it and closed its end.
            let _ = io::Read::read(&mut &stream, &mut [0; 1]);
        });
        let checked = check_new_connection(&change).unwrap();
        server.join().unwrap();
        checked
    }

    #[test]
    fn a_connection_the_program_keeps_nodelay_on_holds() {
        let checked = checked(true);
        assert_eq!(checked.nodelay, Some(true), "{checked:?}");
        assert_eq!(checked.accepted_by, Some(std::process::id() as i32));
        assert!(checked.watched_ms >= 100.0, "{checked:?}");
        assert!(checked.summary.contains("the fix holds"), "{checked:?}");
    }

    #[test]
    fn a_connection_the_program_turns_nodelay_off_on_cannot_hold() {
        let checked = checked(false);
        assert!(checked.turned_off(), "{checked:?}");
        assert!(checked.summary.contains("fix cannot hold: start it with `nodelay exec -- "), "{checked:?}");
    }

    #[test]
    fn a_listener_that_never_accepts_is_said_so() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let checked = check_new_connection(&change(&listener)).unwrap();
        assert_eq!((checked.nodelay, checked.accepted_by), (None, None));
        assert!(checked.summary.contains("accepted no connection within 1 s"), "{checked:?}");
        let dry = NodelayChange { dry_run: true, ..change(&listener) };
        assert_eq!(check_new_connection(&dry), None);
    }

    /// `nodelay fix PID` of a master whose worker accepts: the check says who should be named.
    #[test]
    fn a_connection_accepted_by_another_process_is_said_so() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut other = std::process::Command::new("sleep").arg("10").spawn().unwrap();
        let info =
            crate::linux::process_info(&procfs::process::Process::new(other.id() as i32).unwrap()).unwrap();
        let change = NodelayChange { processes: vec![info], ..change(&listener) };
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let _ = io::Read::read(&mut &stream, &mut [0; 1]);
        });
        let checked = check_new_connection(&change).unwrap();
        server.join().unwrap();
        other.kill().unwrap();
        other.wait().unwrap();
        assert_eq!(checked.nodelay, None, "{checked:?}");
        assert!(
            checked.summary.contains(&format!("a process other than PID {} accepted it", other.id())),
            "{checked:?}"
        );
    }

    #[test]
    fn words_are_quoted_as_a_shell_takes_them_back() {
        assert_eq!(quote("node"), "node");
        assert_eq!(quote("--port=8080"), "--port=8080");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(connect_address("0.0.0.0:80".parse().unwrap()), "127.0.0.1:80".parse().unwrap());
        assert_eq!(connect_address("[::]:80".parse().unwrap()), "[::1]:80".parse().unwrap());
        assert_eq!(connect_address("10.1.2.3:80".parse().unwrap()), "10.1.2.3:80".parse().unwrap());
    }
}
