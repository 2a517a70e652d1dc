//! This network namespace's TCP sockets through NETLINK_SOCK_DIAG (sock_diag(7)), what `ss`
//! asks: one dump per address family. Reading /proc/net/tcp and tcp6 walks the kernel's
//! connection hash table again for every read() of a page and once more for the end of each
//! file: ~9 ms for both on a machine with 262 144 buckets, however few sockets it holds,
//! where a dump of both costs ~1 ms. The server view reads the table several times a run.
//!
//! Hand-written over libc: the netlink-packet-sock-diag crate drops `idiag_expires` of a
//! TIME-WAIT socket, the time it has left, which tells a reused 4-tuple from an old one.
//! Only sockets of the namespace the calling thread is in are listed: another namespace's
//! table is read from /proc/PID/net (see `tcp_table`).

use crate::table_line::TableLine;
use procfs::net::TcpState;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `idiag_timer` of a socket in TIME-WAIT.
const TIME_WAIT_TIMER: u8 = 3;
const NLMSG_HEADER_BYTES: usize = 16;
/// The request attribute carrying a filter program.
const INET_DIAG_REQ_BYTECODE: u16 = 1;
/// `struct inet_diag_req_v2`.
const REQUEST_BYTES: usize = 56;
/// `struct inet_diag_msg`: family, state, timer, retrans; the socket id (48 bytes); expires,
/// rqueue, wqueue, uid, inode. Attributes (netlink `rtattr`s) follow it.
pub(crate) const MESSAGE_BYTES: usize = 72;
/// Room for many messages a recv (the kernel fills a dump's buffer up to ~32 KiB).
const RECEIVE_BYTES: usize = 64 * 1024;
/// A dump that says nothing for this long is given up (then /proc is read): never a hang.
const RECEIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The TCP sockets of the calling thread's network namespace in `states` (bit `1 << state`;
/// [`ALL_STATES`]: TIME-WAIT included), IPv4 then IPv6. A kernel without IPv6 lists IPv4 only.
pub(crate) fn tcp_sockets_in(states: u32) -> io::Result<Vec<TableLine>> {
    let mut lines = Vec::new();
    dump_tcp(states, 0, &[], &mut |body| {
        lines.push(parse_socket(body).ok_or_else(|| malformed("a socket message too short"))?);
        Ok(())
    })?;
    Ok(lines)
}

/// `idiag_states` of every state, bits 1 (ESTABLISHED) to 12 (NEW_SYN_RECV).
pub(crate) const ALL_STATES: u32 = 0x1ffe;

/// Every TCP socket in `states` (bit `1 << state`), IPv4 then IPv6, each handed to `each` as
/// its `inet_diag_msg` followed by the attributes `extensions` asked for (`idiag_ext` bits,
/// `1 << (INET_DIAG_INFO - 1)` for TCP_INFO): what `socket_survey` reads beyond a table line.
/// A non-empty `bytecode` (an `inet_diag_bc_op` program) has the kernel list only the sockets
/// it accepts.
pub(crate) fn dump_tcp(
    states: u32,
    extensions: u8,
    bytecode: &[u8],
    each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::NETLINK_SOCK_DIAG)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    socket2::SockRef::from(&socket).set_read_timeout(Some(RECEIVE_TIMEOUT))?;
    let query = Query { states, extensions, bytecode };
    dump(&socket, libc::AF_INET as u8, 1, query, each)?;
    match dump(&socket, libc::AF_INET6 as u8, 2, query, each) {
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {} // no IPv6 in this kernel
        other => other?,
    }
    Ok(())
}

/// Which sockets a dump lists and what it adds to each.
#[derive(Clone, Copy)]
struct Query<'a> {
    states: u32,
    extensions: u8,
    bytecode: &'a [u8],
}

