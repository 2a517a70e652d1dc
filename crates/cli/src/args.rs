//! Command-line arguments (clap derive). Defaults are stated in each option's help.

mod shared;
mod watch;

use clap::{Args, Parser, Subcommand};
use nodelay_load::values;
pub use shared::{GateArgs, ProtocolArgs, TlsArgs};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
pub use watch::{SourceArg, WatchArgs};

#[derive(Debug, Parser)]
#[command(
    name = "nodelay",
    version,
    // Help fits 80 columns, as every other output does when not on a wider terminal.
    max_term_width = 80,
    about = "Why is my request/response service slow when the CPU is idle? nodelay measures and explains.",
    after_help = "Exit status: 0 success (doctor: healthy), 1 nothing could be measured, 2 bad arguments, 3 doctor, pcap, proxy or watch made a finding (fix: the program turns TCP_NODELAY off again on new connections), 4 bench, doctor or compare crossed a --fail-if threshold; exec: the program's own, 126 or 127 if it cannot be run."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The commands that take numbers take negative ones too (`allow_negative_numbers`): a value
/// its parser refuses by name ("'-1' is negative"), not an unknown flag.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load-test a URL (HTTP/1.1, HTTP/2 with --h2 or by ALPN, gRPC with --grpc) with keep-alive
    /// connections, timing every read of every response
    #[command(allow_negative_numbers = true)]
    Bench(Box<BenchArgs>),
    /// Diagnose why requests are slow: measure, run experiments, name the cause, show the fix
    #[command(allow_negative_numbers = true)]
    Doctor(Box<DoctorArgs>),
    /// Find Nagle × delayed-ACK stalls in a packet capture (pcap or pcapng) taken anywhere
    #[command(allow_negative_numbers = true)]
    Pcap(Box<PcapArgs>),
    /// A running program's TCP sockets: TCP_NODELAY, TCP_CORK, RTT, delayed-ACK timeout
    Inspect(SocketsArgs),
    /// Set TCP_NODELAY on a running program's sockets, without a restart
    Fix(FixArgs),
    /// Start embedded servers on loopback and show a Nagle stall next to its fix (no arguments)
    Demo,
    /// Run a program with TCP_NODELAY forced on every TCP socket it opens or accepts
    Exec(ExecArgs),
    /// Relay TCP between clients and one upstream, timing every exchange on both legs, and say
    /// where the time goes and which side stalls
    #[command(allow_negative_numbers = true)]
    Proxy(Box<ProxyArgs>),
    /// Measure several targets in interleaved rounds and say whether and by how much they differ
    #[command(allow_negative_numbers = true)]
    Compare(Box<CompareArgs>),
    /// Find the stalls in this host's live TCP traffic without sending a request, by process
    Watch(Box<WatchArgs>),
    /// Print saved runs as text or draw them on one HTML page, or merge interval logs of many machines
    Report(Box<ReportArgs>),
    /// Print the JSON Schema of a command's --json output
    Schema {
        #[arg(value_enum)]
        command: SchemaName,
    },
    /// Print a shell completion script: nodelay completions bash > /etc/bash_completion.d/nodelay
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff), one per command as git has them: nodelay man > nodelay.1,
    /// nodelay man bench > nodelay-bench.1
    Man {
        /// The command whose page to print, e.g. bench or report merge [default: nodelay's]
        command: Vec<String>,
        /// Write every page (nodelay.1, nodelay-bench.1, ...) into DIR instead
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        dir: Option<PathBuf>,
    },
}

