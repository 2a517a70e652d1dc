//! `nodelay watch`'s flags, converted to the library's [`WatchOptions`].

use nodelay_watch::{WatchOptions, parse_duration, parse_port, prometheus::parse_listen_addr};
use std::net::SocketAddr;
use std::time::Duration;

/// `nodelay watch`: find the stalls in a live host's TCP without sending a request.
#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// Capture on this interface: any (all of them), lo (loopback), eth0...
    #[arg(short = 'i', long = "interface", value_name = "IFACE", default_value = "any")]
    pub interface: String,

    /// Follow only TCP connections with this port on either side (server or client port);
    /// repeat or comma-separate for several [default: every port]
    #[arg(long = "port", value_name = "P", value_delimiter = ',', value_parser = parse_port)]
    pub ports: Vec<u16>,

    /// Follow only the sockets of this process: its listening ports are captured, and only
    /// stalls on its connections are reported
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub pid: Option<u32>,

    /// Stop after this long (10s, 5m, 1h; a bare number is seconds) and print the summary
    /// [default: until Ctrl-C]
    #[arg(long, short = 'd', value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// One JSON object per line for each event (finding, summary every second, final
    /// summary), as schema/watch.schema.json documents, instead of text
    #[arg(long)]
    pub json_lines: bool,

    /// Serve Prometheus metrics on http://ADDR/metrics, e.g. 127.0.0.1:9464 or :9464
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_addr)]
    pub prometheus: Option<SocketAddr>,
}

impl From<&WatchArgs> for WatchOptions {
    fn from(args: &WatchArgs) -> Self {
        let WatchArgs { interface, ports, pid, duration, json_lines, prometheus } = args.clone();
        WatchOptions { interface, ports, pid, duration, json_lines, prometheus }
    }
}
