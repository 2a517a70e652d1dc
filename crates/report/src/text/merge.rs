//! The text of a `nodelay report merge` result: the logs, the load they made together and
//! the latency of all their responses.

use crate::format::format_seconds;
use crate::model::merge::MergeReport;
use crate::render::Render;
use crate::text::bench::{
    STATISTICS, format_elapsed, plural, rate_line, statistics_of, write_latency_columns,
};
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use crate::text::{FittedText, MIN_WIDTH, Text};
use nodelay_flags::Flag::{Html, Json};
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
    let span = " (first interval's start to last one's end, all logs)";
    let summary = rate_line(r.requests_completed, r.span_s, span, r.requests_per_second);
    out.push_str(&wrap(&summary, width, "  ", "    "));
    let Some(latency) = &r.latency_ms else {
        writeln!(out, "  no response in any log")?;
        return Ok(());
    };
    let statistics = STATISTICS.map(|(name, _)| name);
    write_latency_columns(out, &statistics, &[("latency", statistics_of(latency))], width)?;
    writeln!(out)?;
    let timeline = format!(
        "timeline: {} of {} aligned by wall-clock start (per interval in {Json} and {Html})",
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
