//! Watch's terminal view, redrawn in place every second as `top` is: a header (mode,
//! interface, ports, time, packets and drops, connections), then the stalling processes and
//! ports, most time held first, as many as the terminal's height allows: two lines each, who
//! (process → server) then what (finding, stalls out of exchanges, each, held in all), so that
//! 80 columns hold both; a line wider than the terminal is cut. When watch stops the view
//! gives way to the final summary of [`Lines`].

use super::{Lines, count, counted, fit, milliseconds, ports, seconds};
use crate::event::{Event, Mode, ModeLine, Side, Stalls, Summary, Survey};

/// Moves the cursor home and clears the screen below it.
const HOME_AND_CLEAR: &str = "\x1b[H\x1b[J";

/// The terminal renderer.
#[derive(Debug, Default)]
pub struct Top {
    mode: Option<ModeLine>,
    lines: Lines,
}

impl Top {
    /// The text for `event` on a terminal of `width` × `height`: a whole frame (starting with
    /// the escape codes that redraw in place), or the final summary; empty when nothing changes.
    pub fn render(&mut self, event: &Event, width: usize, height: usize) -> String {
        let width = width.max(20);
        match event {
            Event::Mode(mode) => {
                self.mode = Some(mode.clone());
                // The lines renderer keeps the mode for the final summary.
                let _ = self.lines.render(event, width);
                String::new()
            }
            Event::Finding(_) => String::new(),
            Event::Summary(summary) => self.frame(summary, width, height),
            Event::Survey(survey) => self.survey_frame(survey, width, height),
            Event::Final(_) | Event::FinalSurvey(_) => {
                format!("{HOME_AND_CLEAR}{}", self.lines.render(event, width))
            }
        }
    }

    fn header(&self, elapsed_s: f64) -> String {
        match &self.mode {
            Some(mode) if mode.mode == Mode::Capture => format!(
                "nodelay watch · {} · TCP on {} · {}",
                mode.interface.as_deref().unwrap_or("any"),
                ports(&mode.ports),
                seconds(elapsed_s)
            ),
            Some(mode) if mode.mode == Mode::Ebpf => format!(
                "nodelay watch · from the kernel (eBPF) · TCP on {} · {}",
                ports(&mode.ports),
                seconds(elapsed_s)
            ),
            _ => format!("nodelay watch · sock_diag-only mode (no packet capture) · {}", seconds(elapsed_s)),
        }
    }

    fn frame(&self, summary: &Summary, width: usize, height: usize) -> String {
        let mut rows = vec![self.header(summary.elapsed_s), counts_row(summary), String::new()];
        if summary.findings.is_empty() {
            rows.push("(no stall so far)".into());
            return render_rows(&rows, width);
        }
        rows.push("stalls, most time held first:".into());
        let room = (height.saturating_sub(rows.len() + 1) / 2).max(1);
        let shown = if summary.findings.len() > room { room - 1 } else { room };
        for stalls in summary.findings.iter().take(shown) {
            rows.extend(stalls_rows(stalls));
        }
        if summary.findings.len() > shown {
            rows.push(format!("... and {} more", summary.findings.len() - shown));
        }
        render_rows(&rows, width)
    }

    fn survey_frame(&self, survey: &Survey, width: usize, height: usize) -> String {
        let delayed =
            survey.delayed_acks_per_s.map(|rate| format!(" · {rate:.1} delayed ACKs/s")).unwrap_or_default();
        let mut rows = vec![
            self.header(survey.elapsed_s),
            format!(
                "{} TCP sockets{delayed} · no packets: stalls are neither timed nor proven",
                count(survey.sockets)
            ),
            String::new(),
            format!(
                "{:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9}  PROCESS",
                "SOCKETS", "NAGLE", "HOLDING", "PRONE", "ACK-DUE", "UNACKED", "NOT-SENT"
            ),
        ];
        if survey.processes.is_empty() {
            rows.push("(no socket with TCP_NODELAY off)".into());
        }
        let room = height.saturating_sub(rows.len() + 1).max(1);
        rows.extend(survey.processes.iter().take(room).map(|p| {
            let process = match (&p.command, p.pid) {
                (Some(command), Some(pid)) => format!("{command} ({pid})"),
                _ => "not readable".into(),
            };
            format!(
                "{:>7} {:>7} {:>7} {:>7} {:>7} {:>7} B {:>7} B  {process}",
                p.sockets,
                p.nodelay_off,
                p.nagle_holding,
                p.nagle_prone,
                p.delayed_ack_pending,
                p.unacked_bytes,
                p.notsent_bytes
            )
        }));
        render_rows(&rows, width)
    }
}

