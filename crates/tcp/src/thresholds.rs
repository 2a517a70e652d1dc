//! The bars the rules judge by, each tied to the TCP fact it comes from. Every rule, live or
//! passive, takes them from here: a capture and a live run disagree on what counts as a
//! stall only if they measured something different.

use crate::time::ms;
use std::time::Duration;

/// A mid-response pause at least this long counts as a stall: the shortest delayed-ACK timer
/// is 40 ms (docs/field-notes.md §1), and scheduling noise on loopback stays far below.
pub const STALL_GAP: Duration = Duration::from_millis(25);
/// [`STALL_GAP`] in milliseconds, as the rules compare.
pub const STALL_GAP_MS: f64 = ms(STALL_GAP);

/// A first byte this much later than the round trip explains counts as late.
pub const LATE_FIRST_BYTE: Duration = Duration::from_millis(25);
/// [`LATE_FIRST_BYTE`] in milliseconds.
pub const LATE_FIRST_BYTE_MS: f64 = ms(LATE_FIRST_BYTE);

/// A median first byte later than this (less the path's round trip) makes a server "slow to
/// answer".
pub const SLOW_FIRST_BYTE: Duration = Duration::from_millis(10);
/// [`SLOW_FIRST_BYTE`] in milliseconds.
pub const SLOW_FIRST_BYTE_MS: f64 = ms(SLOW_FIRST_BYTE);

/// A symptom seen in at least this share of steady responses is worth a finding.
pub const SYMPTOM_FRACTION: f64 = 0.25;

/// A round trip this long is a slow path: longer than any path between two places on Earth
/// needs (the antipodes are about 200 ms apart over fibre).
pub const SLOW_PATH_RTT: Duration = Duration::from_millis(200);