/// Commands whose --json output has a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaName {
    Bench,
    Doctor,
    Pcap,
    Inspect,
    Fix,
    Proxy,
    Compare,
    Merge,
    Watch,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Target: http:// or https://HOST:PORT/PATH?QUERY (a name such as localhost, IPv4, or
    /// [IPv6]), or tcp://HOST:PORT with --send and --frame
    pub url: String,

    #[command(flatten)]
    pub load: LoadArgs,

    /// Print the result as JSON (its JSON Schema: nodelay schema bench) on stdout instead of text
    #[arg(long)]
    pub json: bool,

    /// Also write the JSON result to FILE
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Write the run as one self-contained HTML page (plots inline, nothing fetched) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the per-interval latency histograms to FILE in HdrHistogram's interval-log format
    /// (for `nodelay report merge` across load machines, or HdrHistogram's own tools)
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    #[command(flatten)]
    pub server_view: ServerViewArgs,

    #[command(flatten)]
    pub gate: GateArgs,

    /// No progress bar
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// How to load a target: shared by bench and compare.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Concurrent connections
    #[arg(short = 'c', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub connections: u32,

    /// Stop after N requests, completed or failed [default: run for --duration]
    #[arg(short = 'n', long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Stop after this long, e.g. 10s, 500ms, 1m; a bare number is seconds, as in wrk (-z as in
    /// hey and oha) [default: 10s unless -n is given]
    #[arg(short = 'd', long, visible_short_alias = 'z', value_parser = values::parse_duration)]
    pub duration: Option<Duration>,

    /// Worker threads, each with its own event loop [default: number of cores]
    #[arg(short = 't', long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,

    /// Open loop: R requests/s in total, latency counted from when each request was due
    /// (corrects coordinated omission) [default: closed loop, as fast as responses come]
    #[arg(long, value_name = "R", value_parser = values::parse_rate)]
    pub rate: Option<f64>,

    #[command(flatten)]
    pub request: RequestArgs,

    /// Longest wait for a complete response
    #[arg(long, default_value = "10s", value_parser = values::parse_duration)]
    pub timeout: Duration,

    /// Longest wait for a connection to open (TCP, then the TLS handshake for https://)
    #[arg(long, default_value = "3s", value_parser = values::parse_duration)]
    pub connect_timeout: Duration,

    /// Open a new connection for every request (sends Connection: close)
    #[arg(long)]
    pub no_keepalive: bool,

    /// HTTP statuses that count as success, as classes and codes, e.g. 2xx,3xx,404; the others
    /// are counted apart as non-success (an error page)
    #[arg(long, value_name = "LIST", default_value = "2xx,3xx", value_parser = nodelay_report::SuccessStatuses::parse)]
    pub success_status: nodelay_report::SuccessStatuses,

    /// Length of one interval of the time series (req/s, errors, p50 and p99 per interval)
    #[arg(long, default_value = "1s", value_parser = values::parse_interval)]
    pub interval: Duration,

    /// Poll without sleeping, so the server never has to wake the generator: a fast server
    /// (nginx) then serves ~10 % more, for a whole core per thread (give the generator cores of
    /// its own). --busy-poll=TIME spins that long after each event, then sleeps: shorter than
    /// the gap between responses it gains nothing, longer it spins nearly all the time
    #[arg(long, value_name = "TIME", num_args = 0..=1, require_equals = true, default_missing_value = "always", value_parser = values::parse_busy_poll)]
    pub busy_poll: Option<nodelay_engine::BusyPoll>,

    /// Require io_uring's loop (Linux 6.12+; refused: a warning, and epoll's timer-batched waits), the
    /// default for closed-loop keep-alive runs of 4+ connections per thread: a wake-up per burst of
    /// responses, timed by arrival
    #[arg(long, num_args = 0, default_missing_value = "true", conflicts_with = "busy_poll")]
    #[arg(default_value_if("epoll", "true", "false"))]
    pub io_uring: Option<bool>,

    /// Wait with epoll, a wake-up per ready socket, as wrk and oha do (the text and the JSON's
    /// settings.event_loop say which loop ran and why)
    #[arg(long, conflicts_with = "io_uring")]
    pub epoll: bool,
}

/// Whether and how to read the server's side of a run (bench, doctor).
#[derive(Debug, Clone, Default, Args)]
pub struct ServerViewArgs {
    /// The server's process ID, for its CPU, threads and upstream connections [default: the
    /// process listening on the target's port, when the target is on this machine]
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    /// Do not read the server's side of the run from /proc (CPU per request, busy threads,
    /// upstream connections, CPU pressure)
    #[arg(long, conflicts_with = "pid")]
    pub no_server_view: bool,
}

/// What to send: shared by every command that sends requests.
#[derive(Debug, Clone, Default, Args)]
pub struct RequestArgs {
    /// HTTP method [default: GET, or POST when --body is given]
    #[arg(short = 'm', long)]
    pub method: Option<String>,

