//! [`WatchMetrics`]: what `nodelay watch` counts, in a prometheus-client registry, updated from
//! the capture thread through `&self` (atomics; a lock only for stalls, which are rare).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use nodelay_capture::Role;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use super::labels::{LABEL_SETS_MAX, LabelCap};
use super::stall_histogram::{STALL_BUCKETS, StallHistogram};

/// Upper bounds of the path round-trip buckets, in seconds: from loopback's tens of
/// microseconds to a second.
pub const PATH_RTT_BUCKETS_SECONDS: [f64; 14] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// How watch sees the host's TCP, exposed as `nodelay_watch_mode_info{mode="..."}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Live capture: packets, so stalls are measured.
    Capture,
    /// sock_diag only (no CAP_NET_RAW): socket states, no packets, no stall durations.
    SockDiag,
    /// eBPF programs: holds timed in the kernel and summed there, so counted per second, not
    /// observed one by one (the stall histogram stays empty).
    Ebpf,
}

impl Mode {
    /// The `mode` label value: `capture`, `sock_diag` or `ebpf`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Capture => "capture",
            Mode::SockDiag => "sock_diag",
            Mode::Ebpf => "ebpf",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StallLabels {
    finding: String,
    process: String,
    pid: String,
    port: String,
    side: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExchangeLabels {
    process: String,
    pid: String,
    port: String,
    side: &'static str,
}

/// The local process a metric is counted for: its name (`""` if unknown) and PID.
#[derive(Debug, Clone, Copy)]
pub struct Holder<'a> {
    /// The process's name.
    pub command: &'a str,
    /// Its PID; `None` if unknown.
    pub pid: Option<u32>,
}

impl<'a> Holder<'a> {
    /// A process known by name only.
    pub fn named(command: &'a str) -> Self {
        Holder { command, pid: None }
    }
}

fn side_label(side: Role) -> &'static str {
    match side {
        Role::Server => "server",
        Role::Client => "client",
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FindingLabels {
    finding: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

/// The metrics of one `nodelay watch` run. Send + Sync: share it as an `Arc` between the
/// capture thread, which records, and [`serve`](super::serve), which encodes.
#[derive(Debug)]
pub struct WatchMetrics {
    registry: Registry,
    labels: LabelCap,
    stalls: Family<StallLabels, Counter>,
    held_seconds: Family<StallLabels, Counter<f64, AtomicU64>>,
    exchanges: Family<ExchangeLabels, Counter>,
    stall_seconds: Family<FindingLabels, StallHistogram>,
    path_rtt_seconds: Histogram,
    flows: Gauge,
    flows_seen: Counter,
    flows_evicted: Counter,
    packets: Counter,
    packets_dropped: Counter,
    mode: Arc<ModeInfo>,
}

impl Default for WatchMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl WatchMetrics {
    /// Every metric registered, at zero, with the label cap of [`LABEL_SETS_MAX`].
    pub fn new() -> Self {
        Self::with_label_cap(LABEL_SETS_MAX)
    }

    /// The same with at most `pairs_max` distinct (process, port) label pairs.
    pub fn with_label_cap(pairs_max: usize) -> Self {
        let metrics = WatchMetrics {
            registry: Registry::with_prefix("nodelay_watch"),
            labels: LabelCap::new(pairs_max),
            stalls: Family::default(),
            held_seconds: Family::default(),
            exchanges: Family::default(),
            stall_seconds: Family::default(),
            path_rtt_seconds: Histogram::new(PATH_RTT_BUCKETS_SECONDS),
            flows: Gauge::default(),
            flows_seen: Counter::default(),
            flows_evicted: Counter::default(),
            packets: Counter::default(),
            packets_dropped: Counter::default(),
            mode: Arc::new(ModeInfo::default()),
        };
        metrics.register()
    }

    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "stalls",
            "Nagle x delayed-ACK stalls seen, by finding id, local process, the connection's \
             server port and the side the local socket is on",
            self.stalls.clone(),
        );
        r.register_with_unit(
            "held",
            "Time stalls held data back in all, by the labels of nodelay_watch_stalls_total",
            Unit::Seconds,
            self.held_seconds.clone(),
        );
        r.register(
            "exchanges",
            "Request/response exchanges seen, by local process, the connection's server port and \
             the side the local process is on: the denominator of nodelay_watch_stalls_total",
            self.exchanges.clone(),
        );
        r.register_with_unit(
            "stall_duration",
            "Time each stall held data back, by finding id",
            Unit::Seconds,
            self.stall_seconds.clone(),
        );
        r.register_with_unit(
            "path_rtt",
            "Round trips of the watched flows' network path, as their packets show them",
            Unit::Seconds,
            self.path_rtt_seconds.clone(),
        );
        r.register("flows", "TCP flows in watch's flow table now", self.flows.clone());
        r.register("flows_seen", "TCP flows watch has seen start", self.flows_seen.clone());
        r.register(
            "flows_evicted",
            "Flows dropped from the full flow table before they ended",
            self.flows_evicted.clone(),
        );
        r.register(
            "packets",
            "Packets watch read from the capture (not counting the dropped ones)",
            self.packets.clone(),
        );
        r.register(
            "packets_dropped",
            "Packets the kernel dropped before watch could read them",
            self.packets_dropped.clone(),
        );
        r.register_collector(Box::new(self.mode.clone()));
        self
    }

    /// Counts one stall of `finding` (an analyzer finding id such as
    /// `server-nagle-delayed-ack`) by the local `process` (its name; `""` if unknown), on the
    /// connection to `server_port` (the local port of a server, the port a client connected
    /// to: never a client's ephemeral port, which would make a label per connection), where
    /// the process is on `side`, and observes how long the stall held data back.
    pub fn stall(&self, finding: &str, holder: Holder<'_>, server_port: u16, side: Role, stall: Duration) {
        let labels = self.stall_labels(finding, holder, server_port, side);
        self.stall_seconds
            .get_or_create(&FindingLabels { finding: labels.finding.clone() })
            .observe(stall.as_secs_f64());
        self.held_seconds.get_or_create(&labels).inc_by(stall.as_secs_f64());
        self.stalls.get_or_create(&labels).inc();
    }

    /// Counts `count` stalls holding `held` in all, summed and bucketed elsewhere (the kernel's
    /// programs, by the histogram's bounds): `buckets` has each bucket's new stalls.
    #[allow(clippy::too_many_arguments)]
    pub fn stalls_summed(
        &self,
        finding: &str,
        holder: Holder<'_>,
        server_port: u16,
        side: Role,
        count: u64,
        buckets: &[u64; STALL_BUCKETS],
        held: Duration,
    ) {
        let labels = self.stall_labels(finding, holder, server_port, side);
        self.stall_seconds
            .get_or_create(&FindingLabels { finding: labels.finding.clone() })
            .add(buckets, held.as_secs_f64());
        self.held_seconds.get_or_create(&labels).inc_by(held.as_secs_f64());
        self.stalls.get_or_create(&labels).inc_by(count);
    }

    /// A stall's labels, admitted under the cap on label sets.
    fn stall_labels(&self, finding: &str, holder: Holder<'_>, server_port: u16, side: Role) -> StallLabels {
        let labels = self.labels.admit(Some(finding), holder.command, holder.pid, server_port);
        StallLabels {
            finding: labels.finding,
            process: labels.process,
            pid: labels.pid,
            port: labels.port,
            side: side_label(side),
        }
    }

    /// Counts `count` request/response exchanges of the local `holder` on connections to
    /// `server_port`, where it is on `side`.
    pub fn exchanges(&self, holder: Holder<'_>, server_port: u16, side: Role, count: u64) {
        let labels = self.labels.admit(None, holder.command, holder.pid, server_port);
        let labels = ExchangeLabels {
            process: labels.process,
            pid: labels.pid,
            port: labels.port,
            side: side_label(side),
        };
        self.exchanges.get_or_create(&labels).inc_by(count);
    }

    /// Observes one round trip of a watched flow's path (a sample, not an average).
    pub fn path_rtt(&self, rtt: Duration) {
        self.path_rtt_seconds.observe(rtt.as_secs_f64());
    }

    /// Sets the number of flows in the flow table now.
    pub fn flows_watched(&self, open: u64) {
        self.flows.set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Sets the number of flows seen since watch started (a running total: a smaller value
    /// than the last one is ignored, so the counter never goes back).
    pub fn flows_seen(&self, total: u64) {
        self.flows_seen.inner().fetch_max(total, Ordering::Relaxed);
    }

    /// Sets the number of flows evicted from the full flow table since watch started (a
    /// running total).
    pub fn flows_evicted(&self, total: u64) {
        self.flows_evicted.inner().fetch_max(total, Ordering::Relaxed);
    }

    /// Sets the packets watch read and those the kernel dropped before it could, since watch
    /// started (running totals). PACKET_STATISTICS resets on each read, so the caller sums
    /// what it reads; its `tp_packets` counts the dropped packets too, so the caller passes
    /// `tp_packets - tp_drops` as `captured_total`.
    pub fn packets(&self, captured_total: u64, dropped_total: u64) {
        self.packets.inner().fetch_max(captured_total, Ordering::Relaxed);
        self.packets_dropped.inner().fetch_max(dropped_total, Ordering::Relaxed);
    }

    /// Says which mode watch runs in; `nodelay_watch_mode_info` is absent until then.
    pub fn mode(&self, mode: Mode) {
        let code = match mode {
            Mode::Capture => MODE_CAPTURE,
            Mode::SockDiag => MODE_SOCK_DIAG,
            Mode::Ebpf => MODE_EBPF,
        };
        self.mode.0.store(code, Ordering::Relaxed);
    }

    /// Every metric in the OpenMetrics text format (what `/metrics` serves), `# EOF` last.
    pub fn encode(&self) -> String {
        let mut text = String::with_capacity(4096);
        // Writing to a String cannot fail, and the label values were escaped on admission.
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

const MODE_UNSET: u8 = 0;
const MODE_CAPTURE: u8 = 1;
const MODE_SOCK_DIAG: u8 = 2;
const MODE_EBPF: u8 = 3;

/// The mode as an info metric, encoded only once set (a registered [`Info`] could not change).
#[derive(Debug, Default)]
struct ModeInfo(AtomicU8);

impl Collector for ModeInfo {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mode = match self.0.load(Ordering::Relaxed) {
            MODE_UNSET => return Ok(()),
            MODE_CAPTURE => Mode::Capture,
            MODE_EBPF => Mode::Ebpf,
            _ => Mode::SockDiag,
        };
        let info = Info::new(ModeLabels { mode: mode.as_str() });
        let metric = encoder.encode_descriptor(
            "mode",
            "How watch sees the host's TCP: capture (packets), ebpf (the kernel's programs) or sock_diag (socket states only).",
            None,
            info.metric_type(),
        )?;
        info.encode(metric)
    }
}
