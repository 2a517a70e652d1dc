//! What one engine run does: target, request bytes, concurrency, bounds and socket options.

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub address: SocketAddr,
    /// The encoded request, sent as-is for every request.
    pub request: Vec<u8>,
    /// The request is HEAD: responses carry no body.
    pub request_expects_no_body: bool,
    pub connections: usize,
    pub threads: usize,
    /// Stop after this many requests (completed or failed).
    pub max_requests: Option<u64>,
    /// Stop issuing after this long; requests still in flight then are not counted.
    pub duration: Option<Duration>,
    /// Open loop: requests are due at this rate overall, latency counted from when due.
    pub rate_per_second: Option<f64>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// `false`: a new connection for every request.
    pub keep_alive: bool,
    pub socket: SocketOptions,
    /// Byte counts of the leading writes a request is split into (the rest goes in a last
    /// write); empty sends every request in one write.
    pub write_split: Vec<usize>,
    pub max_head_bytes: usize,
}

/// Socket options set on every client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// TCP_NODELAY on the client socket. On by default so the client is never the cause.
    pub nodelay: bool,
    /// Set TCP_QUICKACK after every read: the client never delays its ACKs, which removes a
    /// server-side Nagle stall (the doctor's experiment).
    pub quickack_after_read: bool,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions { nodelay: true, quickack_after_read: false }
    }
}

impl EngineConfig {
    /// A closed-loop, keep-alive run of `max_requests` on `connections` connections.
    pub fn new(address: SocketAddr, request: Vec<u8>) -> Self {
        EngineConfig {
            address,
            request,
            request_expects_no_body: false,
            connections: 1,
            threads: 1,
            max_requests: None,
            duration: Some(Duration::from_secs(10)),
            rate_per_second: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            keep_alive: true,
            socket: SocketOptions::default(),
            write_split: Vec::new(),
            max_head_bytes: 64 * 1024,
        }
    }

    /// Ends of each write of a request, the last being the request's length.
    pub(crate) fn write_boundaries(&self) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut end = 0;
        for &piece in &self.write_split {
            end += piece;
            if end >= self.request.len() {
                break;
            }
            ends.push(end);
        }
        ends.push(self.request.len());
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_boundaries_end_at_request_length() {
        let mut config = EngineConfig::new("127.0.0.1:1".parse().unwrap(), vec![0; 100]);
        assert_eq!(config.write_boundaries(), vec![100]);
        config.write_split = vec![40];
        assert_eq!(config.write_boundaries(), vec![40, 100]);
        config.write_split = vec![40, 30, 500];
        assert_eq!(config.write_boundaries(), vec![40, 70, 100]);
    }
}
