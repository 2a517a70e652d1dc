//! The page's plots, drawn as SVG by plotters: the latency percentile spectrum on
//! HdrHistogram's log axis, the latency histogram, the timeline and compare's rounds as dots.
//! Every plot has its units on both axes and few enough ticks that labels never touch; a value
//! axis says whether it is linear or log ([`ValueAxis`]). No input text reaches an SVG
//! (legends are the page's HTML, escaped there); axis and text colours are black here and set
//! by the page's CSS for light and dark.

use super::axis::{Ticked, ValueAxis, near_axis, tick};
use super::error::HtmlError;
use crate::model::bench::HistogramBucket;
use crate::model::series::SpectrumPoint;
use plotters::prelude::*;

/// Okabe and Ito's colour-blind-safe palette, less its yellow (unreadable on white) and
/// black (the axes' colour); the page's CSS lightens the blue in dark mode.
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
];

const WIDTH_PX: u32 = 760;
const FONT: &str = "sans-serif";
/// Sizes as plotters takes them: it draws text at 1/1.24 of these (13 px and 14 px).
const LABEL_PX: u32 = 16;
const DESC_PX: u32 = 17;
/// Decades of 1/(1-p) shown at most: 99.9999 %.
const MAX_DECADES: u32 = 6;

/// One line of a spectrum plot; `colour` indexes [`PALETTE`] (wrapping).
pub struct Line<'a> {
    pub points: &'a [SpectrumPoint],
    pub colour: usize,
}

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn drawing<E: std::fmt::Display>(error: E) -> HtmlError {
    HtmlError(format!("cannot draw a plot: {error}"))
}

/// Where a percentile sits on the x axis: log10 of 1/(1-p), so 90 % is 1 and 99 % is 2;
/// 100 % (the maximum) is at the axis's end.
fn percentile_x(percentile: f64, decades: u32) -> f64 {
    let rest = 1.0 - percentile / 100.0;
    if rest <= 0.0 { decades as f64 } else { (-rest.log10()).min(decades as f64) }
}

/// The decades a set of spectra needs: up to the highest percentile below 100 % they reach.
fn decades_for(lines: &[Line]) -> u32 {
    let highest = lines
        .iter()
        .flat_map(|line| line.points)
        .filter(|p| p.percentile < 100.0)
        .map(|p| percentile_x(p.percentile, MAX_DECADES))
        .fold(0.0, f64::max);
    (highest.ceil() as u32).clamp(2, MAX_DECADES)
}

/// `0%`, `90%`, `99%`, `99.9%`, ... for the decades of the percentile axis.
pub fn percentile_label(decade: u32) -> String {
    match decade {
        0 => "0%".into(),
        1 => "90%".into(),
        n => format!("99{}{}%", if n > 2 { "." } else { "" }, "9".repeat(n as usize - 2)),
    }
}

/// The top of a value axis: a little above the largest value, never zero.
fn axis_top(largest: f64) -> f64 {
    if largest > 0.0 && largest.is_finite() { largest * 1.08 } else { 1.0 }
}

