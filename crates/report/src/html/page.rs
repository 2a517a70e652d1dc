//! The page: runs read into sections, an overview when there are several, and the markup
//! from the `page.html` template (auto-escaped: every text from a run is escaped there; only
//! the plots' own SVG is inserted as is).

use super::compare::{self, CompareSection};
use super::context::{Figure, spectra_figure};
use super::error::HtmlError;
use super::markup::with_code;
use super::read::read_run;
use super::sections::{self, BenchSection, DoctorSection, PcapSection};
use crate::model::series::SpectrumPoint;
use crate::saved::Run;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Serialize)]
struct Page {
    title: String,
    overview: Option<Figure>,
    sections: Vec<Section>,
}

/// One run's part of the page; exactly one of its kinds is filled in.
#[derive(Debug, Serialize)]
struct Section {
    /// `run-1`, `run-2`, ...: the prefix of the ids of its numbers.
    id: String,
    label: String,
    /// The section's heading: its label, and a comparison's verdict when the page's own
    /// heading does not carry it.
    heading: String,
    /// `bench`, `merge`, `doctor`, `pcap` or `compare`.
    kind: &'static str,
    bench: Option<BenchSection>,
    doctor: Vec<DoctorSection>,
    pcap: Option<PcapSection>,
    compare: Option<CompareSection>,
}

/// A run's label: its file name (when it came from one) and what it measured.
fn label(name: Option<&str>, what: &str) -> String {
    match name {
        Some(name) if !what.is_empty() => format!("{name} — {what}"),
        Some(name) => name.to_string(),
        None => what.to_string(),
    }
}

fn what_it_measured(run: &Run) -> String {
    match run {
        Run::Bench(report) => report.settings.url.clone(),
        Run::Merge(_) => String::new(),
        Run::Compare(view) => view.targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>().join(" vs "),
        Run::Doctor(view) => view.url.clone(),
        Run::DoctorScenario(view) => view.url.clone(),
        Run::Pcap(view) => view.file.clone(),
        Run::Proxy(view) => format!("{} -> {}", view.listen, view.upstream),
    }
}

/// The latency spectra of a run for the overview, each with its label.
fn spectra<'a>(run: &'a Run, label: &str) -> Vec<(String, &'a [SpectrumPoint])> {
    let baseline = |view: &'a crate::model::doctor::DoctorReport| {
        view.phases.first().map_or(&[][..], |p| p.latency_spectrum.as_slice())
    };
    match run {
        Run::Bench(report) => vec![(label.to_string(), report.latency_spectrum.as_slice())],
        Run::Merge(report) => vec![(label.to_string(), report.latency_spectrum.as_slice())],
        Run::Compare(view) => view
            .targets
            .iter()
            .map(|t| {
                let points = t.run.as_ref().map_or(&[][..], |r| r.latency_spectrum.as_slice());
                (format!("{label}: {}", t.label), points)
            })
            .collect(),
        Run::Doctor(view) => vec![(format!("{label} (baseline)"), baseline(view))],
        Run::DoctorScenario(view) => view
            .requests
            .iter()
            .map(|r| (format!("{label}: {} (baseline)", r.name), baseline(&r.report)))
            .collect(),
        Run::Pcap(_) | Run::Proxy(_) => Vec::new(),
    }
}

fn section(index: usize, label: String, run: &Run) -> Result<Section, HtmlError> {
    let mut section = Section {
        id: format!("run-{}", index + 1),
        heading: label.clone(),
        label,
        kind: "",
        bench: None,
        doctor: Vec::new(),
        pcap: None,
        compare: None,
    };
    match run {
        Run::Bench(report) => {
            section.kind = "bench";
            section.bench = Some(sections::bench(report, &section.label)?);
        }
        Run::Merge(report) => {
            section.kind = "merge";
            section.bench = Some(sections::merge(report, &section.label)?);
        }
        Run::Compare(view) => {
            section.kind = "compare";
            section.compare = Some(compare::compare(view)?);
        }
        Run::Doctor(view) => {
            section.kind = "doctor";
            section.doctor = vec![sections::doctor(view, "")?];
        }
        Run::DoctorScenario(view) => {
            section.kind = "doctor";
            section.doctor = sections::doctor_scenario(view)?;
        }
        Run::Pcap(view) => {
            section.kind = "pcap";
            section.pcap = Some(sections::pcap(view));
        }
        // Not read for a page (`read`): a relay run has none.
        Run::Proxy(_) => return Err(HtmlError("a relay run (nodelay-proxy/1) has no page".into())),
    }
    Ok(section)
}

/// The page of `runs`, each with the name of the file it came from when it did.
pub fn render(runs: &[(Option<&str>, &Value)]) -> Result<String, HtmlError> {
    let read: Vec<(String, Run)> = runs
        .iter()
        .enumerate()
        .map(|(i, (name, value))| {
            let fallback = format!("run {}", i + 1);
            let run = read_run(name.unwrap_or(&fallback), value)?;
            Ok((label(*name, &what_it_measured(&run)), run))
        })
        .collect::<Result<_, HtmlError>>()?;
    let overview = if read.len() > 1 {
        let all: Vec<(String, &[SpectrumPoint])> =
            read.iter().flat_map(|(label, run)| spectra(run, label)).collect();
        Some(spectra_figure(
            "overview-spectrum",
            "Every run: latency by percentile",
            "latency",
            &all,
            "None of these runs has a latency spectrum.",
        )?)
    } else {
        None
    };
    let mut sections = read
        .iter()
        .enumerate()
        .map(|(i, (label, run))| section(i, label.clone(), run))
        .collect::<Result<Vec<_>, _>>()?;
    // A comparison's page is headed by its verdict; among other runs, its section is.
    let title = match sections.as_mut_slice() {
        [one] => match &one.compare {
            Some(compare) => format!("nodelay compare: {}", compare.headline),
            None => format!("nodelay {}: {}", one.kind, one.label),
        },
        many => {
            for section in many.iter_mut() {
                if let Some(compare) = &section.compare {
                    section.heading = format!("{}: {}", section.label, compare.headline);
                }
            }
            format!("nodelay: {} runs", many.len())
        }
    };
    let page = Page { title, overview, sections };
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("code", |text: &str| minijinja::Value::from_safe_string(with_code(text)));
    let template_error = |e: minijinja::Error| HtmlError(format!("the page template failed: {e:#}"));
    env.add_template("page.html", include_str!("page.html")).map_err(template_error)?;
    env.add_template("style.css", include_str!("style.css")).map_err(template_error)?;
    env.get_template("page.html")
        .and_then(|t| t.render(minijinja::value::Serde(&page)))
        .map_err(template_error)
}
