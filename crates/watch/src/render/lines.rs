//! Watch's text for a pipe or a file: the mode line, one line per finding as it is found
//! (and in the sock_diag mode, per process and port that can stall), then the final summary.
//! The per-second summaries print nothing here: a log gains a line only when there is news.

use super::{count, counted, ports, seconds, stalls_line, wrap};
use crate::event::{Event, Mode, ModeLine, Summary};
use crate::survey::{Survey, SurveyGroup};
use std::collections::HashSet;

/// The line renderer; it remembers what it told already.
#[derive(Debug, Default)]
pub struct Lines {
    mode: Option<ModeLine>,
    surveyed: HashSet<(Option<u32>, u16)>,
}

impl Lines {
    /// The text for `event` at `width` columns; empty when it adds nothing.
    pub fn render(&mut self, event: &Event, width: usize) -> String {
        match event {
            Event::Mode(mode) => {
                self.mode = Some(mode.clone());
                wrap(&mode_line(mode), width)
            }
            Event::Finding(stalls) => {
                wrap(&format!("[{}] {}", seconds(stalls.first_s), stalls_line(stalls)), width)
            }
            Event::Summary(_) => String::new(),
            Event::Survey(survey) => {
                let new: Vec<&SurveyGroup> =
                    survey.groups.iter().filter(|g| self.surveyed.insert((g.pid, g.port))).collect();
                new.iter()
                    .map(|group| {
                        wrap(&format!("[{}] {}", seconds(survey.elapsed_s), survey_line(group)), width)
                    })
                    .collect()
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
        let packets = &summary.packets;
        out += &wrap(
            &format!(
                "watch: {} on {interface}, TCP on {}: {} captured ({} dropped by the kernel), {}, {}",
                seconds(summary.elapsed_s),
                ports(&port_list),
                counted(packets.captured, "packet", "packets"),
                count(packets.dropped),
                counted(summary.flows.seen, "connection", "connections"),
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
        if summary.flows.evicted > 0 {
            out += &wrap(
                &format!(
                    "note: {} connections were evicted from the full flow table (the longest idle first)",
                    count(summary.flows.evicted)
                ),
                width,
            );
        }
        if packets.tcp == 0 {
            out += &wrap(
                &format!("no TCP traffic on {} in {}", ports(&port_list), seconds(summary.elapsed_s)),
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

/// `watch: live capture on lo, TCP port 8080: WHY`.
fn mode_line(mode: &ModeLine) -> String {
    let pid = mode.pid.map(|pid| format!(" of PID {pid}")).unwrap_or_default();
    match mode.mode {
        Mode::Capture => format!(
            "watch: live capture on {}, TCP on {}{pid}: {}; Ctrl-C for the summary",
            mode.interface.as_deref().unwrap_or("any"),
            ports(&mode.ports),
            mode.why
        ),
        Mode::SockDiag => format!("watch: sock_diag-only mode ({}); it sees {}", mode.why, mode.sees),
    }
}

/// `python3 (PID 812) port 8080: 3 of 3 sockets with TCP_NODELAY off, ...`.
fn survey_line(group: &SurveyGroup) -> String {
    let process = match (&group.command, group.pid) {
        (Some(command), Some(pid)) => format!("{command} (PID {pid})"),
        _ => "unknown process".into(),
    };
    format!(
        "{process} port {}: {} of {} sockets with TCP_NODELAY off (can stall), {} delayed ACK pending, \
         {} bytes unacknowledged, {} not yet sent",
        group.port,
        group.nagle_on,
        group.sockets,
        group.delayed_ack_pending,
        count(group.unacked_bytes),
        count(group.notsent_bytes)
    )
}

/// The sock_diag mode's last word.
fn final_survey(survey: &Survey) -> String {
    let can_stall: u64 = survey.groups.iter().map(|g| g.nagle_on).sum();
    let unreadable = match survey.unreadable_processes {
        0 => String::new(),
        n => format!("; {n} processes could not be read (their sockets have no process)"),
    };
    format!(
        "watch: {} in the sock_diag-only mode: {} TCP sockets, {} with TCP_NODELAY off in {} processes and \
         ports{unreadable}; without packets no stall is timed: run watch as root or with CAP_NET_RAW \
         to capture them",
        seconds(survey.elapsed_s),
        count(survey.sockets),
        count(can_stall),
        survey.groups.len(),
    )
}
