//! The watch loop: packets from the live capture, decoded, through the flow table; holds to
//! the findings; once a second the owner index's waiting holds resolved, the idle flows
//! swept, the kernel's counts read, new findings and a summary told; at the end (`stop`
//! asked, or `--duration` over) the final summary. Without capture rights it runs the
//! sock_diag-only survey instead. Every event goes to the caller's sink; nothing prints.

use crate::args::{Source, WatchOptions, check_ports};
use crate::error::{WatchEnd, WatchError};
use crate::event::{Event, FlowCounts, Mode, ModeLine, PacketCounts, Summary, TICK};
use crate::findings::Findings;
use crate::flows::{DEFAULT_CAPACITY, FlowEvent, FlowTable};
use crate::kernel::{self, KernelWatchOptions, hold_thresholds};
use crate::live::batch::Frame;
use crate::live::{CaptureError, LiveCapture, interface_index};
use crate::owners::{HostOwners, Owners};
use crate::prometheus::{self, MetricsServer, WatchMetrics};
use nodelay_capture::decode::{LINKTYPE_RAW, decode_tcp};
use nodelay_ebpf::HoldWatch;
use nodelay_flags::Flag;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest wait for packets before looking at `stop` again.
const STOP_POLL: Duration = Duration::from_millis(100);
/// Packets handled before the loop looks at the clock again.
const PACKETS_PER_READ: usize = 4096;

/// The wall clock in nanoseconds since the Unix epoch (packets are timed on it).
fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Runs `nodelay watch` until `stop()` or the duration; every event goes to `sink`. A sink
/// whose reader went away (a broken pipe: `nodelay watch | head -3`) ends the watch quietly.
pub fn run(
    args: &WatchOptions,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn FnMut(&Event) -> io::Result<()>,
) -> Result<WatchEnd, WatchError> {
    match watch(args, stop, sink) {
        Err(WatchError::Output(error)) if error.kind() == io::ErrorKind::BrokenPipe => {
            Ok(WatchEnd { findings: false })
        }
        other => other,
    }
}

fn watch(
    args: &WatchOptions,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn FnMut(&Event) -> io::Result<()>,
) -> Result<WatchEnd, WatchError> {
    check_ports(&args.ports).map_err(|message| bad_option(Flag::Port, String::new(), message))?;
    interface_index(&args.interface).map_err(|e| WatchError::Usage(e.to_string()))?;
    if let Some(pid) = args.pid {
        crate::pid::exists(pid).map_err(|message| bad_option(Flag::Pid, pid.to_string(), message))?;
    }
    // The kernel's programs, where asked for or allowed; else why not, for the capture's line.
    let kernel_refused = match args.source {
        Source::Capture => None,
        Source::Ebpf | Source::Auto => match HoldWatch::start(hold_thresholds()) {
            Ok(programs) => return watch_kernel(programs, args, stop, sink),
            Err(error) if args.source == Source::Ebpf => {
                return Err(WatchError::Failed(format!("eBPF: {error}")));
            }
            Err(error) => Some(error.to_string()),
        },
    };
    let mut ports = args.ports.clone();
    if let Some(pid) = args.pid {
        let of_pid = crate::pid::ports_of(pid);
        ports.extend(of_pid.map_err(|message| bad_option(Flag::Pid, pid.to_string(), message))?);
        ports.sort_unstable();
        ports.dedup();
    }
    let (metrics, server) = metrics_server(args)?;
    let capture = match open_capture(&args.interface, &ports)? {
        Ok(capture) => capture,
        Err(why) => {
            if let Some(metrics) = &metrics {
                metrics.mode(prometheus::Mode::SockDiag);
            }
            return crate::survey::run(args, &ports, &why, metrics_url(&server), stop, sink);
        }
    };
    if let Some(metrics) = &metrics {
        metrics.mode(prometheus::Mode::Capture);
    }
    let mode = ModeLine {
        mode: Mode::Capture,
        interface: Some(args.interface.clone()),
        ports: ports.clone(),
        pid: args.pid,
        why: format!(
            "{}packet capture allowed (root or CAP_NET_RAW): headers only, TCP filtered in the kernel, {}",
            kernel_refused.map(|why| format!("no eBPF ({why}); ")).unwrap_or_default(),
            if capture.uses_ring() { "read from a memory-mapped ring" } else { "read in recvmmsg batches" }
        ),
        sees: "every TCP segment's headers: Nagle holds timed from the packets, named by process".into(),
        metrics_url: metrics_url(&server),
    };
    sink(&Event::Mode(mode)).map_err(WatchError::Output)?;
    Watch::new(capture, args, metrics).run(stop, sink)
}

