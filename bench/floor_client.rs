//! The least a load generator can spend per request here: keep-alive GETs on N connections,
//! one in flight each, no parsing (a response is its first one's length again), no
//! histograms, no server view. For bench/generator_floor.py, which sets nodelay's and wrk's
//! requests per CPU-second beside it. Not a tool: responses must all be the same length.
//!
//! Modes: `epoll` (a wake-up per ready batch); `uring` (readiness by io_uring multishot poll,
//! waiting for a batch of N/2 ready sockets or 500 µs, as `nodelay bench --io-uring` does);
//! `uring-stamped` (the same, reading with recvmsg and SO_TIMESTAMPNS, as `--io-uring` must
//! to time a held response by its arrival); `uring-multishot` (the reads and writes
//! themselves as ring operations, stamped: floor_multishot.rs).
//!
//! Usage: floor_client MODE HOST:PORT PATH CONNECTIONS SECONDS
//! Prints one JSON line: requests, seconds (its CPU time is measured from outside, as the
//! other generators' is).

mod floor_multishot;

use io_uring::{IoUring, opcode, types};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const READ_BYTES: usize = 4096;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Epoll,
    Uring,
    UringStamped,
    UringMultishot,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("floor_client: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, address, path, connections, seconds] = &args[..] else {
        return Err("usage: floor_client epoll|uring|uring-stamped|uring-multishot HOST:PORT PATH CONNECTIONS SECONDS".into());
    };
    let mode = match mode.as_str() {
        "epoll" => Mode::Epoll,
        "uring" => Mode::Uring,
        "uring-stamped" => Mode::UringStamped,
        "uring-multishot" => Mode::UringMultishot,
        other => return Err(format!("unknown mode '{other}'")),
    };
    let connections: usize =
        connections.parse().ok().filter(|&n| (1..=4096).contains(&n)).ok_or("CONNECTIONS: 1 to 4096")?;
    let seconds: f64 =
        seconds.parse().ok().filter(|&s| s > 0.0 && s <= 600.0).ok_or("SECONDS: above 0, at most 600")?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n").into_bytes();
    let mut streams = Vec::with_capacity(connections);
    for _ in 0..connections {
        let stream = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        streams.push(stream);
    }
    let response_bytes = learn_response_length(&mut streams[0], &request)?;
    for stream in &streams {
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        if matches!(mode, Mode::UringStamped | Mode::UringMultishot) {
            nodelay_engine::enable_arrival_stamps(stream.as_raw_fd())
                .map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
        }
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let requests = match mode {
        Mode::Epoll => run_epoll(&streams, &request, response_bytes, deadline)?,
        Mode::Uring | Mode::UringStamped => {
            run_uring(&streams, &request, response_bytes, deadline, mode == Mode::UringStamped)?
        }
        Mode::UringMultishot => floor_multishot::run(&streams, &request, response_bytes, deadline)?,
    };
    println!("{{\"requests\": {requests}, \"seconds\": {:.6}}}", started.elapsed().as_secs_f64());
    Ok(())
}

/// Sends one request and reads until the head's Content-Length is there: the length every
/// response must have.
fn learn_response_length(stream: &mut TcpStream, request: &[u8]) -> Result<usize, String> {
    stream.write_all(request).map_err(|e| e.to_string())?;
    let mut received = Vec::new();
    let mut buffer = [0u8; READ_BYTES];
    loop {
        let n = stream.read(&mut buffer).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed before its first response".into());
        }
        received.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&received);
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or("the first response has no Content-Length")?;
            if received.len() >= head_end + 4 + length {
                return Ok(head_end + 4 + length);
            }
        }
    }
}

/// The connections' progress: bytes of each one's current response, and responses counted.
struct Connections<'a> {
    streams: &'a [TcpStream],
    request: &'a [u8],
    response_bytes: usize,
    pending: Vec<usize>,
    buffer: Vec<u8>,
    requests: u64,
}

