//! Nagle holds timed in the kernel (bpf/watch_holds.bpf.c): a hold starts at the send that
//! leaves fewer than a segment's bytes unsent behind data in flight with Nagle on, and ends
//! at the incoming segment that acknowledges everything in flight. The programs sum them per
//! (process, local port, remote port) in a map that [`HoldWatch::read`] copies out, so the
//! process that held is the one that sent, exactly, whenever its connection was opened.
#![allow(unsafe_code)]

use crate::EbpfError;
use crate::refused::refused;
use aya::maps::HashMap;
use aya::programs::RawTracePoint;
use std::time::Duration;

#[cfg(nodelay_bpf)]
static OBJECT: Option<&[u8]> =
    Some(aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/watch_holds.bpf.o")));
#[cfg(not(nodelay_bpf))]
static OBJECT: Option<&[u8]> = None;

/// `struct hold_key` of the program.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HoldKey {
    tgid: u32,
    local_port: u16,
    remote_port: u16,
}

/// `struct hold_stats` of the program.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawStats {
    holds: u64,
    held_ns: u64,
    longest_ns: u64,
    min_rtt_us_sum: u64,
    sends: u64,
    exchanges: u64,
}

// SAFETY: both are repr(C), made of integers only with no padding (4 + 2 + 2 bytes; six u64),
// so every bit pattern the kernel writes is a valid value, as aya::Pod requires.
unsafe impl aya::Pod for HoldKey {}
// SAFETY: as above.
unsafe impl aya::Pod for RawStats {}

/// What the kernel counted for one process's connections on one pair of ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldStats {
    /// The process that sent (and held).
    pub pid: u32,
    /// Its socket's local port.
    pub local_port: u16,
    /// The peer's port.
    pub remote_port: u16,
    /// Holds ended by an acknowledgement.
    pub holds: u64,
    /// Their time, summed.
    pub held: Duration,
    /// The longest.
    pub longest: Duration,
    /// The connection's lowest round-trip time at each release, summed: the path's share of
    /// the holds (the smoothed RTT would include the peer's delayed ACKs).
    pub round_trips: Duration,
    /// Sends (write, send, sendmsg calls) on these connections.
    pub sends: u64,
    /// Sends that followed data from the peer: request/response turns.
    pub exchanges: u64,
}

/// The programs, attached to their tracepoints for as long as this lives.
pub struct HoldWatch {
    ebpf: aya::Ebpf,
}

impl HoldWatch {
    /// Loads the programs and attaches them to their raw tracepoints (root, or CAP_BPF with
    /// CAP_PERFMON).
    pub fn start() -> Result<HoldWatch, EbpfError> {
        let object = OBJECT.ok_or(EbpfError::NotBuilt)?;
        let mut ebpf = aya::Ebpf::load(object).map_err(|e| refused(&e))?;
        // Raw tracepoints: attached by name, with no record assembled per event (cheaper than
        // the tracepoints of tracefs, which they need not have mounted).
        for (name, event) in [("nodelay_send", "sock_send_length"), ("nodelay_ack", "tcp_probe")] {
            let program = ebpf
                .program_mut(name)
                .ok_or_else(|| EbpfError::Kernel(format!("the object has no program {name}")))?;
            let tracepoint: &mut RawTracePoint = program.try_into().map_err(|e| refused(&e))?;
            tracepoint.load().map_err(|e| refused(&e))?;
            tracepoint.attach(event).map_err(|e| refused(&e))?;
        }
        Ok(HoldWatch { ebpf })
    }

    /// Every (process, ports) the programs have counted since they started.
    pub fn read(&self) -> Result<Vec<HoldStats>, EbpfError> {
        let map =
            self.ebpf.map("holds").ok_or_else(|| EbpfError::Kernel("the object has no holds map".into()))?;
        let holds: HashMap<_, HoldKey, RawStats> = HashMap::try_from(map).map_err(|e| refused(&e))?;
        let mut all = Vec::new();
        for entry in holds.iter() {
            let (key, stats) = entry.map_err(|e| refused(&e))?;
            all.push(HoldStats {
                pid: key.tgid,
                local_port: key.local_port,
                remote_port: key.remote_port,
                holds: stats.holds,
                held: Duration::from_nanos(stats.held_ns),
                longest: Duration::from_nanos(stats.longest_ns),
                round_trips: Duration::from_micros(stats.min_rtt_us_sum),
                sends: stats.sends,
                exchanges: stats.exchanges,
            });
        }
        all.sort_by_key(|stats| (stats.pid, stats.local_port, stats.remote_port));
        Ok(all)
    }
}
