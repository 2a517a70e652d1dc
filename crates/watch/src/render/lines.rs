//! Watch's text for a pipe or a file: the mode line, one line per finding as it is found
//! (and in the sock_diag mode, per process and port that can stall), then the final summary.
//! A finding's line is stamped with the time of the latest hold it counts, as a log line is
//! with its own time (its JSON event has the first hold's too).
//! The per-second summaries print nothing here: a log gains a line only when there is news.

use super::{count, counted, next_command, ports, seconds, stalls_line, wrap};
use crate::event::{Event, FlowCounts, KernelCounts, Mode, ModeLine, PacketCounts, Summary, Survey};
use nodelay_host::socket_survey::ProcessSockets;
use std::collections::HashSet;

/// The line renderer; it remembers what it told already.
#[derive(Debug, Default)]
pub struct Lines {
    mode: Option<ModeLine>,
    surveyed: HashSet<Option<u32>>,
}

impl Lines {
    /// The text for `event` at `width` columns; empty when it adds nothing.
    pub fn render(&mut self, event: &Event, width: usize) -> String {
        match event {
            Event::Mode(mode) => {
                self.mode = Some(mode.clone());
                wrap(&mode_line(mode), width)
            }
            Event::Finding(stalls) => wrap(
                &format!(
                    "[{}] {}; next: {}",
                    seconds(stalls.last_s),
                    stalls_line(stalls),
                    next_command(stalls)
                ),
                width,
            ),
            Event::Summary(_) => String::new(),
            Event::Survey(survey) => {
                let new: Vec<&ProcessSockets> =
                    survey.processes.iter().filter(|p| self.surveyed.insert(p.pid)).collect();
                let at = seconds(survey.elapsed_s);
                new.iter().map(|p| wrap(&format!("[{at}] {}", survey_line(p)), width)).collect()
            }
            Event::FinalSurvey(survey) => wrap(&final_survey(survey), width),
            Event::Final(summary) => self.final_summary(summary, width),
        }
    }

    fn final_summary(&self, summary: &Summary, width: usize) -> String {
        let (interface, port_list) = match &self.mode {
            Some(mode) => (mode.interface.clone().unwrap_or_else(|| "any".into()), mode.ports.clone()),
            None => ("any".into(), Vec::new()),
        };
        let mut out = String::new();
        let traffic = match (&summary.packets, &summary.flows, &summary.kernel) {
            (Some(packets), Some(flows), _) => {
                out += &capture_totals(summary, packets, flows, &interface, &port_list, width);
                packets.tcp > 0
            }
            (_, _, Some(kernel)) => {
                out += &kernel_totals(summary, kernel, &port_list, width);
                kernel.sends > 0
            }
            _ => true,
        };
        if !traffic {
            let nothing = match summary.kernel {
                Some(_) => "no send from a socket with Nagle on (TCP_NODELAY off)",
                None => "no TCP traffic",
            };
            out += &wrap(
                &format!("{nothing} on {} in {}", ports(&port_list), seconds(summary.elapsed_s)),
                width,
            );
        } else if summary.findings.is_empty() {
            out +=
                &wrap(&format!("no stall: no Nagle hold in {} exchanges", count(summary.exchanges)), width);
        }
        for stalls in &summary.findings {
            let held = stalls.lost_ms / 1e3;
            out += &wrap(&format!("{} ({} held in all)", stalls_line(stalls), seconds(held)), width);
        }
        if summary.stalls_not_grouped > 0 {
            out += &wrap(
                &format!("{} more stalls in groups past the first 1024", count(summary.stalls_not_grouped)),
                width,
            );
        }
        out
    }
}

