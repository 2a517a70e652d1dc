//! nodelay's doctor as a library: names the cause of slow requests, proves it by experiment
//! and shows the fix, within a bounded budget. [`Doctor::new`] validates a target and its
//! options; [`Doctor::run`] measures a keep-alive baseline, runs the experiments the rules
//! of `nodelay_diagnose` ask for while the budget lasts, probes, tries a fix when asked,
//! follows the hops behind a server of this machine, and returns the report that
//! `nodelay_report` renders as text, JSON or HTML.
//!
//! ```no_run
//! use nodelay_doctor::{Diagnosis, Doctor, DoctorOptions};
//!
//! let doctor = Doctor::new("http://127.0.0.1:8000/", DoctorOptions::default())?;
//! if let Diagnosis::Single(report) = doctor.run(&mut ())? {
//!     for finding in &report.findings {
//!         println!("{}: {}", finding.id.as_str(), finding.title);
//!     }
//! }
//! # anyhow::Ok(())
//! ```
//!
//! Nothing here prints: steps are told to a [`Progress`]; a stop request
//! (`nodelay_load::stop::request`, the CLI's Ctrl-C) ends the step running and the report
//! says so. [`demo_servers`] are the small servers `nodelay demo` diagnoses. [`fix()`] is
//! `nodelay fix`: TCP_NODELAY set on a running program, checked on a new connection.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cgroup_fix;
mod chain;
pub mod demo_servers;
mod doctor;
mod examine;
mod fix;
mod inspect;
mod phases;
mod progress;
mod try_fix;

pub use cgroup_fix::{CgroupTarget, fix_cgroup, persist_cgroup_fix, undo_cgroup_fix};
pub use doctor::{Diagnosis, Doctor, DoctorOptions, supported};
pub use fix::{Fixed, fix};
pub use inspect::inspect;
pub use progress::Progress;
pub use try_fix::FixPolicy;
