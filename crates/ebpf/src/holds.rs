//! Nagle holds timed in the kernel (bpf/watch_holds.bpf.c): a hold starts at the send that
//! leaves bytes unsent with Nagle on while a small segment is unacknowledged, and ends at the
//! incoming segment that acknowledges that small segment (Linux's Nagle is Minshall's). The programs sum them per
//! (process, local port, remote port) in a map that [`HoldWatch::read`] copies out, so the
//! process that held is the one that sent, exactly, whenever its connection was opened. Each
//! hold is classed in the kernel (a peer's delayed ACK, a round trip, a resend's, neither) by
//! thresholds the caller sets at load. Resends, ends and resets of the connections followed
//! are counted beside them.
#![allow(unsafe_code)]

use crate::EbpfError;
use crate::kfunc;
use crate::refused::{Attach, refused};
use aya::maps::HashMap;
use aya::programs::BtfTracePoint;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

#[cfg(nodelay_bpf)]
pub(crate) static OBJECT: Option<&[u8]> =
    Some(aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/watch_holds.bpf.o")));
#[cfg(not(nodelay_bpf))]
pub(crate) static OBJECT: Option<&[u8]> = None;

/// `struct hold_key` of the program.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HoldKey {
    tgid: u32,
    local_port: u16,
    remote_port: u16,
}

/// Buckets of hold lengths: one per upper bound of [`HoldThresholds::bucket_bounds`], then
/// one past the last.
pub const HOLD_BUCKETS: usize = 16;

/// `struct kind_totals` of the program.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawTotals {
    holds: u64,
    held_ns: u64,
    min_rtt_us_sum: u64,
    buckets: [u32; HOLD_BUCKETS],
}

/// `struct hold_stats` of the program.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawStats {
    kinds: [RawTotals; 4],
    longest_ns: u64,
    sends: u64,
    exchanges: u64,
    resends: u64,
    closes: u64,
    resets: u64,
    first_hold_ns: u64,
    last_hold_ns: u64,
    local_addr: [u8; 16],
    remote_addr: [u8; 16],
    family: u16,
    padding: [u8; 6],
}

// SAFETY: both are repr(C), made of integers only with no implicit padding (4 + 2 + 2 bytes;
// kinds of three u64s and sixteen u32s, then u64s, then 16 + 16 + 2 + 6 bytes), so every bit
// pattern the kernel writes is a valid value, as aya::Pod requires.
unsafe impl aya::Pod for HoldKey {}
// SAFETY: as above.
unsafe impl aya::Pod for RawStats {}

/// The thresholds that tell how a hold ended, by the peer's share of it (the hold less the
/// path's lowest round trip): the same a capture judges by (nodelay-tcp's constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldThresholds {
    /// A peer's share at least this long, and at most [`max_ack_delay`](Self::max_ack_delay),
    /// is its delayed-ACK timer.
    pub min_ack_delay: Duration,
    /// Beyond this the wait is something other than an ACK timer.
    pub max_ack_delay: Duration,
    /// A hold released one round trip later counts from this long.
    pub min_round_trip_hold: Duration,
    /// A peer's share within this (plus a quarter of the round trip) is an ACK sent at once.
    pub round_trip_slack: Duration,
    /// Upper bounds of the buckets each hold is counted in by its length, ascending.
    pub bucket_bounds: [Duration; HOLD_BUCKETS - 1],
}

/// Holds of one kind, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HoldTotals {
    /// Holds ended by an acknowledgement.
    pub holds: u64,
    /// Their time, summed.
    pub held: Duration,
    /// The connection's lowest round-trip time at each release, summed: the path's share of
    /// the holds (the smoothed RTT would include the peer's delayed ACKs).
    pub round_trips: Duration,
    /// The holds by length: one count per bucket of [`HoldThresholds::bucket_bounds`] (a
    /// length on a bound is in that bound's bucket), the last past them all.
    pub buckets: [u64; HOLD_BUCKETS],
}

impl HoldTotals {
    fn from_raw(raw: &RawTotals) -> HoldTotals {
        HoldTotals {
            holds: raw.holds,
            held: Duration::from_nanos(raw.held_ns),
            round_trips: Duration::from_micros(raw.min_rtt_us_sum),
            buckets: raw.buckets.map(u64::from),
        }
    }

    fn plus(self, other: HoldTotals) -> HoldTotals {
        HoldTotals {
            holds: self.holds + other.holds,
            held: self.held + other.held,
            round_trips: self.round_trips + other.round_trips,
            buckets: std::array::from_fn(|i| self.buckets[i] + other.buckets[i]),
        }
    }
}

