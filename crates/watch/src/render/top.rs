//! Watch's terminal view, redrawn in place every second as `top` is: a header (mode,
//! interface, ports, time, packets and drops, connections), then the stalling processes and
//! ports, most time held first, as many as the terminal's height allows, each row cut to its
//! width. When watch stops the view gives way to the final summary of [`Lines`].

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
            _ => format!("nodelay watch · sock_diag-only mode (no packet capture) · {}", seconds(elapsed_s)),
        }
    }

    fn frame(&self, summary: &Summary, width: usize, height: usize) -> String {
        let mut rows = vec![
            self.header(summary.elapsed_s),
            format!(
                "{}, {} dropped · {} open, {} seen · {}",
                counted(summary.packets.captured, "packet", "packets"),
                count(summary.packets.dropped),
                counted(summary.flows.open, "connection", "connections"),
                count(summary.flows.seen),
                counted(summary.exchanges, "exchange", "exchanges")
            ),
            String::new(),
            format!(
                "{:>9} {:>7} {:>7} {:>9}  {:<24} PROCESS → SERVER",
                "HELD", "STALLS", "OF", "EACH", "FINDING"
            ),
        ];
        if summary.findings.is_empty() {
            rows.push("(no stall so far)".into());
        }
        let room = height.saturating_sub(rows.len() + 1).max(1);
        rows.extend(summary.findings.iter().take(room).map(stalls_row));
        if summary.findings.len() > room {
            rows.pop();
            rows.push(format!("... and {} more", summary.findings.len() - room + 1));
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

fn stalls_row(stalls: &Stalls) -> String {
    let process = match &stalls.process {
        Some(process) => format!("{} ({})", process.command, process.pid),
        None => "unknown".into(),
    };
    let side = match (stalls.side, stalls.holder_is_local) {
        (Side::Server, true) => "",
        (Side::Client, true) => " client",
        (_, false) => " (peer held)",
    };
    format!(
        "{:>9} {:>7} {:>7} {:>9}  {:<24} {process}{side} → {}",
        seconds(stalls.lost_ms / 1e3),
        stalls.stalls,
        stalls.exchanges,
        milliseconds(stalls.mean_stall_ms),
        stalls.finding.as_str(),
        stalls.server
    )
}

fn render_rows(rows: &[String], width: usize) -> String {
    let mut frame = String::from(HOME_AND_CLEAR);
    for row in rows {
        frame.push_str(&fit(row, width));
        frame.push('\n');
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FindingId, FlowCounts, PacketCounts, Process};

    fn stalls(port: u16, lost_ms: f64) -> Stalls {
        Stalls {
            finding: FindingId::ServerNagleDelayedAck,
            side: Side::Server,
            process: Some(Process { pid: 812, command: "python3".into(), fd: 4 }),
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
        }
    }

    fn summary(findings: Vec<Stalls>) -> Summary {
        Summary {
            elapsed_s: 12.0,
            packets: PacketCounts { captured: 4512, dropped: 0, tcp: 4512, undecoded: 0 },
            flows: FlowCounts { open: 3, seen: 21, ..FlowCounts::default() },
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
        assert!(rows.last().unwrap().contains("more"), "{frame}");
        let wide = top.render(&Event::Summary(summary(vec![stalls(8080, 1.0)])), 100, 12);
        assert!(wide.lines().nth(4).unwrap().contains("server-nagle-delayed-ack"), "{wide}");
    }

    #[test]
    fn a_row_says_how_long_how_often_and_who() {
        let row = stalls_row(&stalls(8080, 1517.0));
        assert!(row.contains("1.5 s") && row.contains("41.0 ms"), "{row}");
        assert!(row.contains("python3 (812) → 127.0.0.1:8080"), "{row}");
    }
}
