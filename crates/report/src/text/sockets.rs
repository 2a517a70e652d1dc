//! The text of `nodelay inspect` and `nodelay fix`: a program's TCP sockets and what
//! setting TCP_NODELAY on them changed.

use crate::format::{DurationScale, plural};
use crate::model::sockets::{FixReport, InspectReport};
use crate::render::Render;
use crate::text::FittedText;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::{wrap, wrap_words};
use nodelay_diagnose::NodelayState;
use nodelay_host::{ProcessInfo, SocketState, SocketView, WithNewConnection};
use nodelay_tcp::TcpInfo;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};
/// "PID 4242 (python3, uid 1000)", each process of the target.
fn describe_processes(processes: &[ProcessInfo]) -> String {
    let each: Vec<String> =
        processes.iter().map(|p| format!("PID {} ({}, uid {})", p.pid, p.command, p.uid)).collect();
    each.join(", ")
}

impl Render<InspectReport> for FittedText {
    fn render(&self, report: &InspectReport) -> String {
        let mut out = wrap(
            &format!(
                "{}: {}",
                subject(&report.target, &report.processes),
                plural(report.sockets.len(), "TCP socket", "TCP sockets")
            ),
            self.width,
            "",
            "  ",
        );
        if report.sockets.is_empty() {
            return out;
        }
        out.push('\n');
        out.push_str(&socket_table(&report.sockets, report.processes.len() > 1, None, self.width));
        let fix = match report.target.strip_prefix("port ") {
            Some(port) => format!("nodelay fix :{port}"),
            None => format!("nodelay fix {}", report.processes.first().map_or(0, |p| p.pid)),
        };
        let judged = &report.nodelay;
        let sentence = match judged.state {
            NodelayState::OffOnConnections => format!(
                "TCP_NODELAY is off on {}: `{fix}` sets it without a restart (connections a listening socket \
                 accepts afterwards inherit it).",
                plural(judged.connections_off, "connection", "connections")
            ),
            NodelayState::UnknownUntilAccepted => format!(
                "TCP_NODELAY is off on the listening {}, and no connection is open: unknown until one is \
                 accepted, as the server may set it on each connection (run inspect again while a client is \
                 connected).",
                if judged.listeners_off == 1 { "socket" } else { "sockets" }
            ),
            NodelayState::On if judged.listeners_off > 0 => format!(
                "TCP_NODELAY is on on every connection ({}): the server sets it as it accepts each; the \
                 listening socket's own setting changes nothing. Nothing to fix.",
                judged.connections_on
            ),
            NodelayState::On | NodelayState::NoSockets => String::new(),
        };
        if !sentence.is_empty() {
            out.push('\n');
            out.push_str(&wrap(&sentence, self.width, "", ""));
        }
        for cgroup in report.cgroups.iter().filter(|c| c.sock_ops || c.setsockopt) {
            let what = match (cgroup.sock_ops, cgroup.setsockopt) {
                (true, true) => {
                    "new connections get TCP_NODELAY, and a program's setsockopt(TCP_NODELAY, 0) is kept at 1"
                }
                (true, false) => "new connections get TCP_NODELAY",
                _ => "a program's setsockopt(TCP_NODELAY, 0) is kept at 1",
            };
            out.push('\n');
            out.push_str(&wrap(
                &format!("cgroup {} carries nodelay's eBPF fix: {what}.", cgroup.path),
                self.width,
                "",
                "  ",
            ));
        }
        out
    }
}

impl Render<FixReport> for FittedText {
    fn render(&self, report: &FixReport) -> String {
        let connections = report.changed.len() - report.listening_changed;
        let who = subject(&report.target, &report.processes);
        let summary = if report.changed.is_empty() && report.already_on == 0 {
            format!("{who}: no TCP socket to change.")
        } else if report.changed.is_empty() {
            format!(
                "{who}: every TCP socket already has TCP_NODELAY ({}); nothing to change.",
                plural(report.already_on, "socket", "sockets")
            )
        } else {
            let verb = if report.dry_run { "would set" } else { "set" };
            let mut text = format!(
                "{who}: {verb} TCP_NODELAY on {} and {}",
                plural(report.listening_changed, "listening socket", "listening sockets"),
                plural(connections, "connection", "connections"),
            );
            if report.already_on > 0 {
                let _ = write!(text, "; {} had it already", plural(report.already_on, "socket", "sockets"));
            }
            text.push_str(if report.dry_run {
                ". Dry run: nothing was changed."
            } else if report.listening_changed > 0 {
                ". Connections accepted from now on start with it, unless the program turns it off on each; it lasts \
                 until the program restarts."
            } else {
                ". It lasts as long as these connections."
            });
            text
        };
        let mut out = wrap(&summary, self.width, "", "  ");
        if !report.changed.is_empty() {
            out.push('\n');
            // A dry run's header says nothing changed; the column shows what would.
            out.push_str(&socket_table(
                &report.changed,
                report.processes.len() > 1,
                Some("off → on"),
                self.width,
            ));
        }
        out
    }
}

