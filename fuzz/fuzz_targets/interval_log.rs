//! Fuzzes `report merge`: any bytes, as one or two interval logs, must merge into a report or
//! an error, never panic, hang or allocate without bound (a timestamp far off widens the
//! timeline's step). Input: `[0]` where the first log ends (as a share of the rest), then
//! the logs' bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else { return };
    let at = rest.len() * usize::from(cut) / 255;
    let (first, second) = rest.split_at(at);
    let mut contents = vec![first.to_vec()];
    if !second.is_empty() {
        contents.push(second.to_vec());
    }
    let paths: Vec<PathBuf> = (0..contents.len()).map(|i| PathBuf::from(format!("{i}.hlog"))).collect();
    let _ = nodelay_report::merge_logs(&paths, &contents);
});