    /// Extra request header 'Name: value' (repeatable); 'Name:' with no value sends no such
    /// header, not even the one nodelay adds itself (Host, User-Agent), as curl does
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = values::parse_header)]
    pub headers: Vec<(String, String)>,

    /// Request body; @FILE reads it from a file
    #[arg(short = 'b', long)]
    pub body: Option<String>,

    /// HTTP only: a TOML file of named requests (weighted mix or fixed sequence), sent against
    /// the URL's host; figures are reported per request name
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "body"])]
    pub scenario: Option<PathBuf>,

    /// tcp:// only: the request bytes, with escapes such as \r\n and \x00, or @FILE
    #[arg(long, value_name = "BYTES")]
    pub send: Option<String>,

    /// tcp:// only: how a response ends: line, crlf, delim:<bytes>, fixed:N, len16be, len32be,
    /// len32le (length prefixes take :inclusive when the length counts the prefix itself)
    #[arg(long, value_name = "FRAMING")]
    pub frame: Option<String>,

    /// A response longer than this many bytes (head and body) is malformed [default: 1048576
    /// for tcp://; unbounded for http://, whose bodies are counted, never stored]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_response: Option<u64>,

    /// Send each request in several writes with Nagle left on, as many real clients do:
    /// byte counts of the leading writes, e.g. 40,rest (header then body)
    #[arg(long, value_name = "SIZES", value_parser = nodelay_load::parse_write_split)]
    pub write_split: Option<nodelay_load::WriteSplit>,

    #[command(flatten)]
    pub tls: TlsArgs,

    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

/// `nodelay doctor`: measure, experiment, explain.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Target: http:// or https://HOST:PORT/PATH?QUERY, or tcp://HOST:PORT with --send and --frame
    pub url: String,

    /// Longest the whole diagnosis may take (at least 100ms)
    #[arg(long, default_value = "10s", value_parser = values::parse_budget)]
    pub budget: Duration,

    /// Connections open at once, for the baseline and each experiment: more than one shows what
    /// concurrency does (a listen queue that overflows: new connections wait 1 s)
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub connections: u32,

    #[command(flatten)]
    pub request: RequestArgs,

    /// Longest wait for one response
    #[arg(long, default_value = "5s", value_parser = values::parse_duration)]
    pub timeout: Duration,

    #[command(flatten)]
    pub gate: GateArgs,

    /// Print the diagnosis as JSON (its JSON Schema: nodelay schema doctor) on stdout instead of text
    #[arg(long)]
    pub json: bool,

    /// After a proven server-side Nagle stall on a server of this machine, set TCP_NODELAY on
    /// its listening socket, measure again on a fresh connection, then set it back
    #[arg(long)]
    pub try_fix: bool,

    /// Last, leave one keep-alive connection idle and measure when the server closes it (and
    /// whether it announces Keep-Alive: timeout=); waits at most what is left of --budget
    #[arg(long)]
    pub idle_probe: bool,

    /// With --try-fix: leave TCP_NODELAY on afterwards
    #[arg(long, requires = "try_fix")]
    pub keep_fix: bool,

    /// Write the result as one self-contained HTML page (plots inline, nothing fetched) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub server_view: ServerViewArgs,
}

/// `nodelay pcap`: stalls in a capture.
#[derive(Debug, Clone, Args)]
pub struct PcapArgs {
    /// A pcap or pcapng file (tcpdump -w, dumpcap, Wireshark), gzip-compressed or not; - reads
    /// standard input (tcpdump -U -w - ... | nodelay pcap -)
    pub file: PathBuf,

    /// Only flows with this port on either side (PORT), this endpoint on either side
    /// (IP:PORT, IPv6 as [::1]:80) or this pair (IP:PORT-IP:PORT)
    #[arg(long, value_name = "FLOW", value_parser = nodelay_capture::FlowFilter::parse)]
    pub flow: Option<nodelay_capture::FlowFilter>,

    /// How many flows with stalls to list, most time lost first
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub top: u32,

    /// Print the analysis as JSON (its JSON Schema: nodelay schema pcap) on stdout instead of text
    #[arg(long)]
    pub json: bool,

