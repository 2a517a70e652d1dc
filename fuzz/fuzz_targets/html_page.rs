//! Fuzzes the readers of saved runs, the HTML page and the text (`nodelay report RUN.json`):
//! any JSON text, taken as a saved run, must render or be refused, never panic (numbers far
//! out of range, missing or odd fields, any schema id), at any width.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(run) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let width = 20 + usize::from(data.first().copied().unwrap_or(0));
    let _ = nodelay_report::text_of_saved_run("fuzz.json", &run, width);
    let _ = nodelay_report::html::html_page(&[run]);
});
