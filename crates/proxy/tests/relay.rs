//! The relay against real sockets on loopback, in one process: bytes pass unchanged both
//! ways with half-closes, HTTP exchanges are timed per leg, and an upstream that refuses is
//! a record, not an error. The command-line tests (crates/cli/tests/suite/proxy.rs) cover load.

use nodelay_proxy::{CollectingSink, ConnectFailure, Framing, Relay, RelayConfig, StopReason, Unfinished};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A relay running on its own thread until `stop` is set; joined for its records.
struct Running {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(CollectingSink, StopReason)>,
}

impl Running {
    fn start(config: RelayConfig) -> Running {
        let relay = Relay::bind("127.0.0.1:0".parse().unwrap(), config).expect("bind");
        let address = relay.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut sink = CollectingSink::default();
            let end = relay.run(&mut sink, || flag.load(Ordering::SeqCst)).expect("relay runs");
            (sink, end.stopped_by)
        });
        Running { address, stop, thread }
    }

    fn finish(self) -> (CollectingSink, StopReason) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("relay thread")
    }
}

/// Echoes every connection's bytes back until it ends, then ends its own direction.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    if stream.write_all(&buffer[..n]).is_err() {
                        return;
                    }
                }
                let _ = stream.shutdown(Shutdown::Write);
            });
        }
    });
    address
}

#[test]
fn a_megabyte_passes_both_ways_unchanged_and_the_half_close_with_it() {
    let relay = Running::start(RelayConfig::new(echo_server()));
    let mut client = TcpStream::connect(relay.address).unwrap();
    let payload: Vec<u8> = (0..1_500_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut reader = client.try_clone().unwrap();
    let expected = payload.len();
    let reading = std::thread::spawn(move || {
        let mut received = Vec::with_capacity(expected);
        reader.read_to_end(&mut received).map(|_| received)
    });
    client.write_all(&payload).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    let received = reading.join().unwrap().expect("read until the relay passes the upstream's end on");
    assert!(received == payload, "{} bytes back of {}", received.len(), payload.len());
    drop(client);
    let (sink, _) = relay.finish();
    let connection = &sink.connections[0];
    assert_eq!((connection.client_bytes, connection.upstream_bytes), (expected as u64, expected as u64));
    assert_eq!(connection.framing, Some(Framing::Turns));
    assert!(connection.client_tcp_info.is_some() || !nodelay_tcp::KERNEL_TCP_FIGURES);
}

#[test]
fn an_upstream_pause_inside_a_response_is_timed_on_the_upstream_leg() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buffer = [0u8; 4096];
        let mut pending = Vec::new();
        while let Ok(n @ 1..) = stream.read(&mut buffer) {
            pending.extend_from_slice(&buffer[..n]);
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                pending.drain(..end + 4);
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").unwrap();
                // The upstream's own pause between head and body: what the relay must see.
                std::thread::sleep(Duration::from_millis(40));
                stream.write_all(b"hello").unwrap();
            }
        }
    });
    let relay = Running::start(RelayConfig::new(upstream));
    let mut client = TcpStream::connect(relay.address).unwrap();
    for _ in 0..2 {
        client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = [0u8; 43];
        client.read_exact(&mut response).unwrap();
        assert!(response.ends_with(b"hello"));
    }
    drop(client);
    let (sink, _) = relay.finish();
    assert_eq!(sink.exchanges.len(), 2, "{:?}", sink.incomplete);
    for exchange in &sink.exchanges {
        assert_eq!((exchange.framing, exchange.status), (Framing::Http, 200));
        assert_eq!(exchange.response.reads, 2);
        // Less than the 40 ms slept when the head itself was read late on a busy machine.
        assert!(exchange.response.max_gap >= Duration::from_millis(25), "{exchange:?}");
        assert_eq!(exchange.response.bytes_before_max_gap, 38);
        // The forwarded time is taken once write() returns, so a relay preempted there on a
        // busy machine moves part of the 40 ms to its own side; the whole span cannot shrink.
        assert!(exchange.upstream() >= Duration::from_millis(25), "{exchange:?}");
        let request_to_response_end = exchange.response.last.duration_since(exchange.request.last);
        assert!(request_to_response_end >= Duration::from_millis(39), "{exchange:?}");
        assert!(exchange.client_leg() < Duration::from_millis(20), "{:?}", exchange.client_leg());
    }
}

#[test]
fn a_refused_upstream_closes_the_client_and_is_recorded() {
    // A port bound but not listening: refused, and no other test can take it meanwhile.
    let bound = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    bound.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
    let closed = bound.local_addr().unwrap().as_socket().unwrap();
    let relay = Running::start(RelayConfig::new(closed));
    let mut client = TcpStream::connect(relay.address).unwrap();
    let _ = client.write_all(b"GET / HTTP/1.1\r\n\r\n");
    let mut rest = Vec::new();
    // EOF or a reset: either way the relay closed it.
    let _ = client.read_to_end(&mut rest);
    assert!(rest.is_empty());
    let (sink, stopped_by) = relay.finish();
    assert_eq!(stopped_by, StopReason::Signal);
    assert_eq!(sink.connect_failures.len(), 1);
    assert_eq!(sink.connect_failures[0].kind, ConnectFailure::Refused);
    assert!(sink.connect_failures[0].message.contains(&closed.to_string()), "{:?}", sink.connect_failures);
}

#[test]
fn the_exchange_count_stops_the_relay_and_what_is_in_flight_is_counted() {
    let mut config = RelayConfig::new(echo_server());
    config.max_exchanges = Some(3);
    let relay = Running::start(config);
    let mut client = TcpStream::connect(relay.address).unwrap();
    // Turns: each exchange ends when the client speaks again.
    for turn in 0..3u8 {
        client.write_all(&[turn; 10]).unwrap();
        let mut back = [0u8; 10];
        client.read_exact(&mut back).unwrap();
        assert_eq!(back, [turn; 10]);
    }
    // Speaking again ends the third exchange: the relay stops by itself and closes the
    // connection, this last turn in flight.
    client.write_all(b"x").unwrap();
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest);
    let (sink, stopped_by) = relay.thread.join().unwrap();
    assert_eq!(stopped_by, StopReason::Exchanges);
    assert_eq!(sink.exchanges.len(), 3);
    assert!(sink.incomplete.iter().all(|i| i.why == Unfinished::InFlightAtStop), "{:?}", sink.incomplete);
}