/// The watch from the kernel, its programs attached.
fn watch_kernel(
    programs: HoldWatch,
    args: &WatchOptions,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn FnMut(&Event) -> io::Result<()>,
) -> Result<WatchEnd, WatchError> {
    let (metrics, server) = metrics_server(args)?;
    let mode = ModeLine {
        mode: Mode::Ebpf,
        interface: None,
        ports: args.ports.clone(),
        pid: args.pid,
        why: "eBPF allowed (root, or CAP_BPF with CAP_PERFMON): programs on the raw tracepoints \
              sock_send_length, tcp_probe, tcp_retransmit_skb and inet_sock_set_state, their sums read \
              once a second"
            .into(),
        sees: kernel::SEES.into(),
        metrics_url: metrics_url(&server),
    };
    let options = KernelWatchOptions { pid: args.pid, ports: args.ports.clone(), duration: args.duration };
    kernel::run(programs, options, mode, metrics, stop, sink)
}

fn bad_option(option: Flag, value: String, message: String) -> WatchError {
    WatchError::BadOption { option, value, message }
}

/// The metrics and their server, when `--prometheus` asked for them.
fn metrics_server(
    args: &WatchOptions,
) -> Result<(Option<Arc<WatchMetrics>>, Option<MetricsServer>), WatchError> {
    let Some(address) = args.prometheus else { return Ok((None, None)) };
    let metrics = Arc::new(WatchMetrics::new());
    let server = prometheus::serve(address, metrics.clone()).map_err(|e| {
        bad_option(Flag::Prometheus, address.to_string(), format!("cannot listen there: {e}"))
    })?;
    Ok((Some(metrics), Some(server)))
}

/// Where the metrics can be fetched: on a wildcard bind (`:0`, `0.0.0.0`, `[::]`), at the
/// loopback address of its family, which every wildcard includes.
fn metrics_url(server: &Option<MetricsServer>) -> Option<String> {
    let mut address = server.as_ref()?.local_addr();
    if address.ip().is_unspecified() {
        let loopback: std::net::IpAddr = match address {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        };
        address.set_ip(loopback);
    }
    Some(format!("http://{address}/metrics"))
}

/// The capture, or why capture rights are missing (the sock_diag-only mode runs then).
fn open_capture(interface: &str, ports: &[u16]) -> Result<Result<LiveCapture, String>, WatchError> {
    if let Err(why) = crate::survey::capture_allowed() {
        return Ok(Err(why));
    }
    match LiveCapture::open(interface, ports) {
        Ok(capture) => Ok(Ok(capture)),
        Err(CaptureError::NotPermitted(error)) => {
            Ok(Err(format!("opening a packet socket was refused ({error})")))
        }
        Err(error @ CaptureError::NoSuchInterface(_)) => Err(WatchError::Usage(error.to_string())),
        Err(error) => Err(WatchError::Failed(error.to_string())),
    }
}

/// A capture under way.
struct Watch {
    capture: LiveCapture,
    pipeline: Pipeline<HostOwners>,
    started: Instant,
    duration: Option<Duration>,
    metrics: Option<Arc<WatchMetrics>>,
}

/// Decoded packets through the flow table to the findings.
struct Pipeline<O: Owners> {
    table: FlowTable,
    findings: Findings,
    owners: O,
    packets: PacketCounts,
    metrics: Option<Arc<WatchMetrics>>,
}

impl<O: Owners> Pipeline<O> {
    fn frame(&mut self, frame: Frame<'_>, now: Instant) {
        let Some(segment) = decode_tcp(LINKTYPE_RAW, frame.data) else {
            self.packets.undecoded += 1;
            return;
        };
        self.packets.tcp += 1;
        let Pipeline { table, findings, owners, metrics, .. } = self;
        table.segment(frame.timestamp_ns, &segment, &mut |event| note(event, findings, owners, metrics, now));
    }
}

fn note(
    event: FlowEvent,
    findings: &mut Findings,
    owners: &mut impl Owners,
    metrics: &Option<Arc<WatchMetrics>>,
    now: Instant,
) {
    match event {
        FlowEvent::Hold { hold, first_in_flow } => findings.hold(hold, first_in_flow, owners, now),
        FlowEvent::Exchanges { client, server, count } => findings.exchanges(client, server, count, owners),
        FlowEvent::Ended { rtt_ns: Some(rtt_ns), .. } => {
            if let Some(metrics) = metrics {
                metrics.path_rtt(Duration::from_nanos(rtt_ns));
            }
        }
        FlowEvent::Ended { rtt_ns: None, .. } => {}
    }
}