/// The capture's totals: packets, drops, connections, exchanges; a warning for drops and
/// evictions.
fn capture_totals(
    summary: &Summary,
    packets: &PacketCounts,
    flows: &FlowCounts,
    interface: &str,
    port_list: &[u16],
    width: usize,
) -> String {
    let mut out = wrap(
        &format!(
            "watch: {} on {interface}, TCP on {}: {} captured ({} dropped by the kernel), {}, {}",
            seconds(summary.elapsed_s),
            ports(port_list),
            counted(packets.captured, "packet", "packets"),
            count(packets.dropped),
            counted(flows.seen, "connection", "connections"),
            counted(summary.exchanges, "request/response exchange", "request/response exchanges")
        ),
        width,
    );
    if packets.dropped > 0 {
        out += &wrap(
            &format!(
                "warning: the kernel dropped {} packets watch did not read in time: stalls among them \
                 were not seen",
                count(packets.dropped)
            ),
            width,
        );
    }
    if flows.evicted > 0 {
        out += &wrap(
            &format!(
                "note: {} connections were evicted from the full flow table (the longest idle first)",
                count(flows.evicted)
            ),
            width,
        );
    }
    out
}

/// The kernel's totals: sends and connections with Nagle on, exchanges, holds of no kind.
fn kernel_totals(summary: &Summary, kernel: &KernelCounts, port_list: &[u16], width: usize) -> String {
    let mut out = wrap(
        &format!(
            "watch: {} from the kernel, TCP on {}: {} on {} with Nagle on, {}",
            seconds(summary.elapsed_s),
            ports(port_list),
            counted(kernel.sends, "send", "sends"),
            counted(kernel.connections, "connection", "connections"),
            counted(summary.exchanges, "request/response exchange", "request/response exchanges")
        ),
        width,
    );
    let mut also = Vec::new();
    if kernel.resends > 0 {
        also.push(counted(kernel.resends, "retransmission", "retransmissions"));
    }
    if kernel.closes > 0 {
        let resets =
            if kernel.resets > 0 { format!(" ({} by a reset)", count(kernel.resets)) } else { String::new() };
        also.push(format!("{} ended{resets}", counted(kernel.closes, "connection", "connections")));
    }
    if !also.is_empty() {
        out += &wrap(&format!("and {}", also.join(", ")), width);
    }
    if kernel.holds_resent > 0 {
        out += &wrap(
            &format!(
                "note: {} waited on a resend (a lost segment's or a stalled path's wait, not the \
                 peer's ACK timer): not in the findings",
                counted(kernel.holds_resent, "hold", "holds")
            ),
            width,
        );
    }
    if kernel.holds_unclassed > 0 {
        out += &wrap(
            &format!(
                "note: {} holds were neither a delayed ACK's nor a round trip's (under 0.5 ms, or longer \
                 than any ACK timer): not in the findings",
                count(kernel.holds_unclassed)
            ),
            width,
        );
    }
    out
}

/// `watch: live capture on lo, TCP port 8080: WHY`.
fn mode_line(mode: &ModeLine) -> String {
    let pid = mode.pid.map(|pid| format!(" of PID {pid}")).unwrap_or_default();
    match mode.mode {
        Mode::Capture => format!(
            "watch: live capture on {}, TCP on {}{pid}: {}{}; Ctrl-C for the summary",
            mode.interface.as_deref().unwrap_or("any"),
            ports(&mode.ports),
            mode.why,
            mode.metrics_url.as_ref().map_or(String::new(), |url| format!("; metrics at {url}"))
        ),
        Mode::Ebpf => format!(
            "watch: from the kernel (eBPF), TCP on {}{pid}: {}{}; Ctrl-C for the summary",
            ports(&mode.ports),
            mode.why,
            mode.metrics_url.as_ref().map_or(String::new(), |url| format!("; metrics at {url}"))
        ),
        Mode::SockDiag => format!("watch: sock_diag-only mode ({}); it sees {}", mode.why, mode.sees),
    }
}

/// `python3 (PID 812), listening on 8080: 3 of 4 TCP sockets with TCP_NODELAY off, ...`.
pub(super) fn survey_line(p: &ProcessSockets) -> String {
    let process = match (&p.command, p.pid) {
        (Some(command), Some(pid)) => format!("{command} (PID {pid})"),
        _ => "sockets of processes not readable".into(),
    };
    let listening = match p.listening_ports.as_slice() {
        [] => String::new(),
        ports => {
            format!(", listening on {}", ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", "))
        }
    };
    format!(
        "{process}{listening}: {} of {} TCP sockets with TCP_NODELAY off (Nagle on), {} holding a small \
         write back now, {} showing a peer's delayed ACKs in their RTT, {} owing a delayed ACK; {} \
         unacknowledged, {} not yet sent",
        p.nodelay_off,
        p.sockets,
        p.nagle_holding,
        p.nagle_prone,
        p.delayed_ack_pending,
        counted(p.unacked_bytes, "byte", "bytes"),
        counted(p.notsent_bytes, "byte", "bytes"),
    )
}

