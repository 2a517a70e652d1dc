//! The server view as text: the section bench and doctor reports print about the server's
//! processes, CPU and upstream connections.

use crate::format::format_duration_ms;
use crate::model::server_view::ServerViewReport;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use std::fmt::Write;

/// The server section of a text report.
pub(crate) fn write_server_view(out: &mut String, view: &ServerViewReport, width: usize) -> std::fmt::Result {
    if !view.available {
        let why = view.why_unavailable.as_deref().unwrap_or("unknown");
        out.push_str(&wrap(&format!("server view: not available: {why}"), width, "", "  "));
        return Ok(());
    }
    // A short baseline watched for 12 ms must not read "over 0.0 s".
    let heading =
        format!("server view: {}, over {}", view.process_names(), format_duration_ms(view.wall_s * 1e3));
    out.push_str(&wrap(&heading, width, "", "  "));
    let mut table = TextTable::new(width, 2, &[Col::Left, Col::Hanging]);
    let cpu = match view.cpu_per_request_ms {
        Some(per_request) => format!(
            "{} per request (user {:.0} ms, system {:.0} ms in 10 ms ticks; {:.2} cores busy)",
            format_duration_ms(per_request),
            view.cpu_user_ms,
            view.cpu_system_ms,
            view.cores_busy
        ),
        None => format!("{:.2} cores busy, no request completed", view.cores_busy),
    };
    table.row(["CPU".to_string(), cpu]);
    if let Some(ceiling) = view.ceiling_per_second {
        let basis = if view.ceiling_one_thread {
            "were its busiest thread, which did most of the work, busy all the time".to_string()
        } else if view.ceiling_one_core {
            "were one core busy: Python's GIL runs one thread at a time".to_string()
        } else {
            format!("were all {} cores busy", view.online_cpus)
        };
        table.row(["ceiling".to_string(), format!("≈ {ceiling:.0} requests/s at this CPU cost ({basis})")]);
    }
    for (index, thread) in view.threads.iter().enumerate() {
        let label = if index == 0 { "threads" } else { "" };
        table.row([
            label.to_string(),
            format!(
                "{} (TID {}): on CPU {:.0} %, waiting for a CPU {:.0} %",
                thread.name,
                thread.tid,
                thread.on_cpu_share * 100.0,
                thread.waiting_for_cpu_share * 100.0
            ),
        ]);
    }
    for (index, upstream) in view.upstreams.iter().enumerate() {
        let label = if index == 0 { "upstreams" } else { "" };
        // Past a round of the ports the count is a floor: said so, and why.
        let (at_least, went_round) = if upstream.ports_cycled {
            ("at least ", " (its local ports went round: a 4-tuple used again may count once)")
        } else {
            ("", "")
        };
        let per_request = upstream
            .opened_per_request
            .map(|n| format!("{at_least}{n:.2} new connections per request, "))
            .unwrap_or_default();
        table.row([
            label.to_string(),
            format!(
                "{}: {per_request}{} opened{went_round}, {} open at the end",
                upstream.destination, upstream.opened, upstream.open_at_end
            ),
        ]);
    }
    if let Some(connects) = view.namespace_connects_by_others
        && view.upstreams.iter().any(|u| u.ports_cycled)
    {
        let per_request = match view.requests {
            0 => String::new(),
            requests => format!(" ({:.2} per request)", connects as f64 / requests as f64),
        };
        table.row([
            "connects".to_string(),
            format!(
                "{connects} by any process of the server's network namespace but nodelay during the run{per_request}: \
                 the most its upstream connections can be"
            ),
        ]);
    }
    if let Some(queue) = view.listen_queue {
        let backlog = queue.backlog.map(|b| format!("backlog {b}; ")).unwrap_or_default();
        let dropped = match queue.overflows {
            0 => "no handshake dropped on a full accept queue".to_string(),
            n => format!("{n} handshakes dropped on a full accept queue"),
        };
        table
            .row(["listen queue".to_string(), format!("{backlog}{dropped} (ListenOverflows, this machine)")]);
    }
    if let Some(pressure) = view.cpu_pressure_share {
        table.row([
            "CPU pressure".to_string(),
            format!(
                "some task waited for a CPU {:.0} % of the run ({} cores)",
                pressure * 100.0,
                view.online_cpus
            ),
        ]);
    }
    out.push_str(&table.render());
    for note in view
        .warnings
        .iter()
        .map(|w| format!("warning: {w}"))
        .chain(view.unread.iter().map(|u| format!("not read: {u}")))
    {
        out.push_str(&wrap(&note, width, "  ", "    "));
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::server_view::tests::churning_proxy;

    #[test]
    fn a_count_whose_ports_went_round_reads_as_a_floor_with_the_namespace_bound() {
        let report = churning_proxy();
        let mut text = String::new();
        write_server_view(&mut text, &report, 80).unwrap();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("127.0.0.1:4000: at least 0.35 new connections per request, 13496 opened (its local ports went round"), "{text}");
        assert!(flat.contains("connects 39062 by any process of the server's network namespace but nodelay during the run (1.00 per request)"), "{text}");
        assert!(text.lines().all(|line| line.chars().count() <= 80), "{text}");
        // Not gone round: no floor, and no namespace line.
        let mut counted = report.clone();
        counted.upstreams[0].ports_cycled = false;
        let mut text = String::new();
        write_server_view(&mut text, &counted, 80).unwrap();
        assert!(!text.contains("at least") && !text.contains("connects "), "{text}");
    }
}
