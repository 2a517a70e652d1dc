//! Fuzzes the HTML page: any JSON text, taken as a saved run, must render or be refused,
//! never panic (numbers far out of range, missing or odd fields, any schema id).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(run) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let _ = nodelay_report::html::html_page(&[run]);
});
