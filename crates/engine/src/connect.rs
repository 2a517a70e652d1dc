//! Non-blocking TCP connects, shared by the HTTP/1.1 loop (worker.rs) and the HTTP/2 one
//! (h2/worker.rs): the socket made and the connect started, then, at its first event, whether
//! it finished, and a failure named the same way by both. The TLS handshake that follows is
//! `tls::handshake`, also shared.

use crate::limits::out_of_descriptors_message;
use crate::record::ErrorKind;
use mio::net::TcpStream;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;

/// A non-blocking socket to `address` (TCP_NODELAY as `nodelay` says), its connect started;
/// `true` when the connect completed at once.
pub(crate) fn start(address: SocketAddr, nodelay: bool) -> io::Result<(Socket, bool)> {
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_tcp_nodelay(nodelay)?;
    let connected = match socket.connect(&address.into()) {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
        Err(e) => return Err(e),
    };
    Ok((socket, connected))
}

/// At an event of a connecting socket: `Ok(true)` connected, `Ok(false)` still connecting,
/// or the connect's error.
pub(crate) fn outcome(stream: &TcpStream) -> io::Result<bool> {
    match stream.take_error() {
        Ok(Some(e)) | Err(e) => Err(e),
        Ok(None) => match stream.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        },
    }
}

/// A connect that failed, as the run records it: its kind and one line. Out of descriptors
/// says which limit and how far the run needs it; out of local ports names EADDRNOTAVAIL.
pub(crate) fn failure(error: &io::Error, connections: usize, threads: usize) -> (ErrorKind, String) {
    let kind = ErrorKind::from_io(error, true);
    let message = match kind {
        ErrorKind::OutOfFiles => out_of_descriptors_message(connections as u64, threads as u64, error),
        ErrorKind::PortsExhausted => {
            "connect: no local port free for a new connection (EADDRNOTAVAIL)".to_string()
        }
        _ => format!("connect: {error}"),
    };
    (kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_connect_is_named_the_same_way_by_both_loops() {
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(failure(&refused, 1, 1), (ErrorKind::ConnectRefused, format!("connect: {refused}")));
        let no_port = io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        let (kind, message) = failure(&no_port, 1, 1);
        assert_eq!(kind, ErrorKind::PortsExhausted);
        assert!(message.contains("EADDRNOTAVAIL"), "{message}");
        let out_of_files = io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(failure(&out_of_files, 100, 2).0, ErrorKind::OutOfFiles);
    }
}
