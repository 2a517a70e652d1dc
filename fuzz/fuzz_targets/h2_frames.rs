//! Fuzzes the HTTP/2 frame tap (what `bench --h2` reads of every frame a server sends: headers,
//! SETTINGS, WINDOW_UPDATE, RST_STREAM, GOAWAY): for any bytes our side sent and any bytes the
//! server sent back, it reads the same frames, windows and streams whether the server's bytes
//! come whole, in uneven pieces or byte by byte, and never panics.
//!
//! Input: `[0..2]` length of what we sent (big-endian, capped at what is there), `[2..6]`
//! piece sizes, then what we sent, then what the server sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_engine::fuzz_read_h2_frames as read_frames;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let sent_len = (usize::from(data[0]) << 8 | usize::from(data[1])).min(data.len() - 6);
    let pieces: Vec<usize> = data[2..6].iter().map(|&b| usize::from(b)).collect();
    let (sent, received) = data[6..].split_at(sent_len);
    // One instant for all three: the figures hold times, which must compare equal.
    let now = std::time::Instant::now();
    let whole = read_frames(sent, received, &[received.len()], now);
    assert_eq!(whole, read_frames(sent, received, &pieces, now), "in pieces {pieces:?}");
    assert_eq!(whole, read_frames(sent, received, &[1], now), "byte by byte");
});
