//! Whether a port speaks TLS: asked when plain HTTP got nothing back, so the user learns to
//! write https:// instead of reading a page of closed connections.

use super::client::TlsClient;
use super::options::TlsOptions;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Opens one connection and starts a TLS handshake (no certificate check): true when the
/// server answers in TLS, with its hello or with an alert.
pub fn speaks_tls(address: SocketAddr, timeout: Duration) -> bool {
    let options = TlsOptions { insecure: true, ..TlsOptions::default() };
    let host = address.ip().to_string();
    let Ok(client) = TlsClient::new(&host, &options) else { return false };
    let Ok(stream) = TcpStream::connect_timeout(&address, timeout) else { return false };
    if stream.set_read_timeout(Some(timeout)).is_err() || stream.set_write_timeout(Some(timeout)).is_err() {
        return false;
    }
    let Ok(mut connection) = client.connect() else { return false };
    let mut stream = stream;
    let mut buffer = [0u8; 16 * 1024];
    while connection.is_handshaking() {
        if connection.wants_write() && connection.write_tls(&mut stream).is_err() {
            return false;
        }
        let n = match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let mut received = &buffer[..n];
        while !received.is_empty() {
            if connection.read_tls(&mut received).is_err() {
                return false;
            }
            match connection.process_new_packets() {
                Ok(_) => {}
                // An alert is still TLS, and so is a handshake that fails past the hello.
                Err(rustls::Error::AlertReceived(_)) => return true,
                Err(_) => return super::describe::looks_like_tls_record(&buffer[..n]),
            }
        }
    }
    true
}

/// One full handshake with `client` (its trust and ALPN offer): the protocol the server chose
/// by ALPN (None: it ignored ALPN), or the error in words. How a run learns whether an
/// https:// server speaks HTTP/2 before it opens its connections; its session is not kept
/// for the run to resume.
pub fn alpn_choice(
    address: SocketAddr,
    client: &TlsClient,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, String> {
    let stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    let client = client.without_resumption();
    let mut tls = client.blocking(stream).map_err(|e| super::describe::describe_tls_error(&e))?;
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).map_err(|e| {
            match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                Some(tls_error) => super::describe::describe_tls_error(tls_error),
                None => format!("TLS handshake: {e}"),
            }
        })?;
    }
    Ok(tls.conn.alpn_protocol().map(<[u8]>::to_vec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn a_plain_http_server_does_not_speak_tls() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let _ = socket.read(&mut [0u8; 1024]);
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        });
        assert!(!speaks_tls(address, Duration::from_secs(2)));
        server.join().unwrap();
    }

    #[test]
    fn nobody_listening_is_not_tls() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        assert!(!speaks_tls(address, Duration::from_millis(500)));
    }
}
