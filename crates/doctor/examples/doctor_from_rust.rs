//! The doctor from Rust: start one of `nodelay demo`'s servers (head and body in two writes,
//! Nagle on) and diagnose it, printing each finding with its evidence and fix.
//!
//! cargo run -p nodelay-doctor --example doctor_from_rust

use anyhow::{Result, bail};
use nodelay_doctor::demo_servers::{DemoBehaviour, start_demo_server};
use nodelay_doctor::{Diagnosis, Doctor, DoctorOptions, Progress};
use nodelay_report::DoctorReport;

/// Prints each step as the doctor starts it.
struct Steps;

impl Progress for Steps {
    fn phase(&mut self, what: &str) {
        eprintln!("... {what}");
    }
}

/// The diagnosis of a demo server that stalls on Nagle's algorithm.
pub fn diagnose_stalling_server() -> Result<DoctorReport> {
    let address = start_demo_server(DemoBehaviour::SplitWrites)?;
    let doctor = Doctor::new(&format!("http://{address}/"), DoctorOptions::default())?;
    match doctor.run(&mut Steps)? {
        Diagnosis::Single(report) => Ok(report),
        Diagnosis::Scenario(_) => bail!("one URL is one request, not a scenario"),
    }
}

fn main() -> Result<()> {
    let report = diagnose_stalling_server()?;
    for finding in &report.findings {
        let proven = if finding.proven { "proven" } else { "not proven" };
        println!("{} ({proven}): {}", finding.id.as_str(), finding.title);
        for evidence in &finding.evidence {
            println!("  {}: {:.3} {}", evidence.what, evidence.value, evidence.unit);
        }
        println!("  fix: {}", finding.fix_summary);
    }
    Ok(())
}