/// Asks for every socket of `family` and hands each message the dump lists to `each`.
fn dump(
    socket: &OwnedFd,
    family: u8,
    sequence: u32,
    query: Query,
    each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let request = request(family, sequence, &query);
    // SAFETY: sends `request.len()` bytes of a live buffer on an owned socket; the kernel is
    // the destination when no address is given on a netlink socket.
    let sent = unsafe { libc::send(socket.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buffer = vec![0u8; RECEIVE_BYTES];
    loop {
        // SAFETY: receives into the whole of a live, writable buffer.
        let received = unsafe { libc::recv(socket.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if received < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if received == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "sock_diag: the dump stopped before its end",
            ));
        }
        if each_message(&buffer[..received as usize], sequence, each)? {
            return Ok(());
        }
    }
}

/// An `nlmsghdr` asking for a dump, then `inet_diag_req_v2` for TCP sockets in `query`'s
/// states, then its bytecode as an `INET_DIAG_REQ_BYTECODE` attribute.
fn request(family: u8, sequence: u32, query: &Query) -> Vec<u8> {
    let attribute_bytes = if query.bytecode.is_empty() { 0 } else { 4 + query.bytecode.len() };
    let length = NLMSG_HEADER_BYTES + REQUEST_BYTES + attribute_bytes;
    let mut bytes = vec![0u8; NLMSG_HEADER_BYTES + REQUEST_BYTES];
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    bytes[0..4].copy_from_slice(&(length as u32).to_ne_bytes());
    bytes[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    bytes[6..8].copy_from_slice(&flags.to_ne_bytes());
    bytes[8..12].copy_from_slice(&sequence.to_ne_bytes());
    let body = &mut bytes[NLMSG_HEADER_BYTES..];
    body[0] = family;
    body[1] = libc::IPPROTO_TCP as u8;
    body[2] = query.extensions;
    body[4..8].copy_from_slice(&query.states.to_ne_bytes());
    if attribute_bytes > 0 {
        bytes.extend_from_slice(&(attribute_bytes as u16).to_ne_bytes());
        bytes.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
        bytes.extend_from_slice(query.bytecode);
    }
    bytes
}

/// Appends the sockets one recv brought; true once the dump's end came. A message that does
/// not read as the kernel's (too short, an unknown family) is an error, not a skipped line.
pub(crate) fn parse_messages(bytes: &[u8], sequence: u32, lines: &mut Vec<TableLine>) -> io::Result<bool> {
    each_message(bytes, sequence, &mut |body| {
        lines.push(parse_socket(body).ok_or_else(|| malformed("a socket message too short"))?);
        Ok(())
    })
}

/// Hands each socket message one recv brought to `each`; true once the dump's end came.
fn each_message(
    mut bytes: &[u8],
    sequence: u32,
    each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<bool> {
    while bytes.len() >= NLMSG_HEADER_BYTES {
        let length = u32::from_ne_bytes(bytes[0..4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(bytes[4..6].try_into().unwrap());
        let message_sequence = u32::from_ne_bytes(bytes[8..12].try_into().unwrap());
        if length < NLMSG_HEADER_BYTES || length > bytes.len() {
            return Err(malformed("a message longer than what was received"));
        }
        let body = &bytes[NLMSG_HEADER_BYTES..length];
        if message_sequence == sequence {
            match i32::from(kind) {
                // A dump that failed part-way still ends with DONE, its errno in the body: the
                // table would be short, so it is an error (and /proc is read instead).
                libc::NLMSG_DONE => {
                    return match body.get(0..4).map(|b| i32::from_ne_bytes(b.try_into().unwrap())) {
                        Some(code) if code < 0 => Err(errno_error(code)),
                        _ => Ok(true),
                    };
                }
                libc::NLMSG_ERROR => {
                    return Err(match body.get(0..4).map(|b| i32::from_ne_bytes(b.try_into().unwrap())) {
                        Some(code) if code < 0 => errno_error(code),
                        _ => malformed("an error message without an error"),
                    });
                }
                _ if kind == SOCK_DIAG_BY_FAMILY => each(body)?,
                _ => {}
            }
        }
        // Messages are aligned to 4 bytes.
        let aligned = (length + 3) & !3;
        bytes = bytes.get(aligned..).unwrap_or_default();
    }
    Ok(false)
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {what}"))
}

/// The error of a negative errno from the kernel. i32::MIN has no positive twin: an errno no
/// kernel sends, kept as it is.
fn errno_error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code.checked_neg().unwrap_or(code))
}

/// One `inet_diag_msg`; `None` for one too short or of an unknown family or state.
pub(crate) fn parse_socket(body: &[u8]) -> Option<TableLine> {
    let body = body.get(..MESSAGE_BYTES)?;
    let (family, state, timer) = (body[0], body[1], body[2]);
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let address = |at: usize| -> Option<IpAddr> {
        match i32::from(family) {
            libc::AF_INET => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&body[at..at + 4]).ok()?))),
            libc::AF_INET6 => {
                Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&body[at..at + 16]).ok()?)))
            }
            _ => None,
        }
    };
    let word = |at: usize| u32::from_ne_bytes(body[at..at + 4].try_into().unwrap());
    let expires_ms = word(52);
    Some(TableLine {
        local: SocketAddr::new(address(8)?, port(4)),
        remote: SocketAddr::new(address(24)?, port(6)),
        state: TcpState::from_u8(state)?,
        time_wait_left_us: (timer == TIME_WAIT_TIMER).then(|| u64::from(expires_ms) * 1000),
        inode: u64::from(word(68)),
        uid: word(64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::fs::MetadataExt;

    fn inode(socket: &impl AsRawFd) -> u64 {
        std::fs::metadata(format!("/proc/self/fd/{}", socket.as_raw_fd())).unwrap().ino()
    }

    /// The held sockets on `port`, either end, as a sorted list. Sockets no process holds
    /// (TIME-WAIT) are left out: other tests and runs may have left some on the same port.
    fn on_port(lines: Vec<TableLine>, port: u16) -> Vec<(SocketAddr, SocketAddr, u8, u64)> {
        let mut found: Vec<_> = lines
            .into_iter()
            .filter(|l| l.inode != 0 && (l.local.port() == port || l.remote.port() == port))
            .map(|l| (l.local, l.remote, l.state as u8, l.inode))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_listener_its_connection_and_a_time_wait_socket_are_listed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server_address = listener.local_addr().unwrap();
        let client = TcpStream::connect(server_address).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let client_address = client.local_addr().unwrap();
        let lines = tcp_sockets_in(ALL_STATES).unwrap();
        let listed = |local: SocketAddr, remote: SocketAddr| {
            lines.iter().find(|line| line.local == local && line.remote == remote).cloned()
        };
        let listening = listed(server_address, "0.0.0.0:0".parse().unwrap()).expect("the listener");
        assert_eq!((listening.state, listening.inode), (TcpState::Listen, inode(&listener)));
        // SAFETY: geteuid cannot fail.
        assert_eq!(listening.uid, unsafe { libc::geteuid() });
        let connected = listed(client_address, server_address).expect("the client's end");
        assert_eq!((connected.state, connected.time_wait_left_us), (TcpState::Established, None));
        assert_eq!(connected.inode, inode(&client));

        // The side that closes first keeps the 4-tuple in TIME-WAIT, with no inode.
        drop(client);
        let mut buffer = [0u8; 1];
        assert_eq!(std::io::Read::read(&mut &accepted, &mut buffer).unwrap(), 0, "the FIN");
        drop(accepted);
        // The whole 4-tuple: an older TIME-WAIT from the same local port to another server
        // (other tests, other runs) may still be listed, with less time left.
        let time_wait = (0..1000)
            .find_map(|_| {
                let lines = tcp_sockets_in(ALL_STATES).unwrap();
                lines.into_iter().find(|l| {
                    (l.local, l.remote) == (client_address, server_address) && l.state == TcpState::TimeWait
                })
            })
            .expect("the client's end in TIME-WAIT");
        let left_us = time_wait.time_wait_left_us.expect("its time left");
        assert!(
            (50_000_000..=60_000_000).contains(&left_us),
            "60 s of TIME-WAIT, less a little: {left_us} us"
        );
        assert_eq!(time_wait.inode, 0);
    }

    #[test]
    fn sockets_read_as_the_proc_table_lists_them() {
        let listener = TcpListener::bind("[::1]:0").or_else(|_| TcpListener::bind("127.0.0.1:0")).unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _accepted = listener.accept().unwrap();
        let from_netlink = on_port(tcp_sockets_in(ALL_STATES).unwrap(), port);
        assert_eq!(from_netlink.len(), 3, "the listener and both ends: {from_netlink:?}");
        assert_eq!(from_netlink, on_port(crate::tcp_table::read_proc(None).unwrap(), port));
    }

    #[test]
    fn a_listening_only_reading_lists_the_listener_and_not_its_connections() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _accepted = listener.accept().unwrap();
        let listening = on_port(tcp_sockets_in(1 << TcpState::Listen.to_u8()).unwrap(), port);
        assert_eq!(listening.len(), 1, "{listening:?}");
        assert_eq!(listening[0].2, TcpState::Listen.to_u8());
        let read = crate::tcp_table::read_once_in(None, crate::tcp_table::States::Listening).unwrap();
        assert_eq!(on_port(read, port), listening);
    }

    /// 401 sockets of ~100 bytes each (the kernel adds attributes) are more than the ~32 KiB
    /// it puts in one receive (its first holds far fewer): the dump goes on.
    #[test]
    fn a_dump_longer_than_one_receive_lists_every_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held: Vec<_> = (0..200)
            .map(|_| {
                let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                (client, listener.accept().unwrap().0)
            })
            .collect();
        let listed = on_port(tcp_sockets_in(ALL_STATES).unwrap(), port);
        assert_eq!(listed.len(), 1 + 2 * held.len());
    }

    #[test]
    fn a_truncated_or_foreign_message_is_an_error_or_skipped() {
        let mut lines = Vec::new();
        let mut message = vec![0u8; NLMSG_HEADER_BYTES + 10];
        message[0..4].copy_from_slice(&((NLMSG_HEADER_BYTES + 10) as u32).to_ne_bytes());
        message[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        message[8..12].copy_from_slice(&7u32.to_ne_bytes());
        assert!(parse_messages(&message, 7, &mut lines).is_err(), "10 bytes are no inet_diag_msg");
        assert!(!parse_messages(&message, 8, &mut lines).unwrap(), "another request's message is skipped");
        let mut long = message.clone();
        long[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(parse_messages(&long, 7, &mut lines).is_err(), "a length past the end");
        assert!(lines.is_empty());
    }

    /// A message of `kind` answering request 3 whose body is `code`.
    fn coded(kind: i32, code: i32) -> Vec<u8> {
        let mut message = vec![0u8; NLMSG_HEADER_BYTES + 4];
        message[0..4].copy_from_slice(&((NLMSG_HEADER_BYTES + 4) as u32).to_ne_bytes());
        message[4..6].copy_from_slice(&(kind as u16).to_ne_bytes());
        message[8..12].copy_from_slice(&3u32.to_ne_bytes());
        message[16..20].copy_from_slice(&code.to_ne_bytes());
        message
    }

    /// Found by the socket_table fuzz target: NLMSG_ERROR with error code i32::MIN, whose
    /// negation overflowed.
    #[test]
    fn an_error_message_of_any_code_is_an_error() {
        for (code, errno) in
            [(-libc::EPERM, Some(libc::EPERM)), (i32::MIN, Some(i32::MIN)), (0, None), (5, None)]
        {
            let error = parse_messages(&coded(libc::NLMSG_ERROR, code), 3, &mut Vec::new()).unwrap_err();
            assert_eq!(error.raw_os_error(), errno, "code {code}");
        }
    }

    #[test]
    fn a_dump_that_ends_with_an_errno_is_an_error_not_a_short_table() {
        assert!(parse_messages(&coded(libc::NLMSG_DONE, 0), 3, &mut Vec::new()).unwrap());
        let error = parse_messages(&coded(libc::NLMSG_DONE, -libc::ENOBUFS), 3, &mut Vec::new()).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOBUFS));
    }
}
