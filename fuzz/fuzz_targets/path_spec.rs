//! Fuzzes nodelay-path's value parsers: any text is a value within its documented bounds or
//! an error whose message is one line, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_netpath::{parse_duration, parse_loss_percent, parse_name, parse_rate};

fuzz_target!(|text: &str| {
    let one_line = |message: String| assert!(!message.contains(['\n', '\r']), "{message:?}");
    match parse_duration(text) {
        Ok(duration) => assert!(duration <= std::time::Duration::from_secs(60), "{text:?}: {duration:?}"),
        Err(error) => one_line(error.to_string()),
    }
    match parse_rate(text) {
        Ok(rate) => assert!((1_000..=1_000_000_000_000).contains(&rate), "{text:?}: {rate}"),
        Err(error) => one_line(error.to_string()),
    }
    match parse_loss_percent(text) {
        Ok(loss) => assert!((0.0..=100.0).contains(&loss), "{text:?}: {loss}"),
        Err(error) => one_line(error.to_string()),
    }
    match parse_name(text) {
        Ok(name) => assert!((1..=12).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric())),
        Err(error) => one_line(error.to_string()),
    }
});
