//! The `nodelay` binary: parses arguments and hands them to the library; errors are printed
//! once, with their context chain, and mapped to exit codes in `exit.rs`.
#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Before parsing: a value parser's refusal may name a flag.
    nodelay::install_flag_spelling();
    // As the OS gave them: `std::env::args` panics on an argument that is not UTF-8, and
    // exec passes its program's arguments on byte for byte.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Flags typed from wrk's, ab's or oha's habit: dropped when they change nothing here,
    // else refused with nodelay's spelling.
    let (args, note) = nodelay::habits::accept(args);
    if let Some(hint) = nodelay::habits::hint(&args) {
        nodelay::report_error(&anyhow::anyhow!(hint));
        return nodelay::Outcome::Usage.into();
    }
    let cli = match nodelay::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        // clap's own words name no argument and add the usage; one line names the bytes.
        Err(error) if error.kind() == clap::error::ErrorKind::InvalidUtf8 => {
            nodelay::report_error(&anyhow::anyhow!(nodelay::not_utf8(&args)));
            return nodelay::Outcome::Usage.into();
        }
        // Any other argument error in one line (a refused value with its value escaped);
        // help and version print as clap prints them.
        Err(error) => match nodelay::invalid_value_line(&error).or_else(|| nodelay::usage_error_line(&error))
        {
            Some(line) => {
                nodelay::report_error(&anyhow::anyhow!(line));
                return nodelay::Outcome::Usage.into();
            }
            None => error.exit(),
        },
    };
    if let Some(note) = note {
        nodelay::report_error(&anyhow::anyhow!(note));
    }
    match nodelay::run(cli) {
        Ok(outcome) => outcome.into(),
        Err(error) => {
            nodelay::report_error(&error);
            nodelay::outcome_of(&error).into()
        }
    }
}