/// The sock_diag mode's last word.
fn final_survey(survey: &Survey) -> String {
    let off: usize = survey.processes.iter().map(|p| p.nodelay_off).sum();
    let unreadable = match survey.unreadable_processes {
        0 => String::new(),
        n => format!(
            "; {} could not be read (their sockets have no process)",
            counted(n, "process", "processes")
        ),
    };
    let delayed = survey
        .delayed_acks_per_s
        .map(|rate| format!("; the host fired {rate:.1} delayed ACKs/s"))
        .unwrap_or_default();
    format!(
        "watch: {} in the sock_diag-only mode: {}, {} with TCP_NODELAY off in {}, {} showing a peer's \
         delayed ACKs{unreadable}{delayed}; without packets no stall is timed or proven: run watch as root \
         or with CAP_NET_RAW to capture them",
        seconds(survey.elapsed_s),
        counted(survey.sockets, "TCP socket", "TCP sockets"),
        off,
        counted(survey.processes.len() as u64, "process", "processes"),
        survey.nagle_prone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FindingId, Peer, Process, Side, Stalls};

    #[test]
    fn a_finding_line_is_stamped_with_its_latest_hold_not_its_first() {
        let stalls = Stalls {
            finding: FindingId::ServerNagleDelayedAck,
            side: Side::Server,
            process: Some(Process { pid: 16531, command: "python3".into(), fd: Some(4) }),
            holder_is_local: true,
            server: "127.0.0.1:43267".into(),
            port: 43267,
            stalls: 21,
            exchanges: 23,
            flows: 1,
            lost_ms: 907.0,
            mean_stall_ms: 43.2,
            mean_ack_delay_ms: 40.0,
            first_s: 0.1,
            last_s: 1.0,
            peer: None,
        };
        // 21 holds of 43 ms cannot all have come by 0.1 s: the line is as of the 21st.
        let line = Lines::default().render(&Event::Finding(stalls.clone()), usize::MAX);
        assert!(line.starts_with("[1.0 s] python3 (PID 16531, fd 4)"), "{line}");
        // A local peer's delayed ACKs are named after the figures.
        let peer = Peer { pid: 16540, command: "curl".into(), ack_timeout_ms: Some(40.0) };
        let named =
            Lines::default().render(&Event::Finding(Stalls { peer: Some(peer), ..stalls }), usize::MAX);
        assert!(named.contains("43.2 ms each; peer: curl (PID 16540, delaying its ACKs 40.0 ms)"), "{named}");
    }

    #[test]
    fn the_kernels_totals_say_resends_ends_and_holds_counted_apart_only_when_there_were_any() {
        let counts = KernelCounts { sends: 60, connections: 1, ..KernelCounts::default() };
        let summary = |kernel| Summary {
            elapsed_s: 3.0,
            packets: None,
            flows: None,
            kernel: Some(kernel),
            exchanges: 30,
            findings: Vec::new(),
            stalls_not_grouped: 0,
            stalls_of_other_processes: 0,
        };
        let quiet = Lines::default().render(&Event::Final(summary(counts)), 200);
        assert!(!quiet.contains("resent") && !quiet.contains("note:"), "{quiet}");
        let troubled = KernelCounts { resends: 3, closes: 1, resets: 1, holds_resent: 1, ..counts };
        let text = Lines::default().render(&Event::Final(summary(troubled)), 200);
        assert!(text.contains("\nand 3 retransmissions, 1 connection ended (1 by a reset)\n"), "{text}");
        assert!(text.contains("note: 1 hold waited on a resend"), "{text}");
        let narrow = Lines::default().render(&Event::Final(summary(troubled)), 60);
        assert!(narrow.lines().all(|line| line.chars().count() <= 60), "{narrow}");
    }
}
