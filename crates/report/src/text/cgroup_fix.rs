//! The text of `nodelay fix --cgroup`: one paragraph when attached, one when detached.

use crate::format::plural;
use crate::model::cgroup_fix::{
    CgroupFixAttached, CgroupFixDetached, CgroupFixPersisted, CgroupFixUndone, Detached,
};
use crate::render::Render;
use crate::text::FittedText;
use crate::text::wrap::wrap_words;

impl Render<CgroupFixAttached> for FittedText {
    fn render(&self, attached: &CgroupFixAttached) -> String {
        let mut lines = vec![format!(
            "attached to cgroup {} (and those below it): TCP_NODELAY on every new connection, kept on when a \
             program turns it off.",
            attached.cgroup
        )];
        lines.push(format!(
            "open sockets of its {}: TCP_NODELAY set on {}, already on on {}.",
            plural(attached.processes, "process", "processes"),
            plural(attached.sockets_set, "socket", "sockets"),
            attached.sockets_already_on
        ));
        lines.extend(attached.not_set.iter().map(|why| format!("not set: {why}")));
        paragraph(&lines, self.width)
    }
}

impl Render<CgroupFixDetached> for FittedText {
    fn render(&self, detached: &CgroupFixDetached) -> String {
        let mut lines = vec![
            format!(
                "detached from {} after {:.1} s ({}).",
                detached.cgroup,
                detached.attached_s,
                match detached.ended_by {
                    Detached::DurationRanOut => "its duration ran out",
                    Detached::Interrupted => "interrupted",
                }
            ),
            counted(
                "while attached",
                detached.connections_set,
                detached.set_refused,
                detached.turn_offs_kept,
            ),
        ];
        if detached.sockets_restored > 0 {
            lines.push(format!(
                "set back to TCP_NODELAY off: {} set at attach.",
                plural(detached.sockets_restored, "open socket", "open sockets")
            ));
        }
        lines.extend(detached.restore_failed.iter().map(|why| format!("not set back: {why}")));
        paragraph(&lines, self.width)
    }
}

impl Render<CgroupFixPersisted> for FittedText {
    fn render(&self, persisted: &CgroupFixPersisted) -> String {
        let lines = [format!(
            "persisted: the programs stay attached to {} after fix ends, pinned in {} until undone; the \
             open sockets set at attach keep TCP_NODELAY.",
            persisted.cgroup, persisted.pinned_in
        )];
        paragraph(&lines, self.width)
    }
}

impl Render<CgroupFixUndone> for FittedText {
    fn render(&self, undone: &CgroupFixUndone) -> String {
        let lines = [
            format!(
                "undone: the pins in {} removed, the programs detached from {}.",
                undone.pinned_in, undone.cgroup
            ),
            counted("while persisted", undone.connections_set, undone.set_refused, undone.turn_offs_kept),
        ];
        paragraph(&lines, self.width)
    }
}

/// What the programs counted, `while` a time: `while attached: TCP_NODELAY set on 3 new
/// connections; no program tried to turn it off.`
fn counted(during: &str, connections_set: u64, set_refused: u64, turn_offs_kept: u64) -> String {
    let refused = match set_refused {
        0 => String::new(),
        n => format!(" (the kernel refused it on {n} more)"),
    };
    format!(
        "{during}: TCP_NODELAY set on {}{refused}; {}.",
        plural(connections_set as usize, "new connection", "new connections"),
        match turn_offs_kept {
            0 => "no program tried to turn it off".to_string(),
            n => format!(
                "programs tried to turn it off {}, kept on each time",
                plural(n as usize, "time", "times")
            ),
        }
    )
}

/// Each line wrapped to the width, continuation lines indented.
fn paragraph(lines: &[String], width: usize) -> String {
    let mut out = String::new();
    for line in lines {
        for wrapped in wrap_words(line, width, "", "  ") {
            out.push_str(&wrapped);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn squeezed(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn both_paragraphs_fit_the_width_and_say_their_counts() {
        let attached = CgroupFixAttached {
            cgroup: "/sys/fs/cgroup/unified/app".into(),
            processes: 2,
            sockets_set: 3,
            sockets_already_on: 1,
            not_set: vec!["PID 7 (x): no permission".into()],
        };
        let detached = CgroupFixDetached {
            cgroup: "/sys/fs/cgroup/unified/app".into(),
            attached_s: 12.34,
            ended_by: Detached::DurationRanOut,
            connections_set: 1,
            set_refused: 0,
            turn_offs_kept: 57,
            sockets_restored: 2,
            restore_failed: vec!["PID 7 fd 3: gone".into()],
        };
        for width in [60, 100] {
            let text = FittedText::new(width).render(&attached) + &FittedText::new(width).render(&detached);
            assert!(text.lines().all(|line| line.chars().count() <= width), "{text}");
            let none_kept =
                FittedText::new(width).render(&CgroupFixDetached { turn_offs_kept: 0, ..detached.clone() });
            assert!(squeezed(&none_kept).contains("no program tried to turn it off."), "{none_kept}");
            let flat = squeezed(&text);
            for expected in [
                "2 processes",
                "set on 3 sockets",
                "not set: PID 7",
                "after 12.3 s (its duration ran out)",
                "1 new connection;",
                "57 times",
                "off: 2 open sockets",
                "not set back: PID 7",
            ] {
                assert!(flat.contains(expected), "{expected}: {flat}");
            }
        }
    }
}
