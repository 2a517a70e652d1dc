//! `nodelay watch`'s flags, converted to the library's [`WatchOptions`].

use nodelay_watch::{Source, WatchOptions, parse_duration, parse_port, prometheus::parse_listen_addr};
use std::net::SocketAddr;
use std::time::Duration;

/// `nodelay watch`: find the stalls in a live host's TCP without sending a request.
#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// Where to read the host's TCP: ebpf (programs in the kernel time each hold; root, or
    /// CAP_BPF with CAP_PERFMON), capture (packets; root or CAP_NET_RAW), or auto: ebpf where
    /// allowed, else capture, else socket states only
    #[arg(long, value_enum, value_name = "SOURCE", default_value = "auto")]
    pub source: SourceArg,

    /// Capture on this interface: any (all of them), lo (loopback), eth0...
    #[arg(short = 'i', long = "interface", value_name = "IFACE", default_value = "any")]
    pub interface: String,

    /// Follow only TCP connections with this port on either side (server or client port);
    /// repeat or comma-separate for several [default: every port]
    #[arg(id = "port", long = "port", value_name = "P", value_delimiter = ',', value_parser = parse_port)]
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

/// `--source`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceArg {
    /// eBPF where allowed (and no interface named), else a capture, else socket states.
    Auto,
    /// The kernel's eBPF programs, or fail saying why.
    Ebpf,
    /// A packet capture (socket states only without capture rights).
    Capture,
}

impl WatchArgs {
    /// The flags' combinations clap cannot check: an interface is a capture's.
    pub fn check(&self) -> Result<(), String> {
        if self.source == SourceArg::Ebpf && self.interface != "any" {
            return Err(format!(
                "--interface {} needs --source capture: the kernel's programs see every interface",
                self.interface
            ));
        }
        Ok(())
    }
}

impl From<&WatchArgs> for WatchOptions {
    fn from(args: &WatchArgs) -> Self {
        let WatchArgs { source, interface, ports, pid, duration, json_lines, prometheus } = args.clone();
        let source = match source {
            // A named interface is one to capture on.
            SourceArg::Auto if interface != "any" => Source::Capture,
            SourceArg::Auto => Source::Auto,
            SourceArg::Ebpf => Source::Ebpf,
            SourceArg::Capture => Source::Capture,
        };
        WatchOptions { source, interface, ports, pid, duration, json_lines, prometheus }
    }
}