/// `points` on `y`, split where a point has no value or one the axis cannot show: the runs
/// of a line.
fn runs_on(y: &ValueAxis, points: impl Iterator<Item = (f64, Option<f64>)>) -> Vec<Vec<(f64, f64)>> {
    let mut runs = vec![Vec::new()];
    for (x, value) in points {
        match value.and_then(|v| y.position(v)) {
            Some(at) => runs.last_mut().expect("one run at least").push((x, at)),
            None => runs.push(Vec::new()),
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

/// Latency against percentile, one line per spectrum, as HdrHistogram plots it; latency on
/// `y`, titled `y_desc`.
pub fn spectrum_svg(lines: &[Line], y: &ValueAxis, y_desc: &str) -> Result<String, HtmlError> {
    let decades = decades_for(lines);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 400)).into_drawing_area();
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            // Room for the last percentile's label (99.9999%), centred on the axis's end.
            .margin_right(40)
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(0.0..decades as f64, y.coordinate())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale: 90 %, 99 %, 99.9 %, ...)")
            .y_desc(y_desc)
            // One label per decade (plotters picks whole numbers for so few), none between.
            .x_labels(decades as usize + 1)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 { percentile_label(x.round() as u32) } else { String::new() }
            })
            .y_label_formatter(&|at| y.label(*at))
            .label_style((FONT, LABEL_PX))
            .axis_desc_style((FONT, DESC_PX))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        for line in lines {
            let points =
                line.points.iter().map(|p| (percentile_x(p.percentile, decades), Some(p.latency_ms)));
            for run in runs_on(y, points) {
                chart
                    .draw_series(LineSeries::new(run, colour(line.colour).stroke_width(2)))
                    .map_err(drawing)?;
            }
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// Counts that span more than this factor are drawn on a log axis: otherwise a first bucket of
/// 66k responses leaves every other bucket a hairline.
const LOG_COUNTS_BEYOND: f64 = 100.0;

/// Whether `buckets`' non-zero counts span more than [`LOG_COUNTS_BEYOND`].
pub fn histogram_needs_log_counts(buckets: &[HistogramBucket]) -> bool {
    let counts = buckets.iter().filter(|b| b.count > 0).map(|b| b.count as f64);
    let (least, most) = counts.fold((f64::INFINITY, 0.0_f64), |(l, m), c| (l.min(c), m.max(c)));
    most > least * LOG_COUNTS_BEYOND
}

/// Responses per latency bucket; the first bucket starts at `from_ms` (the run's minimum).
/// Counts that span more than 100× go on a log axis (each bar's height is log10 of its count,
/// labelled with the count).
pub fn histogram_svg(buckets: &[HistogramBucket], from_ms: f64) -> Result<String, HtmlError> {
    let last = buckets.last().map_or(1.0, |b| b.up_to_ms);
    let (low, high) = if last > from_ms { (from_ms, last) } else { (from_ms * 0.9, from_ms * 1.1 + 1e-3) };
    // In order whatever a damaged saved run's signs (the bars are held between them).
    let (low, high) = (low.min(high), low.max(high));
    let log = histogram_needs_log_counts(buckets);
    // On the log axis a bar of one response still shows: the floor is below log10(1) = 0.
    let floor = if log { -0.3 } else { 0.0 };
    let height = |count: u64| if log { (count as f64).log10() } else { count as f64 };
    let top = if log {
        buckets.iter().map(|b| height(b.count.max(1))).fold(0.0, f64::max) + 0.3
    } else {
        axis_top(buckets.iter().map(|b| b.count as f64).fold(0.0, f64::max))
    };
    let y_label = |y: f64| if log { tick(10f64.powf(y).round()) } else { tick(y) };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 300)).into_drawing_area();
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .margin_right(28)
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(low..high, floor..top)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("latency (ms)")
            .y_desc(if log { "responses (log scale)" } else { "responses" })
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| y_label(*y))
            .x_labels(8)
            .y_labels(6)
            .label_style((FONT, LABEL_PX))
            .axis_desc_style((FONT, DESC_PX))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        // Bounds held to the axis: a bucket of a damaged saved run far outside it would map
        // past i32 and overflow plotters' arithmetic.
        let on_axis = |ms: f64| ms.clamp(low, high);
        let mut start = low;
        let bars = buckets.iter().filter_map(|bucket| {
            let from = on_axis(start);
            start = bucket.up_to_ms;
            (bucket.count > 0).then(|| {
                Rectangle::new(
                    [(from, floor), (on_axis(bucket.up_to_ms).max(from), height(bucket.count))],
                    colour(0).filled(),
                )
            })
        });
        chart.draw_series(bars.collect::<Vec<_>>()).map_err(drawing)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// One line of a timeline or of the rounds' dots: (x, the figure) per point, `None` where
/// there is none (nothing completed); `colour` indexes [`PALETTE`].
pub struct Series<'a> {
    pub points: &'a [(f64, Option<f64>)],
    pub colour: usize,
}