/// `python3 (812) → 127.0.0.1:8000`, then `  server-nagle-delayed-ack  19/20  43.6 ms each
/// 0.8 s held`.
fn stalls_rows(stalls: &Stalls) -> [String; 2] {
    let process = match &stalls.process {
        Some(process) => format!("{} ({})", process.command, process.pid),
        None => "unknown process".into(),
    };
    let side = match (stalls.side, stalls.holder_is_local) {
        (Side::Server, true) => "",
        (Side::Client, true) => " (client)",
        (_, false) => " (the remote peer held)",
    };
    [
        format!("{process}{side} → {}", stalls.server),
        format!(
            "  {}  {}/{}  {} each  {} held",
            stalls.finding.as_str(),
            stalls.stalls,
            stalls.exchanges,
            milliseconds(stalls.mean_stall_ms),
            seconds(stalls.lost_ms / 1e3)
        ),
    ]
}

fn render_rows(rows: &[String], width: usize) -> String {
    let mut frame = String::from(HOME_AND_CLEAR);
    for row in rows {
        frame.push_str(&fit(row, width));
        frame.push('\n');
    }
    frame
}

/// The second row: what the capture counted (packets, drops, connections), or the kernel
/// (sends and connections with Nagle on); then the exchanges.
fn counts_row(summary: &Summary) -> String {
    let exchanges = counted(summary.exchanges, "exchange", "exchanges");
    match (&summary.packets, &summary.flows, &summary.kernel) {
        (Some(packets), Some(flows), _) => format!(
            "{}, {} dropped · {} open, {} seen · {exchanges}",
            counted(packets.captured, "packet", "packets"),
            count(packets.dropped),
            counted(flows.open, "connection", "connections"),
            count(flows.seen),
        ),
        (_, _, Some(kernel)) => format!(
            "{} on {} with Nagle on · {exchanges}",
            counted(kernel.sends, "send", "sends"),
            counted(kernel.connections, "connection", "connections"),
        ),
        _ => exchanges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FindingId, FlowCounts, PacketCounts, Process};

    fn stalls(port: u16, lost_ms: f64) -> Stalls {
        Stalls {
            finding: FindingId::ServerNagleDelayedAck,
            side: Side::Server,
            process: Some(Process { pid: 812, command: "python3".into(), fd: Some(4) }),
            holder_is_local: true,
            server: format!("127.0.0.1:{port}"),
            port,
            stalls: 37,
            exchanges: 40,
            flows: 1,
            lost_ms,
            mean_stall_ms: 41.0,
            mean_ack_delay_ms: 40.0,
            first_s: 1.0,
            last_s: 9.0,
            peer: None,
        }
    }

    fn summary(findings: Vec<Stalls>) -> Summary {
        Summary {
            elapsed_s: 12.0,
            packets: Some(PacketCounts { captured: 4512, dropped: 0, tcp: 4512, undecoded: 0 }),
            flows: Some(FlowCounts { open: 3, seen: 21, ..FlowCounts::default() }),
            kernel: None,
            exchanges: 40,
            findings,
            stalls_not_grouped: 0,
            stalls_of_other_processes: 0,
        }
    }

    #[test]
    fn a_frame_redraws_in_place_and_fits_the_terminal() {
        let mut top = Top::default();
        let frame = top.render(
            &Event::Summary(summary((0..50).map(|i| stalls(8000 + i, 1500.0 - f64::from(i))).collect())),
            60,
            12,
        );
        assert!(frame.starts_with(HOME_AND_CLEAR));
        let rows: Vec<&str> = frame.trim_start_matches(HOME_AND_CLEAR).lines().collect();
        assert!(rows.len() < 12, "{frame}");
        assert!(rows.iter().all(|row| row.chars().count() <= 60), "{frame}");
        assert!(rows[1].contains("4,512 packets, 0 dropped"), "{frame}");
        assert!(rows.last().unwrap().contains("48 more"), "{frame}");
        let one = top.render(&Event::Summary(summary(vec![stalls(8080, 1.0)])), 80, 12);
        let lines: Vec<&str> = one.lines().collect();
        assert_eq!(lines[4], "python3 (812) → 127.0.0.1:8080", "{one}");
        assert_eq!(lines[5], "  server-nagle-delayed-ack  37/40  41.0 ms each  0.0 s held", "{one}");
    }

    #[test]
    fn a_row_says_who_then_how_often_and_how_long() {
        let [who, what] = stalls_rows(&stalls(8080, 1517.0));
        assert_eq!(who, "python3 (812) → 127.0.0.1:8080");
        assert!(
            what.contains("37/40") && what.contains("41.0 ms each") && what.contains("1.5 s held"),
            "{what}"
        );
    }
}
