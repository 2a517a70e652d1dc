//! nodelay's command line as a library: `run(cli)` executes one command and returns its
//! outcome; `main.rs` only parses arguments and maps the outcome to an exit status.
#![forbid(unsafe_code)]
// Its doc comments are clap's help text, written for a terminal (`[::1]:80`, `<bytes>`), not
// rustdoc's markup. scripts/test.sh documents this crate with the others all the same, so that
// the API docs' check resolves the dependencies' features as every build does and reuses their
// checked metadata.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod args;
mod bench;
mod compare;
mod demo;
mod doctor;
mod exec;
mod exit;
mod flag_spelling;
pub mod habits;
mod html;
mod interrupt;
mod merge;
mod options;
mod output;
mod pcap;
mod progress_words;
mod proxy;
mod report;
mod runner;
mod self_docs;
mod sockets;
mod terminal;
mod watch;

pub use args::{
    BenchArgs, Cli, Command, CompareArgs, DoctorArgs, ExecArgs, PcapArgs, ProxyArgs, ReportArgs, RequestArgs,
    SourceArg, WatchArgs, invalid_value_line, not_utf8, usage_error_line,
};
pub use exit::{Outcome, UsageError, outcome_of};
pub use flag_spelling::install_flag_spelling;

/// Prints the error that ended a command: one line, with its context chain.
pub fn report_error(error: &anyhow::Error) {
    output::stderr_line(&format!("nodelay: {error:#}"));
}

/// Runs one command. Errors carry context for a one-line message.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    install_flag_spelling();
    if matches!(
        cli.command,
        Command::Bench(_) | Command::Doctor(_) | Command::Proxy(_) | Command::Compare(_) | Command::Demo
    ) {
        // From the start, not just while load runs: a Ctrl-C during the reachability probe
        // must still end with a report (marked interrupted), not kill the process silently.
        interrupt::install();
    }
    match cli.command {
        Command::Bench(args) => bench::bench(&args),
        Command::Doctor(args) => doctor::doctor(&args),
        Command::Pcap(args) => pcap::pcap(&args),
        Command::Inspect(args) => sockets::inspect(&args),
        Command::Fix(args) => sockets::fix(&args),
        Command::Demo => demo::demo(),
        Command::Exec(args) => exec::exec(&args),
        Command::Proxy(args) => proxy::proxy(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Watch(args) => watch::watch(&args),
        Command::Report(args) => report::report(&args),
        Command::Schema { command } => self_docs::schema(command),
        Command::Completions { shell } => self_docs::completions(shell),
        Command::Man { command, dir } => self_docs::man(&command, dir.as_deref()),
    }
}
