//! Fuzzes scenario files: any text must parse to a scenario or an error, never panic, and every
//! request of a parsed scenario must encode or be refused, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_wire::HttpRequest;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A base that does not exist, so `@file` bodies fail rather than read the machine's files.
    let Ok(scenario) = nodelay_load::scenario::parse_scenario(&text, Path::new("/nonexistent/nodelay-fuzz")) else { return };
    for request in scenario.requests {
        let request = HttpRequest {
            method: request.method,
            host: "example".into(),
            target: request.path,
            headers: request.headers,
            body: request.body,
            keep_alive: true,
        };
        let _ = request.encode();
    }
});
