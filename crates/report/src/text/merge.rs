//! The text of a `nodelay report merge` result: the logs, the load they made together and
//! the latency of all their responses.

use crate::format::{DurationScale, format_seconds};
use crate::model::merge::MergeReport;
use crate::render::Render;
use crate::text::bench::{STATISTICS, format_elapsed, plural};
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use crate::text::{FittedText, MIN_WIDTH, Text};
use std::fmt::Write;

impl Render<MergeReport> for Text {
    fn render(&self, report: &MergeReport) -> String {
        FittedText::default().render(report)
    }
}

impl Render<MergeReport> for FittedText {
    fn render(&self, report: &MergeReport) -> String {
        let mut out = String::new();
        write_merge(&mut out, report, self.width.max(MIN_WIDTH)).expect("writing to a String cannot fail");
        out
    }
}

fn write_merge(out: &mut String, r: &MergeReport, width: usize) -> std::fmt::Result {
    let title =
        format!("nodelay report merge: {}", plural(r.logs.len() as u64, "interval log", "interval logs"));
    out.push_str(&wrap(&title, width, "", "  "));
    let mut logs = TextTable::new(width, 2, &[Col::Hanging, Col::Right, Col::Right, Col::Right]);
    logs.header(["log", "intervals", "responses", "span"]);
    for log in &r.logs {
        logs.row([
            log.path.clone(),
            log.intervals.to_string(),
            log.requests.to_string(),
            format_elapsed(log.span_s),
        ]);
    }
    out.push_str(&logs.render());
    writeln!(out)?;
    let summary = format!(
        "{} in {} (first interval's start to last one's end, all logs): {:.1} req/s",
        plural(r.requests_completed, "response", "responses"),
        format_elapsed(r.span_s),
        r.requests_per_second,
    );
    out.push_str(&wrap(&summary, width, "  ", "    "));
    let Some(latency) = &r.latency_ms else {
        writeln!(out, "  no response in any log")?;
        return Ok(());
    };
    writeln!(out)?;
    let scale = DurationScale::for_ms(STATISTICS.iter().map(|(_, pick)| pick(latency)));
    let mut table = TextTable::new(width, 2, &[Col::Left, Col::Right]);
    table.header(["", "latency"]);
    for (statistic, pick) in STATISTICS {
        table.row([statistic.to_string(), scale.format(pick(latency))]);
    }
    out.push_str(&table.render());
    writeln!(out)?;
    let timeline = format!(
        "timeline: {} of {} aligned by wall-clock start (per interval in --json and --html)",
        plural(r.timeline.len() as u64, "interval", "intervals"),
        format_seconds(r.interval_s),
    );
    out.push_str(&wrap(&timeline, width, "  ", "    "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::merge::tests::report;
    use crate::text::DEFAULT_WIDTH;

    #[test]
    fn the_text_fits_and_every_figure_has_its_unit() {
        let report = report();
        for width in [MIN_WIDTH, DEFAULT_WIDTH, 120] {
            let text = FittedText::new(width).render(&report);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "wider than {width}: {line:?}\n{text}");
            }
            assert!(text.contains("400 responses in 2.70 s"), "{text}");
            assert!(text.contains("148.1 req/s"), "{text}");
            let p50 = text.lines().find(|l| l.trim_start().starts_with("p50")).unwrap();
            assert!(p50.trim_end().ends_with(" ms"), "{p50}");
            assert_eq!(text.matches("nodelay.hlog").count(), 4, "{text}");
        }
    }
}