impl Connections<'_> {
    /// Reads what is there; counts a response each time a connection's bytes reach the
    /// length, then sends the next request. Stamped reads go through the engine's own
    /// recvmsg, as `--io-uring`'s do.
    fn on_readable(&mut self, index: usize, stamped: bool) -> Result<(), String> {
        let mut stream = &self.streams[index];
        let read = if stamped {
            nodelay_engine::read_stamped(stream.as_raw_fd(), &mut self.buffer).map(|(read, _stamp)| read)
        } else {
            stream.read(&mut self.buffer)
        };
        let read = match read {
            Ok(0) => return Err("the server closed a connection".into()),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(error) => return Err(format!("read: {error}")),
        };
        self.pending[index] += read;
        if self.pending[index] > self.response_bytes {
            return Err("a response longer than the first: responses must all be the same length".into());
        }
        if self.pending[index] == self.response_bytes {
            self.pending[index] = 0;
            self.requests += 1;
            // One request fits any send buffer: a short write is an error here.
            if stream.write(self.request).map_err(|e| format!("send: {e}"))? != self.request.len() {
                return Err("send: a short write".into());
            }
        }
        Ok(())
    }
}

fn connections<'a>(
    streams: &'a [TcpStream],
    request: &'a [u8],
    response_bytes: usize,
) -> Result<Connections<'a>, String> {
    for stream in streams {
        (&*stream).write_all(request).map_err(|e| e.to_string())?;
    }
    Ok(Connections {
        streams,
        request,
        response_bytes,
        pending: vec![0; streams.len()],
        buffer: vec![0; READ_BYTES],
        requests: 0,
    })
}

fn run_epoll(
    streams: &[TcpStream],
    request: &[u8],
    response_bytes: usize,
    deadline: Instant,
) -> Result<u64, String> {
    // SAFETY: epoll_create1 with no flags; the descriptor is closed at the end.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    for (index, stream) in streams.iter().enumerate() {
        let mut event =
            libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: index as u64 };
        // SAFETY: registers an open socket with a live event.
        unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, stream.as_raw_fd(), &mut event) };
    }
    let mut state = connections(streams, request, response_bytes)?;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; streams.len()];
    while Instant::now() < deadline {
        // SAFETY: waits into a live array of the length given.
        let ready = unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), events.len() as i32, 50) };
        for event in &events[..usize::try_from(ready).unwrap_or(0)] {
            state.on_readable(event.u64 as usize, false)?;
        }
    }
    // SAFETY: closes the descriptor made above, once.
    unsafe { libc::close(epoll) };
    Ok(state.requests)
}

fn run_uring(
    streams: &[TcpStream],
    request: &[u8],
    response_bytes: usize,
    deadline: Instant,
    stamped: bool,
) -> Result<u64, String> {
    let mut ring = batched_ring()?;
    for (index, stream) in streams.iter().enumerate() {
        let poll = opcode::PollAdd::new(types::Fd(stream.as_raw_fd()), libc::POLLIN as u32).multi(true);
        // SAFETY: the socket outlives the ring's use of it (both end with this function).
        unsafe { ring.submission().push(&poll.build().user_data(index as u64)) }.map_err(|_| "ring full")?;
    }
    let mut state = connections(streams, request, response_bytes)?;
    while Instant::now() < deadline {
        submit_and_wait_batch(&mut ring, streams.len())?;
        let ready: Vec<(usize, bool)> =
            ring.completion().map(|c| (c.user_data() as usize, io_uring::cqueue::more(c.flags()))).collect();
        for (index, more) in ready {
            if !more {
                return Err("a multishot poll ended".into());
            }
            state.on_readable(index, stamped)?;
        }
    }
    Ok(state.requests)
}

/// A ring that waits as `nodelay bench --io-uring`'s does: one submitter, its task work run
/// in its own waits (IORING_SETUP_DEFER_TASKRUN), which is what lets a wait hold out.
fn batched_ring() -> Result<IoUring, String> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .build(4096)
        .map_err(|e| format!("io_uring: {e}"))
}

/// Submits what is queued and waits for half the connections' completions (at most 64), or
/// for one once 500 µs have passed, 50 ms at most: `--io-uring`'s batched wait.
fn submit_and_wait_batch(ring: &mut IoUring, connections: usize) -> Result<(), String> {
    let want = (connections / 2).clamp(1, 64);
    let timeout = types::Timespec::new().nsec(50_000_000);
    let arguments = types::SubmitArgs::new().timespec(&timeout).min_wait_usec(500);
    match ring.submitter().submit_with_args(want, &arguments) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => Ok(()),
        Err(e) => Err(format!("io_uring_enter: {e}")),
    }
}