    /// Write the result as one self-contained HTML page (plots inline, nothing fetched) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `nodelay compare`: targets measured in interleaved rounds, side by side.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Targets, as bench takes them, or runs saved by compare --json (RUN.json, or
    /// RUN.json#LABEL of several); each is set against the first. One alone is measured in
    /// rounds, to be saved as a baseline
    #[arg(value_name = "URL|RUN.json", num_args = 1.., required = true)]
    pub urls: Vec<String>,

    /// The target the others are set against, before them (as the first target would be)
    #[arg(long, value_name = "URL|RUN.json")]
    pub baseline: Option<String>,

    /// Rounds per target, interleaved (A B A B ...), each as long as -d or -n
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=100))]
    pub rounds: u32,

    /// Names for the targets, comma-separated, in order [default: A, B, C, ...]
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub labels: Vec<String>,

    /// Also run the doctor on each target and show the findings side by side
    #[arg(long)]
    pub diagnose: bool,

    #[command(flatten)]
    pub load: LoadArgs,

    /// Print the comparison as JSON (its JSON Schema: nodelay schema compare) on stdout instead
    /// of text
    #[arg(long)]
    pub json: bool,

    /// Write the result as one self-contained HTML page (plots inline, nothing fetched) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub server_view: ServerViewArgs,

    #[command(flatten)]
    pub gate: GateArgs,

    /// No progress bar
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// `nodelay report`: saved runs printed or drawn together, or interval logs merged.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub merge: Option<ReportCommand>,

    /// Runs saved with --json or --export-json (bench, compare, doctor, pcap, proxy, report merge)
    #[arg(value_name = "RUN.json", required = true)]
    pub runs: Vec<PathBuf>,

    /// Write the runs as one self-contained HTML page to FILE (not proxy runs) instead of text
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Combine HdrHistogram interval logs (bench --hdr-log) from any number of load machines
    /// into one report, losslessly
    Merge(MergeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Interval logs written by nodelay bench --hdr-log
    #[arg(value_name = "LOG", required = true)]
    pub logs: Vec<PathBuf>,

    /// Print the merged report as JSON (its JSON Schema: nodelay schema merge) instead of text
    #[arg(long)]
    pub json: bool,

    /// Write the result as one self-contained HTML page (plots inline, nothing fetched) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `nodelay inspect`: which process, and how to print.
#[derive(Debug, Clone, Args)]
pub struct SocketsArgs {
    /// A process ID, or :PORT for the processes listening on that local TCP port (the
    /// listening sockets and the connections they accepted). Needs root, CAP_SYS_PTRACE or
    /// the process's own user (pidfd_getfd, Linux 5.6 or later)
    #[arg(value_name = "PID|:PORT")]
    pub target: nodelay_host::Target,

    /// Print JSON (its JSON Schema: nodelay schema inspect / fix) on stdout instead of text
    #[arg(long)]
    pub json: bool,
}

/// `nodelay fix`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "PID|:PORT: the change lasts as long as the sockets, until the program restarts. \
`nodelay exec` starts a program with TCP_NODELAY on every socket.\n\n\
--cgroup and --pid (eBPF; root, or CAP_BPF with CAP_NET_ADMIN): a sock_ops program sets TCP_NODELAY \
on every connection the cgroup's processes accept or open from then on, and a setsockopt program \
turns their own setsockopt(TCP_NODELAY, 0) into 1, counted; the sockets they have open are set as \
for a PID. The programs stay attached while fix runs: -d or Ctrl-C detaches them and says what \
they did; with --persist they stay attached after fix ends (pinned in bpffs, /sys/fs/bpf/nodelay) \
until --undo detaches them.")]
#[command(group(clap::ArgGroup::new("ebpf_target").args(["cgroup", "pid"])))]
pub struct FixArgs {
    /// A process ID, or :PORT for the processes listening on that local TCP port. Needs root,
    /// CAP_SYS_PTRACE or the process's own user (pidfd_getfd, Linux 5.6 or later)
    #[arg(value_name = "PID|:PORT", required_unless_present = "ebpf_target", conflicts_with = "ebpf_target")]
    pub target: Option<nodelay_host::Target>,

    /// Every new connection of this cgroup (a cgroup2 directory, and those below it), and
    /// the sockets its processes have open, while fix runs
    #[arg(long, value_name = "PATH", conflicts_with = "pid")]
    pub cgroup: Option<PathBuf>,

    /// As --cgroup, for the cgroup process PID is in
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// With --cgroup or --pid: detach after this long, e.g. 30s, 5m [default: until Ctrl-C]
    #[arg(short = 'd', long, value_parser = values::parse_duration, requires = "ebpf_target")]
    pub duration: Option<Duration>,

    /// With --cgroup or --pid: keep the programs attached after fix ends, pinned in bpffs
    /// (/sys/fs/bpf/nodelay/cgroup-ID), until --undo; the open sockets set stay set
    #[arg(long, requires = "ebpf_target", conflicts_with_all = ["duration", "undo"])]
    pub persist: bool,

    /// With --cgroup or --pid: detach the programs --persist left there, and say what they
    /// counted meanwhile
    #[arg(long, requires = "ebpf_target", conflicts_with = "duration")]
    pub undo: bool,

    /// Print JSON (its JSON Schema: nodelay schema fix) on stdout instead of text; not with
    /// --cgroup or --pid
    #[arg(long, conflicts_with = "ebpf_target")]
    pub json: bool,

    /// Only say which sockets would change
    #[arg(long, conflicts_with = "ebpf_target")]
    pub dry_run: bool,
}

/// `nodelay exec`: run a program with TCP_NODELAY forced on.
#[derive(Debug, Clone, Args)]
#[command(
    override_usage = "nodelay exec [--quiet] [--] PROGRAM [ARGS]...",
    after_help = "An embedded LD_PRELOAD library sets TCP_NODELAY on every TCP socket the program \
creates or accepts and turns setsockopt(TCP_NODELAY, 0) into 1; other sockets and options are \
left alone. nodelay then becomes the program: same PID, stdio, signals and exit status.\n\n\
A statically linked, set-ID or Go program cannot be preloaded: nodelay says so and sets \
TCP_NODELAY on the program's sockets from outside (pidfd_getfd) while it runs.\n\n\
Exit status: the program's; 126 if it cannot be executed, 127 if it is not found."
)]
pub struct ExecArgs {
    /// No line before the program starts; the notice that a preload cannot work (and
    /// TCP_NODELAY is set from outside) is printed all the same
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// The program, found in PATH as a shell would, and its arguments
    // Not allow_hyphen_values: a mistyped option before PROGRAM (--quite) is then a usage
    // error, not a program that is not found; after PROGRAM every word is the program's.
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// `nodelay proxy`: an inspecting relay.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Every client connection is relayed, byte for byte, to the one upstream (never \
anywhere else), with TCP_NODELAY set on both legs so that the relay adds no Nagle stall of its \
own. HTTP/1.x exchanges are told apart by their framing; any other protocol by turns (the \
client's bytes, then the upstream's until the client speaks again).\n\n\
It runs until -d or -n is reached, or Ctrl-C (or SIGTERM), then prints the report; a second \
Ctrl-C quits at once. Exit status: 0 healthy, 3 a finding, 1 nothing relayed, 2 bad arguments.")]
pub struct ProxyArgs {
    /// Where clients connect: a loopback address such as 127.0.0.1:8080 unless --listen-public
    /// (port 0 picks a free port); `listening on ADDR` goes to stderr once it accepts
    #[arg(long, value_name = "ADDR", value_parser = values::parse_socket_address)]
    pub listen: SocketAddr,

