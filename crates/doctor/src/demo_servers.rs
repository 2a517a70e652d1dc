//! Small HTTP/1.1 servers embedded in nodelay for `nodelay demo`: each shows one behaviour
//! (a Nagle stall, its fix, a connection per request, a slow handler) on loopback port 0.
//! Blocking std sockets, a thread per connection: simple, like the servers users run.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// What a demo server does wrong, or right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoBehaviour {
    /// Head and body in two writes, Nagle on: the classic stall.
    SplitWrites,
    /// The same two writes with TCP_NODELAY: the fix.
    SplitWritesNoDelay,
    /// Answers, then closes the connection every time.
    CloseEveryResponse,
    /// Thinks for a fixed time before answering in one write.
    SlowHandler(Duration),
}

impl DemoBehaviour {
    /// One line saying what the server does, for the demo's table.
    pub fn describe(self) -> String {
        match self {
            DemoBehaviour::SplitWrites => "head and body in two writes, Nagle on".into(),
            DemoBehaviour::SplitWritesNoDelay => "the same two writes with TCP_NODELAY set".into(),
            DemoBehaviour::CloseEveryResponse => "closes the connection after each reply".into(),
            DemoBehaviour::SlowHandler(think) => {
                format!("handler thinks {} ms, one write", think.as_millis())
            }
        }
    }
}

const BODY: &[u8] = b"Hello, world!";

/// Starts a server on 127.0.0.1:0 on a background thread; it lives as long as the process.
pub fn start_demo_server(behaviour: DemoBehaviour) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                // A client hanging up is normal here.
                let _ = serve(stream, behaviour);
            });
        }
    });
    Ok(address)
}

fn serve(stream: TcpStream, behaviour: DemoBehaviour) -> io::Result<()> {
    stream.set_nodelay(behaviour == DemoBehaviour::SplitWritesNoDelay)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some(client_closes) = read_request(&mut reader)? {
        let close = behaviour == DemoBehaviour::CloseEveryResponse || client_closes;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
            BODY.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        match behaviour {
            DemoBehaviour::SplitWrites
            | DemoBehaviour::SplitWritesNoDelay
            | DemoBehaviour::CloseEveryResponse => {
                writer.write_all(head.as_bytes())?;
                writer.write_all(BODY)?;
            }
            DemoBehaviour::SlowHandler(think) => {
                std::thread::sleep(think);
                writer.write_all(&[head.as_bytes(), BODY].concat())?;
            }
        }
        if close {
            return Ok(());
        }
    }
    Ok(())
}

/// Reads one request (head and Content-Length body): whether the client wants the connection
/// closed after it (HTTP/1.0 without keep-alive, or `Connection: close`); `None` at a clean
/// end of stream.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<bool>> {
    let mut content_length = 0usize;
    let mut line = String::new();
    let mut first = true;
    let mut close = false;
    let mut keep_alive = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return if first { Ok(None) } else { Err(io::ErrorKind::UnexpectedEof.into()) };
        }
        let trimmed = line.trim_end();
        if first {
            close = trimmed.ends_with("HTTP/1.0");
        }
        first = false;
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().map_err(|_| io::Error::other("bad Content-Length"))?;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("connection")
        {
            keep_alive |= value.trim().eq_ignore_ascii_case("keep-alive");
            close |= value.trim().eq_ignore_ascii_case("close");
        }
    }
    io::copy(&mut reader.take(content_length as u64), &mut io::sink())?;
    Ok(Some(close && !keep_alive))
}
