//! The options shared by the commands that send requests (TLS, HTTP/2 and gRPC) and by
//! those that can fail a run (`--fail-if`), as clap parses them, converted to the library's
//! plain values.

use nodelay_load::{GateOptions, ProtocolOptions, TlsChoices};
use nodelay_report::gate::Threshold;
use std::path::PathBuf;

/// The help section of the HTTP/2 and gRPC options.
const HEADING: &str = "HTTP/2 and gRPC";

/// Which HTTP to speak, and gRPC calls.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProtocolArgs {
    /// Speak HTTP/2: on http:// with prior knowledge (h2c), on https:// insisting that the
    /// server choose h2 by ALPN [default: bench and compare speak HTTP/2 on https:// when the
    /// server chooses it; the doctor only when asked]
    #[arg(long = "h2", help_heading = HEADING)]
    pub h2: bool,

    /// https:// only: offer only HTTP/1.1 by ALPN, never HTTP/2
    #[arg(id = "http1.1", long = "http1.1", conflicts_with = "h2", help_heading = HEADING)]
    pub http11: bool,

    /// HTTP/2: requests in flight at once on each connection (h2load's -m) [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = HEADING)]
    pub streams: Option<u32>,

    /// HTTP/2: the flow-control window advertised for each stream and for the connection
    /// [default: bench and compare 1073741823 bytes, h2load's; the doctor 65535, the
    /// protocol's, and an experiment with 16 MiB]
    #[arg(long, value_name = "BYTES", value_parser = nodelay_load::parse_window, help_heading = HEADING)]
    pub h2_window: Option<u32>,

    /// A gRPC unary call of this method over HTTP/2 (POST, application/grpc), e.g.
    /// /helloworld.Greeter/SayHello; grpc-status is counted beside the HTTP status
    #[arg(long, value_name = "/PACKAGE.SERVICE/METHOD", value_parser = nodelay_load::parse_grpc_method, conflicts_with_all = ["method", "body", "scenario"], help_heading = HEADING)]
    pub grpc: Option<String>,

    /// The gRPC request message: encoded protobuf, as bytes with escapes such as \x0a\x05 or
    /// @FILE; with --grpc-proto, protobuf text such as 'name: "world"' [default: the empty
    /// message]
    #[arg(long, value_name = "MESSAGE", requires = "grpc", help_heading = HEADING)]
    pub grpc_message: Option<String>,

    /// The .proto file that declares the --grpc method (imports are looked up beside it):
    /// --grpc-message is then protobuf text of the method's request type
    #[arg(long, value_name = "FILE", requires = "grpc", help_heading = HEADING)]
    pub grpc_proto: Option<PathBuf>,
}

impl From<&ProtocolArgs> for ProtocolOptions {
    fn from(args: &ProtocolArgs) -> Self {
        let ProtocolArgs { h2, http11, streams, h2_window, grpc, grpc_message, grpc_proto } = args.clone();
        ProtocolOptions { h2, http11, streams, h2_window, grpc, grpc_message, grpc_proto }
    }
}

/// The help section of the TLS options: only they go under it (a struct-level heading would
/// also take every option declared after them).
const TLS_HEADING: &str = "TLS (https:// URLs)";

/// How https:// targets are reached: shared by every command that sends requests.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Do not check the server's certificate (as curl -k); the report says so
    #[arg(short = 'k', long, help_heading = TLS_HEADING)]
    pub insecure: bool,

    /// Trust the certificates in this PEM file instead of the system's store
    #[arg(long, value_name = "FILE", conflicts_with = "insecure", help_heading = TLS_HEADING)]
    pub cacert: Option<PathBuf>,

    /// Server name to send (SNI) and to check the certificate against, instead of the URL's host
    #[arg(long, value_name = "NAME", help_heading = TLS_HEADING)]
    pub sni: Option<String>,

    /// A new connection makes a full handshake instead of resuming an earlier session
    #[arg(long, help_heading = TLS_HEADING)]
    pub no_tls_resume: bool,
}

impl From<&TlsArgs> for TlsChoices {
    fn from(args: &TlsArgs) -> Self {
        let TlsArgs { insecure, cacert, sni, no_tls_resume } = args.clone();
        TlsChoices { insecure, cacert, sni, no_tls_resume }
    }
}

/// The thresholds a run is held against.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GateArgs {
    /// Fail the run (exit 4) when EXPR holds: a metric, an operator and a value with its
    /// unit (p99 > 50ms, first_byte.p90 >= 20ms, errors > 1%, rps < 2000), or a finding
    /// alone (stall: any Nagle hold; or an id such as slow-first-byte); repeatable
    #[arg(long = "fail-if", value_name = "EXPR", value_parser = nodelay_load::parse_threshold)]
    pub fail_if: Vec<Threshold>,

    /// Append a Markdown summary of the run for a pull request to FILE (verdict,
    /// thresholds, figures, each finding's proof and fix folded), e.g. "$GITHUB_STEP_SUMMARY"
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// compare: the significance level of its verdicts and of --fail-if 'slower ...' (as
    /// benchstat's -alpha); intervals are then (1 - P) ones [default: 0.05]
    #[arg(long, value_name = "P", value_parser = nodelay_load::parse_alpha)]
    pub alpha: Option<f64>,
}

impl GateArgs {
    /// The thresholds as the library takes them.
    pub fn options(&self) -> GateOptions {
        GateOptions { fail_if: self.fail_if.clone(), summary: self.summary.clone(), alpha: self.alpha }
    }
}
