//! Fuzzes the command line: any words after `nodelay` parse to a command, or to an error that
//! prints as one line (a refused value escaped, clap's own errors joined), never a panic. The
//! words of `proxy` are left out: its addresses are resolved by name, which would ask DNS.
#![no_main]

use clap::Parser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|words: Vec<String>| {
    if words.first().is_some_and(|command| command == "proxy") {
        return;
    }
    let args = std::iter::once("nodelay".to_string()).chain(words.into_iter().take(12));
    if let Err(error) = nodelay::Cli::try_parse_from(args) {
        let line = nodelay::invalid_value_line(&error).or_else(|| nodelay::usage_error_line(&error));
        if let Some(line) = line {
            assert!(!line.contains(['\n', '\r']), "{line:?}");
        }
    }
});
