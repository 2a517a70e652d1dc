//! A slow server that does not work: when its own counters show little CPU per request
//! beside the time it takes, "profile the handler" sends the user to a CPU profile that will
//! show nothing. Say it waits (I/O, a lock, a sleep, an upstream) and how to find on what.

use crate::finding::{Evidence, Finding, FindingId};
use crate::fixes;
use crate::phase::PhaseSummary;
use crate::server::{server_load, stack_fixes};
use nodelay_host::ServerView;

/// CPU per request under this share of the time a finding names: the server mostly waits.
const WAITING_CPU_SHARE: f64 = 0.25;

/// Turns the advice of a slow first byte or body into a waiting server's when its CPU per
/// request is a small share of that time.
pub(crate) fn waiting_advice(findings: &mut [Finding], view: &ServerView, baseline: &PhaseSummary) {
    let Some(cpu_ms) = server_load(view, baseline.responses as u64).cpu_per_request_ms else { return };
    for finding in findings.iter_mut() {
        let (spent_ms, where_) = match finding.id {
            FindingId::SlowFirstByte => (baseline.server_first_byte_p50_ms(), "before its first byte"),
            FindingId::SlowResponseBody => (baseline.body_p50_ms, "after its first byte"),
            _ => continue,
        };
        if spent_ms <= 0.0 || cpu_ms >= WAITING_CPU_SHARE * spent_ms {
            continue;
        }
        let share = cpu_ms / spent_ms * 100.0;
        finding.evidence.push(Evidence::new("server CPU per request (its own counters)", cpu_ms, "ms"));
        finding.evidence.push(Evidence::new(format!("CPU as a share of the time {where_}"), share, "%"));
        let upstreams = match view.upstreams.len() {
            0 => "it used no upstream during the run, so look at disk, locks and sleeps".to_string(),
            n => format!("it used {n} upstream(s) during the run: run nodelay doctor against each"),
        };
        finding.fix_summary = format!(
            "The server waits: {cpu_ms:.2} ms of CPU per request against {spent_ms:.1} ms {where_} ({share:.0} %). \
             The time goes to I/O, a lock, a sleep or an upstream, not to work: a CPU profile will not show it, an \
             off-CPU one will; {upstreams}."
        );
        finding.fix = stack_fixes(view, fixes::server_waits());
    }
}