    /// The one address every connection is relayed to: HOST:PORT
    #[arg(long, value_name = "ADDR", value_parser = values::parse_upstream_address)]
    pub upstream: SocketAddr,

    /// Stop after this long, e.g. 30s, 5m [default: until Ctrl-C or -n]
    #[arg(short = 'd', long, value_parser = values::parse_duration)]
    pub duration: Option<Duration>,

    /// Stop after N exchanges relayed in full [default: until Ctrl-C or -d]
    #[arg(short = 'n', long = "exchanges", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub exchanges: Option<u64>,

    /// Print the report as JSON (its JSON Schema: nodelay schema proxy) on stdout instead of text
    #[arg(long)]
    pub json: bool,

    /// Allow --listen on an address that is not loopback: anyone who can reach it can then use
    /// the relay to reach the upstream
    #[arg(long)]
    pub listen_public: bool,
}

/// One line for any other argument error clap found: its message with the lines it listed
/// (the missing arguments) joined, and where help is, instead of its message, a usage line,
/// a tip and a pointer to --help over five to seven lines. `None` for help and version
/// displays, which are no errors.
pub fn usage_error_line(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    let text = error.render().to_string();
    let message = text.split("\n\n").next()?.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    // clap echoes what was typed raw: a carriage return or an escape would break the line.
    let message = escape_controls(message);
    // "Usage: nodelay exec [--quiet] ..." names the command whose help to read.
    let usage = text.lines().find_map(|line| line.strip_prefix("Usage: "));
    let command: Vec<&str> = usage
        .map(|usage| {
            usage
                .split_whitespace()
                .take(2)
                .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                .collect()
        })
        .unwrap_or_default();
    let command = if command.is_empty() { "nodelay".to_string() } else { command.join(" ") };
    // clap's "tip: a similar argument exists" sits in a later paragraph: kept, in the line.
    let similar = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand].map(|kind| error.get(kind));
    let similar = similar.into_iter().find_map(|value| match value? {
        ContextValue::String(similar) => Some(similar.clone()),
        ContextValue::Strings(similar) => similar.first().cloned(),
        _ => None,
    });
    let similar = similar.map_or_else(String::new, |similar| format!("; did you mean '{similar}'?"));
    Some(format!("{message}{similar} (see {command} --help)"))
}

