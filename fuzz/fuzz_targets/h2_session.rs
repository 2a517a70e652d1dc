//! Fuzzes the libnghttp2 session behind `bench --h2` with any bytes a server could send:
//! its callbacks name only slots that exist and wait for an answer, a slot hears of each
//! request once, and nothing panics or reads out of bounds, whether the bytes come whole or
//! byte by byte (each is its own run: the library may stop at a different frame).
//!
//! Input: `[0..4]` piece sizes, then what the server sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_engine::fuzz_drive_h2_session as drive;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let pieces: Vec<usize> = data[..4].iter().map(|&b| usize::from(b)).collect();
    let received = &data[4..];
    drive(received, &[received.len()]);
    drive(received, &pieces);
    drive(received, &[1]);
});