/// `nodelay fix`'s text: the report, then one paragraph on the new connection checked after.
impl Render<WithNewConnection<FixReport>> for FittedText {
    fn render(&self, checked: &WithNewConnection<FixReport>) -> String {
        let mut text = self.render(&checked.report);
        if let Some(check) = &checked.new_connection {
            let line = if check.turned_off() {
                format!("warning: {}.", check.summary)
            } else if check.nodelay.is_some() {
                format!(
                    "checked: {} (a connection to {}, watched {:.0} ms).",
                    check.summary, check.address, check.watched_ms
                )
            } else {
                format!("{}.", check.summary)
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push('\n');
            text.push_str(&wrap_words(&line, self.width, "", "  ").join("\n"));
            text.push('\n');
        }
        text
    }
}

/// "PID 4242 (python3, uid 1000)", or for a port "port 8080: PID ...", each process.
fn subject(target: &str, processes: &[ProcessInfo]) -> String {
    let processes = describe_processes(processes);
    if target.starts_with("PID ") { processes } else { format!("{target}: {processes}") }
}

/// One row per socket: where it listens or whom it talks to, its options and, for a
/// connection, the kernel's RTT, delayed-ACK timeout and unacknowledged segments.
/// `nodelay_change` replaces the NODELAY column's values (what `fix` did to them).
fn socket_table(
    sockets: &[SocketView],
    with_pid: bool,
    nodelay_change: Option<&str>,
    width: usize,
) -> String {
    let infos: Vec<_> = sockets.iter().filter_map(|s| s.tcp_info).collect();
    let rtt = DurationScale::for_ms(infos.iter().map(|i| nodelay_tcp::time::ms_from_us(i.rtt_us)));
    let ato = DurationScale::for_ms(infos.iter().map(|i| nodelay_tcp::time::ms_from_us(i.ato_us)));
    let listening_ports: Vec<(i32, u16)> =
        sockets.iter().filter(|s| s.state == SocketState::Listen).map(|s| (s.pid, s.local.port())).collect();
    let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
    // Each column: its header, alignment, and cells.
    let mut columns: Vec<(&str, Col, Vec<String>)> = Vec::new();
    let mut column = |header, align, cell: &dyn Fn(&SocketView) -> String| {
        columns.push((header, align, sockets.iter().map(cell).collect()));
    };
    if with_pid {
        column("PID", Col::Right, &|s| s.pid.to_string());
    }
    column("FD", Col::Right, &|s| s.fd.to_string());
    column("STATE", Col::Left, &|s| s.state.short().to_string());
    column("ADDRESS", Col::Left, &|s| match s.peer {
        None => address(s.local),
        Some(peer) if listening_ports.contains(&(s.pid, s.local.port())) => format!("from {}", address(peer)),
        Some(peer) => format!("to {}", address(peer)),
    });
    column("NODELAY", Col::Left, &|s| nodelay_change.map_or_else(|| on_off(s.nodelay), str::to_string));
    // Kernel figures exist for connections only.
    let kernel =
        |s: &SocketView, figure: &dyn Fn(&TcpInfo) -> String| s.tcp_info.as_ref().map_or("-".into(), figure);
    column("RTT", Col::Right, &|s| kernel(s, &|i| rtt.format(nodelay_tcp::time::ms_from_us(i.rtt_us))));
    column("ATO", Col::Right, &|s| kernel(s, &|i| ato.format(nodelay_tcp::time::ms_from_us(i.ato_us))));
    column("UNACKED", Col::Right, &|s| kernel(s, &|i| i.unacked_segments.to_string()));
    column("CORK", Col::Left, &|s| on_off(s.cork));
    let mut table = TextTable::new(width, 2, &columns.iter().map(|(_, align, _)| *align).collect::<Vec<_>>());
    table.header(columns.iter().map(|(header, _, _)| *header));
    // Too narrow for every column: the rest go in a part below, rows named by their FD (and PID).
    table.keys(if with_pid { 2 } else { 1 });
    for row in 0..sockets.len() {
        table.row(columns.iter().map(|(_, _, cells)| cells[row].clone()));
    }
    table.render()
}

/// An address as people write it: IPv4-mapped IPv6 addresses as IPv4.
fn address(address: SocketAddr) -> String {
    match address.ip() {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => {
            SocketAddr::new(IpAddr::V4(v6.to_ipv4_mapped().expect("checked")), address.port()).to_string()
        }
        _ => address.to_string(),
    }
}
