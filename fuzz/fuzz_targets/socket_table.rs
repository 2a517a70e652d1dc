//! Fuzzes the parsers of the kernel's TCP socket table (a sock_diag dump's receive and a
//! /proc/net/tcp line) and of its TCP open counters (/proc/net/snmp). Whatever the bytes, an
//! answer or an error, never a panic, and never more sockets than whole 88-byte messages fit
//! in the receive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodelay_host::fuzzing::{proc_tcp_line, snmp_tcp_opens, sock_diag_receive};

fuzz_target!(|input: (u32, &[u8])| {
    let (sequence, bytes) = input;
    if let Ok((sockets, _ended)) = sock_diag_receive(bytes, sequence) {
        assert!(sockets * 88 <= bytes.len(), "{sockets} sockets in {} bytes", bytes.len());
    }
    let _ = snmp_tcp_opens(bytes);
    if let Ok(text) = std::str::from_utf8(bytes) {
        for line in text.lines() {
            let _ = proc_tcp_line(line);
        }
    }
});
