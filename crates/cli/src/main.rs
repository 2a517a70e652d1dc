//! The `nodelay` binary: parses arguments and hands them to the library; errors are printed
//! once, with their context chain, and mapped to exit codes in `exit.rs`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(hint) = nodelay::habit_hint(&args) {
        nodelay::report_error(&anyhow::anyhow!(hint));
        return nodelay::Outcome::Usage.into();
    }
    let cli = nodelay::Cli::parse();
    match nodelay::run(cli) {
        Ok(outcome) => outcome.into(),
        Err(error) => {
            nodelay::report_error(&error);
            nodelay::outcome_of(&error).into()
        }
    }
}