impl Watch {
    fn new(capture: LiveCapture, args: &WatchOptions, metrics: Option<Arc<WatchMetrics>>) -> Self {
        let started = Instant::now();
        let pipeline = Pipeline {
            table: FlowTable::new(DEFAULT_CAPACITY),
            findings: Findings::new(wall_ns(), args.pid, metrics.clone()),
            owners: HostOwners::scan_now(),
            packets: PacketCounts::default(),
            metrics: metrics.clone(),
        };
        Watch { capture, pipeline, started, duration: args.duration, metrics }
    }

    fn run(
        mut self,
        stop: &dyn Fn() -> bool,
        sink: &mut dyn FnMut(&Event) -> io::Result<()>,
    ) -> Result<WatchEnd, WatchError> {
        let deadline = self.duration.map(|d| self.started + d);
        let mut next_tick = self.started + TICK;
        loop {
            let now = Instant::now();
            if stop() || deadline.is_some_and(|d| now >= d) {
                break;
            }
            if now >= next_tick {
                self.tick(sink, now)?;
                next_tick = (next_tick + TICK).max(now);
            }
            let until = deadline.map_or(next_tick, |d| d.min(next_tick));
            let wait = until.saturating_duration_since(now).min(STOP_POLL);
            let pipeline = &mut self.pipeline;
            self.capture
                .read(wait, PACKETS_PER_READ, |frame| pipeline.frame(frame, now))
                .map_err(|e| WatchError::Failed(format!("reading the capture: {e}")))?;
            pipeline.findings.resolve(&mut pipeline.owners, Instant::now());
        }
        // What the kernel holds already was captured before the stop: read it too.
        let now = Instant::now();
        let pipeline = &mut self.pipeline;
        self.capture
            .drain(|frame| pipeline.frame(frame, now))
            .map_err(|e| WatchError::Failed(format!("reading the capture: {e}")))?;
        let Pipeline { table, findings, owners, metrics, .. } = &mut self.pipeline;
        table.finish(&mut |event| note(event, findings, owners, metrics, now));
        self.tell_findings(sink, now)?;
        let summary = self.summary();
        let findings = !summary.is_healthy();
        sink(&Event::Final(summary)).map_err(WatchError::Output)?;
        Ok(WatchEnd { findings })
    }

    fn tick(
        &mut self,
        sink: &mut dyn FnMut(&Event) -> io::Result<()>,
        now: Instant,
    ) -> Result<(), WatchError> {
        let Pipeline { table, findings, owners, metrics, .. } = &mut self.pipeline;
        table.sweep(wall_ns(), &mut |event| note(event, findings, owners, metrics, now));
        self.tell_findings(sink, now)?;
        let summary = self.summary();
        if let (Some(metrics), Some(flows), Some(packets)) = (&self.metrics, summary.flows, summary.packets) {
            metrics.flows_watched(flows.open);
            metrics.flows_seen(flows.seen);
            metrics.flows_evicted(flows.evicted);
            metrics.packets(packets.captured.saturating_sub(packets.dropped), packets.dropped);
        }
        sink(&Event::Summary(summary)).map_err(WatchError::Output)
    }

    fn tell_findings(
        &mut self,
        sink: &mut dyn FnMut(&Event) -> io::Result<()>,
        now: Instant,
    ) -> Result<(), WatchError> {
        let pipeline = &mut self.pipeline;
        for stalls in pipeline.findings.tick(&mut pipeline.owners, now) {
            sink(&Event::Finding(stalls)).map_err(WatchError::Output)?;
        }
        Ok(())
    }

    fn packet_counts(&mut self) -> PacketCounts {
        let kernel = self.capture.kernel_counts();
        PacketCounts {
            captured: kernel.packets.saturating_sub(self.capture.loopback_copies()),
            dropped: kernel.dropped,
            ..self.pipeline.packets
        }
    }

    fn summary(&mut self) -> Summary {
        let packets = self.packet_counts();
        let (table, findings) = (&self.pipeline.table, &self.pipeline.findings);
        Summary {
            elapsed_s: self.started.elapsed().as_secs_f64(),
            packets: Some(packets),
            flows: Some(FlowCounts {
                open: table.len() as u64,
                seen: table.counts.seen,
                closed: table.counts.closed,
                idle: table.counts.idle,
                evicted: table.counts.evicted,
            }),
            kernel: None,
            exchanges: findings.exchanges,
            findings: findings.all(),
            stalls_not_grouped: findings.not_grouped,
            stalls_of_other_processes: findings.other_processes,
        }
    }
}