/// What the kernel counted for one process's connections on one pair of ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldStats {
    /// The process that sent (and held).
    pub pid: u32,
    /// Its socket's local address and port (the addresses as the first send on these ports
    /// found them).
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
    /// Holds the peer's delayed-ACK timer released.
    pub delayed_ack: HoldTotals,
    /// Holds an ACK sent at once released, one round trip later.
    pub round_trip: HoldTotals,
    /// Holds of neither kind: too short to matter (under the round-trip floor) or longer than
    /// any ACK timer.
    pub unclassed: HoldTotals,
    /// Holds during which the socket resent data, or that ended with a loss probe outstanding:
    /// a loss's or a stalled path's wait, whatever its length, not the peer's ACK timer.
    pub resent: HoldTotals,
    /// The longest hold.
    pub longest: Duration,
    /// Sends (write, send, sendmsg calls) on these connections.
    pub sends: u64,
    /// Sends that followed data from the peer: request/response turns.
    pub exchanges: u64,
    /// Retransmissions (a timeout's, a fast retransmit's, a loss probe's), each of one or more
    /// segments; failed tries are not counted.
    pub resends: u64,
    /// Connections that ended (reached CLOSE).
    pub closes: u64,
    /// Of those, the ones that ended with no closing handshake, straight from ESTABLISHED or
    /// CLOSE-WAIT: a reset sent or received, or the kernel giving up on a timeout.
    pub resets: u64,
    /// When the first and the latest hold ended, since [`HoldWatch::start`]; none before one.
    pub first_hold: Option<Duration>,
    /// When the latest hold ended, since [`HoldWatch::start`].
    pub last_hold: Option<Duration>,
}

impl HoldStats {
    /// Every hold, whatever its kind.
    pub fn total(&self) -> HoldTotals {
        self.delayed_ack.plus(self.round_trip).plus(self.unclassed).plus(self.resent)
    }
}

/// The kernel's monotonic clock (`bpf_ktime_get_ns`'s), in nanoseconds.
fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the live value it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// An address the program stored: IPv4 in the first four bytes, else IPv6 (an IPv4-mapped
/// IPv6 address as the IPv4 one it carries).
fn address(family: u16, bytes: [u8; 16], port: u16) -> SocketAddr {
    let ip = if family == libc::AF_INET as u16 {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    } else {
        Ipv6Addr::from(bytes).to_canonical()
    };
    SocketAddr::new(ip, port)
}

/// Loads program `name` of the object on the raw tracepoint `event` and attaches it.
fn load_on(ebpf: &mut aya::Ebpf, name: &str, event: &str, btf: &aya::Btf) -> Result<(), EbpfError> {
    let program = ebpf
        .program_mut(name)
        .ok_or_else(|| EbpfError::Kernel(format!("the object has no program {name}")))?;
    let tracepoint: &mut BtfTracePoint = program.try_into().map_err(|e| refused(&e, Attach::Tracing))?;
    tracepoint.load(event, btf).map_err(|e| refused(&e, Attach::Tracing))?;
    tracepoint.attach().map_err(|e| refused(&e, Attach::Tracing))?;
    Ok(())
}

/// How the hot programs see a socket as a tcp_sock.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Casts {
    /// bpf_rdonly_cast where the kernel has it, else the helper.
    WhereTheKernelHasThem,
    /// The helper bpf_skc_to_tcp_sock, as on kernels before 6.2.
    Helper,
}

/// The programs, attached to their tracepoints for as long as this lives.
pub struct HoldWatch {
    ebpf: aya::Ebpf,
    started_ns: u64,
    casts_in_kernel: bool,
}

impl HoldWatch {
    /// Loads the programs with `thresholds` and attaches them to their raw tracepoints (root,
    /// or CAP_BPF with CAP_PERFMON).
    pub fn start(thresholds: HoldThresholds) -> Result<HoldWatch, EbpfError> {
        HoldWatch::start_with(thresholds, Casts::WhereTheKernelHasThem)
    }

    /// As [`HoldWatch::start`], with the programs kernels before 6.2 get: they call a helper to
    /// see a socket as a tcp_sock. For tests, and to measure what the cast saves.
    pub fn start_with_helper_casts(thresholds: HoldThresholds) -> Result<HoldWatch, EbpfError> {
        HoldWatch::start_with(thresholds, Casts::Helper)
    }

    /// Whether both hot programs see a socket as a tcp_sock with the kernel's free cast
    /// (bpf_rdonly_cast), rather than with a helper call at each packet.
    pub fn casts_in_kernel(&self) -> bool {
        self.casts_in_kernel
    }