/// One figure per interval against seconds from the start, a line with a dot per interval
/// for each series (`None` breaks it); the figure on `y`, titled `y_desc`.
pub fn timeline_svg(
    series: &[Series],
    end_s: f64,
    x_desc: &str,
    y: &ValueAxis,
    y_desc: &str,
) -> Result<String, HtmlError> {
    let right = if end_s > 0.0 && end_s.is_finite() { end_s } else { 1.0 };
    // Held as `Ticked` holds y: a damaged saved run's interval far before the start.
    let on_axis = |(x, figure): (f64, Option<f64>)| (near_axis(x, &(0.0..right)), figure);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 260)).into_drawing_area();
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .margin_right(28)
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(0.0..right, y.coordinate())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|at| y.label(*at))
            .x_labels(10)
            .label_style((FONT, LABEL_PX))
            .axis_desc_style((FONT, DESC_PX))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        for line in series {
            let style = colour(line.colour).stroke_width(2);
            for run in runs_on(y, line.points.iter().copied().map(on_axis)) {
                chart.draw_series(LineSeries::new(run.iter().copied(), style)).map_err(drawing)?;
                chart
                    .draw_series(run.iter().map(|point| Circle::new(*point, 3, colour(line.colour).filled())))
                    .map_err(drawing)?;
            }
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// Radius of a round's dot, in pixels.
const ROUND_DOT_PX: u32 = 5;

/// Each round's figure as a dot, rounds along x (1 to `rounds`), one series per target; the
/// targets' dots of one round stand side by side, in the series' order, so that equal
/// figures do not hide each other. The figure on `y`, titled `y_desc`.
pub fn rounds_svg(series: &[Series], rounds: u32, y: &ValueAxis, y_desc: &str) -> Result<String, HtmlError> {
    let rounds = rounds.max(1);
    // At most about 10 labelled rounds.
    let every = rounds.div_ceil(10);
    let round_ticks: Vec<f64> = (1..=rounds).filter(|r| (r - 1) % every == 0).map(f64::from).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 300)).into_drawing_area();
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .margin_right(28)
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(Ticked::new(0.5..rounds as f64 + 0.5, round_ticks), y.coordinate())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("round (in the order run)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|at| y.label(*at))
            .label_style((FONT, LABEL_PX))
            .axis_desc_style((FONT, DESC_PX))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        // Side by side within a third of a round's width.
        let width = 0.33 / series.len().max(1) as f64;
        for (index, target) in series.iter().enumerate() {
            let offset = (index as f64 - (series.len() as f64 - 1.0) / 2.0) * width;
            let dots = runs_on(y, target.points.iter().map(|(round, value)| (round + offset, *value)));
            chart
                .draw_series(
                    dots.into_iter()
                        .flatten()
                        .map(|at| Circle::new(at, ROUND_DOT_PX, colour(target.colour).filled())),
                )
                .map_err(drawing)?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// The plotted lines of an SVG drawn here (the axes are black polylines too).
#[cfg(test)]
pub fn series_lines(svg: &str) -> usize {
    svg.lines().filter(|l| l.starts_with("<polyline") && !l.contains("stroke=\"#000000\"")).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_axis_is_in_decades_of_one_over_one_minus_p() {
        assert_eq!(percentile_x(0.0, 3), 0.0);
        assert!((percentile_x(90.0, 3) - 1.0).abs() < 1e-9);
        assert!((percentile_x(99.9, 4) - 3.0).abs() < 1e-9);
        assert_eq!(percentile_x(100.0, 4), 4.0);
        let labels: Vec<String> = (0..5).map(percentile_label).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }

    #[test]
    fn ticks_drop_trailing_zeros() {
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(40.0), "40");
        assert_eq!(tick(1500.0), "1500");
        assert_eq!(tick(0.0), "0");
    }

    #[test]
    fn a_spectrum_plot_has_its_axes_units_and_one_line_per_spectrum() {
        let a = [
            SpectrumPoint { percentile: 0.0, latency_ms: 1.0 },
            SpectrumPoint { percentile: 99.0, latency_ms: 40.0 },
            SpectrumPoint { percentile: 100.0, latency_ms: 41.0 },
        ];
        let y = ValueAxis::new(a.iter().map(|p| p.latency_ms), false);
        let lines = [Line { points: &a, colour: 0 }, Line { points: &a, colour: 1 }];
        let svg = spectrum_svg(&lines, &y, &y.title("latency", "ms")).unwrap();
        assert_eq!(series_lines(&svg), 2, "{svg}");
        for text in [
            "latency (ms, linear scale)",
            "percentile (log scale: 90 %, 99 %, 99.9 %, ...)",
            "0%",
            "90%",
            "99%",
        ] {
            assert!(svg.lines().any(|line| line == text), "{text} in {svg}");
        }
    }
}