/// One line for a value a parser refused (clap's own text echoes the value raw, a line break
/// and all, and adds a usage tip): the option, the value escaped, and the parser's reason.
/// `None` for other errors, and for a value error without those parts.
pub fn invalid_value_line(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        _ => None,
    };
    let (option, value) = (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?);
    let reason = plain_reason(&std::error::Error::source(error)?.to_string());
    // The reason may quote the value too (`'…' is neither a PID …`).
    let reason = escape_controls(&reason.replace('\n', " "));
    Some(format!("invalid value '{}' for {option}: {reason}", value.escape_debug()))
}

/// `text` with its control characters written as Rust escapes (`\r`, `\u{1b}`): one line,
/// and nothing a terminal would act on.
fn escape_controls(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_debug().collect() } else { vec![c] }).collect()
}

/// The standard number parsers' reasons in words: "0 is not in 1..18446744073709551615" is
/// "must be 1 or more", "invalid digit found in string" is "not a whole number".
fn plain_reason(reason: &str) -> String {
    let open_ended = [u64::MAX.to_string(), i64::MAX.to_string(), u32::MAX.to_string(), i32::MAX.to_string()];
    if let Some((_, range)) = reason.split_once(" is not in ")
        && let Some((low, high)) = range.split_once("..")
        && open_ended.iter().any(|max| max == high.trim_start_matches('='))
    {
        return format!("must be {low} or more");
    }
    match reason {
        "invalid digit found in string" => "not a whole number".into(),
        "number too large to fit in target type" => "too large".into(),
        "cannot parse integer from empty string" => "empty".into(),
        other => other.into(),
    }
}

/// The error for an argument clap refused because it is not UTF-8: which one, its bytes
/// escaped as Rust writes them (`"\xFF"`). Only exec's PROGRAM and ARGS may be any bytes.
pub fn not_utf8(args: &[OsString]) -> String {
    match args.iter().skip(1).find(|arg| arg.to_str().is_none()) {
        Some(arg) => format!("argument {arg:?} is not UTF-8 text"),
        None => "an argument is not UTF-8 text".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn a_non_utf8_argument_is_named() {
        let args = ["nodelay", "inspect"].map(OsString::from).to_vec();
        let odd = [args.clone(), vec![OsString::from_vec(b"a\xffb".to_vec())]].concat();
        assert_eq!(not_utf8(&odd), r#"argument "a\xFFb" is not UTF-8 text"#);
        assert_eq!(not_utf8(&args), "an argument is not UTF-8 text");
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn the_number_parsers_reasons_are_words() {
        assert_eq!(plain_reason("0 is not in 1..18446744073709551615"), "must be 1 or more");
        assert_eq!(plain_reason("0 is not in 1..=2147483647"), "must be 1 or more");
        assert_eq!(plain_reason("0 is not in 1..=100000"), "0 is not in 1..=100000");
        assert_eq!(plain_reason("invalid digit found in string"), "not a whole number");
    }
}
