//! Non-blocking TCP connects, shared by the HTTP/1.1 loop (worker.rs) and the HTTP/2 one
//! (h2/worker.rs): the socket made and the connect started, then, at its first event, whether
//! it finished.

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
