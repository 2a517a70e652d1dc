//! Watch's events as text: one line per finding as it is found ([`Lines`], for a pipe or a
//! file), a view redrawn in place every second ([`Top`], for a terminal), or one JSON object
//! per event ([`json_line`]). Pure functions of the events and a width: the CLI writes what
//! they return.

mod lines;
mod top;

pub use lines::Lines;
pub use top::Top;

use crate::event::{Event, Side, Stalls};

/// The renderer a front end picks: JSON lines when asked, the in-place view on a terminal,
/// lines otherwise.
#[derive(Debug)]
pub enum Renderer {
    /// `--json-lines`.
    JsonLines,
    /// The terminal view.
    Top(Top),
    /// A line per finding.
    Lines(Lines),
}

impl Renderer {
    /// JSON lines if `json_lines`, else the view if stdout is a `terminal`, else lines.
    pub fn new(json_lines: bool, terminal: bool) -> Self {
        match (json_lines, terminal) {
            (true, _) => Renderer::JsonLines,
            (false, true) => Renderer::Top(Top::default()),
            (false, false) => Renderer::Lines(Lines::default()),
        }
    }

    /// The text for `event` at `width` × `height` (the height matters to the view only).
    pub fn render(&mut self, event: &Event, width: usize, height: usize) -> String {
        match self {
            Renderer::JsonLines => json_line(event),
            Renderer::Top(top) => top.render(event, width, height),
            Renderer::Lines(lines) => lines.render(event, width),
        }
    }
}

/// The event as one JSON line (with its newline): the contract of schema/watch.schema.json.
pub fn json_line(event: &Event) -> String {
    let mut line =
        serde_json::to_string(event).unwrap_or_else(|e| format!("{{\"event\":\"error\",\"error\":\"{e}\"}}"));
    line.push('\n');
    line
}

/// `python3 (PID 812, fd 4)`, or what is known of a process that was not found.
fn process_name(stalls: &Stalls) -> String {
    match &stalls.process {
        Some(process) => match process.fd {
            Some(fd) => format!("{} (PID {}, fd {fd})", process.command, process.pid),
            None => format!("{} (PID {})", process.command, process.pid),
        },
        None => "unknown process".into(),
    }
}

/// The finding as a sentence: `python3 (PID 812, fd 4) → 127.0.0.1:8080:
/// server-nagle-delayed-ack in 37 of 40 responses, 41.0 ms each`.
fn stalls_line(stalls: &Stalls) -> String {
    let whose = match (stalls.side, stalls.holder_is_local) {
        (Side::Server, true) => String::new(),
        (Side::Client, true) => " (client)".into(),
        (Side::Server, false) => " (client; the server is remote)".into(),
        (Side::Client, false) => " (server; the client is remote)".into(),
    };
    let messages = match stalls.side {
        Side::Server => "responses",
        Side::Client => "requests",
    };
    let peer = stalls.peer.as_ref().map_or(String::new(), |peer| {
        let timeout = peer
            .ack_timeout_ms
            .map_or(String::new(), |ms| format!(", delaying its ACKs {}", milliseconds(ms)));
        format!("; peer: {} (PID {}{timeout})", peer.command, peer.pid)
    });
    format!(
        "{}{whose} → {}: {} in {} of {} {messages}, {} each{peer}",
        process_name(stalls),
        stalls.server,
        stalls.finding.as_str(),
        stalls.stalls,
        stalls.exchanges,
        milliseconds(stalls.mean_stall_ms)
    )
}

/// What the on-call engineer runs next on the process that holds: look (`inspect`), then set
/// TCP_NODELAY in place (`fix`, the server's listening port) or restart it under the shim
/// (`exec`, a client's). A holder on another host is fixed there.
pub(crate) fn next_command(stalls: &Stalls) -> String {
    let pid = stalls.process.as_ref().map(|p| p.pid);
    match (stalls.side, stalls.holder_is_local, pid) {
        (Side::Server, true, _) => {
            format!("nodelay inspect :{port}, then nodelay fix :{port} or nodelay exec", port = stalls.port)
        }
        (Side::Client, true, Some(pid)) => {
            format!("nodelay inspect {pid}, then nodelay fix {pid} or restart it under nodelay exec")
        }
        (Side::Client, true, None) => "nodelay exec -- the client's command".into(),
        (_, false, Some(_)) => "the holder is on the other host: fix it there (nodelay fix or exec)".into(),
        (_, false, None) => {
            "no local process was found holding it (another network namespace, or no right to read it): run \
             nodelay inspect where it runs"
                .into()
        }
    }
}

/// A duration in ms with a precision that suits it: `41.0 ms`, `0.52 ms`, `1520 ms`.
fn milliseconds(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// A duration in seconds: `12.0 s`.
fn seconds(s: f64) -> String {
    if s >= 100.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// `1,234`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 connection`, `2,000 connections`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// `port 8080`, `ports 80, 443`, `every port`.
fn ports(ports: &[u16]) -> String {
    match ports {
        [] => "every port".into(),
        [one] => format!("port {one}"),
        many => format!("ports {}", many.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// `text` broken at spaces into lines of at most `width` columns, the later ones indented by
/// two; a word longer than a line (an IPv6 address) is broken where the line ends.
fn wrap(text: &str, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::new();
    let mut line = String::new();
    let mut line_len = 0;
    let mut at_start = true;
    let new_line = |line: &mut String, line_len: &mut usize, out: &mut String| {
        out.push_str(line);
        out.push('\n');
        *line = "  ".into();
        *line_len = 2;
    };
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut rest: Vec<char> = word.chars().collect();
        if !at_start && line_len + 1 + rest.len() > width {
            new_line(&mut line, &mut line_len, &mut out);
            at_start = true;
        }
        if !at_start {
            line.push(' ');
            line_len += 1;
        }
        at_start = false;
        loop {
            let room = width - line_len;
            if rest.len() <= room {
                line_len += rest.len();
                line.extend(rest);
                break;
            }
            line.extend(rest.drain(..room));
            new_line(&mut line, &mut line_len, &mut out);
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `text` cut to `width` columns.
fn fit(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_every_line_within_the_width() {
        let text = "python3 (PID 812, fd 4) → [fd12:3456:789a:bcde:f012:3456:789a:bcd1]:8080: \
                    server-nagle-delayed-ack in 37 of 40 responses, 41.0 ms each";
        for width in [20, 50, 80] {
            let wrapped = wrap(text, width);
            assert!(wrapped.lines().all(|l| l.chars().count() <= width), "{width}:\n{wrapped}");
            assert_eq!(wrapped.replace("\n  ", "").replace(['\n', ' '], ""), text.replace(' ', ""));
        }
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
    }
}