    fn start_with(thresholds: HoldThresholds, casts: Casts) -> Result<HoldWatch, EbpfError> {
        let object = OBJECT.ok_or(EbpfError::NotBuilt)?;
        let as_ns = |d: Duration| d.as_nanos().min(u128::from(u64::MAX)) as u64;
        let settings = [
            ("min_ack_delay_ns", as_ns(thresholds.min_ack_delay)),
            ("max_ack_delay_ns", as_ns(thresholds.max_ack_delay)),
            ("min_round_trip_hold_ns", as_ns(thresholds.min_round_trip_hold)),
            ("round_trip_slack_ns", as_ns(thresholds.round_trip_slack)),
        ];
        let bounds_ns = thresholds.bucket_bounds.map(as_ns);
        // BTF-typed raw tracepoints: attached by name, with no record assembled per event, and
        // the kernel's structs read with plain loads (its BTF types the arguments).
        let btf = aya::Btf::from_sys_fs().map_err(|e| EbpfError::Kernel(format!("the kernel's BTF: {e}")))?;
        let (object, kernel_casts) = kfunc::link(object, kfunc::RDONLY_CAST, &btf);
        let mut loader = aya::EbpfLoader::new();
        for (name, value) in &settings {
            loader.override_global(name, value, true);
        }
        loader.override_global("bucket_bounds_ns", &bounds_ns, true);
        let mut ebpf = loader.load(object.bytes()).map_err(|e| refused(&e, Attach::Tracing))?;
        // The programs run at every send and incoming segment: where the kernel casts a socket
        // to a tcp_sock for free (bpf_rdonly_cast), the ones that do; else their twins (`_h`)
        // that call a helper. And tcp_retransmit_skb has a third argument (the resend's error)
        // since about Linux 6.17: a program that reads it does not load where it has two. Each
        // tracepoint gets the first of its programs the kernel loads.
        let cast = kernel_casts && casts == Casts::WhereTheKernelHasThem;
        let programs: [(&[&str], &str); 4] = [
            (
                if cast { &["nodelay_send", "nodelay_send_h"] } else { &["nodelay_send_h"] },
                "sock_send_length",
            ),
            (if cast { &["nodelay_ack", "nodelay_ack_h"] } else { &["nodelay_ack_h"] }, "tcp_probe"),
            (&["nodelay_resend", "nodelay_resend2"], "tcp_retransmit_skb"),
            (&["nodelay_state"], "inet_sock_set_state"),
        ];
        // Both hot programs cast, or the watch says it does not.
        let mut cast_programs = 0;
        for (names, event) in programs {
            let mut last_error = None;
            for name in names {
                match load_on(&mut ebpf, name, event, &btf) {
                    Ok(()) => {
                        cast_programs += usize::from(matches!(*name, "nodelay_send" | "nodelay_ack"));
                        last_error = None;
                        break;
                    }
                    Err(error) => last_error = Some(error),
                }
            }
            if let Some(error) = last_error {
                return Err(error);
            }
        }
        Ok(HoldWatch { ebpf, started_ns: monotonic_ns(), casts_in_kernel: cast_programs == 2 })
    }

    /// Every (process, ports) the programs have counted since they started.
    pub fn read(&self) -> Result<Vec<HoldStats>, EbpfError> {
        let map =
            self.ebpf.map("holds").ok_or_else(|| EbpfError::Kernel("the object has no holds map".into()))?;
        let holds: HashMap<_, HoldKey, RawStats> =
            HashMap::try_from(map).map_err(|e| refused(&e, Attach::Tracing))?;
        let since_start =
            |ns: u64| (ns != 0).then(|| Duration::from_nanos(ns.saturating_sub(self.started_ns)));
        let mut all = Vec::new();
        for entry in holds.iter() {
            let (key, stats) = entry.map_err(|e| refused(&e, Attach::Tracing))?;
            let [delayed_ack, round_trip, unclassed, resent] =
                stats.kinds.each_ref().map(HoldTotals::from_raw);
            all.push(HoldStats {
                pid: key.tgid,
                local: address(stats.family, stats.local_addr, key.local_port),
                remote: address(stats.family, stats.remote_addr, key.remote_port),
                delayed_ack,
                round_trip,
                unclassed,
                resent,
                longest: Duration::from_nanos(stats.longest_ns),
                sends: stats.sends,
                exchanges: stats.exchanges,
                resends: stats.resends,
                closes: stats.closes,
                resets: stats.resets,
                first_hold: since_start(stats.first_hold_ns),
                last_hold: since_start(stats.last_hold_ns),
            });
        }
        all.sort_by_key(|stats| (stats.pid, stats.local.port(), stats.remote.port()));
        Ok(all)
    }
}
