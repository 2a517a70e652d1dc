//! `doctor --try-fix`: once a server-side Nagle stall is proven on a server of this machine,
//! set TCP_NODELAY on the server's own sockets (crates/host), measure the baseline again on a
//! fresh keep-alive connection, and put the original setting back unless `--keep-fix`.

use crate::phases::run_phase;
use anyhow::{Context, Result};
use nodelay_diagnose::{Finding, FindingId, FixTrial};
use nodelay_engine::EngineConfig;
use nodelay_flags::Flag;
use nodelay_host::{NodelayChange, ProcessInfo, Restored, Target};
use nodelay_load::stop;
use nodelay_report::{TryFixReport, plural};

/// A trial where at least this share of responses still pause did not fix the server.
const STILL_STALLS: f64 = 0.5;

/// What the user asked the doctor to do with a fix it proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixPolicy {
    /// Only say what to change.
    Describe,
    /// Apply it to the server and measure; restore the original setting unless `keep`.
    Try {
        /// Leave TCP_NODELAY on afterwards.
        keep: bool,
    },
}

/// Whether the findings so far call for the trial, and why not when they do not.
pub(crate) fn worth_trying(findings: &[Finding]) -> Result<(), &'static str> {
    let server_nagle = [FindingId::ServerNagleDelayedAck, FindingId::ServerNagleRoundTrip];
    if findings.iter().any(|f| server_nagle.contains(&f.id) && f.proven) {
        Ok(())
    } else {
        Err("nothing to try: no server-side Nagle stall was proven")
    }
}

/// "PID 4242 (python3)", each process.
fn processes(processes: &[ProcessInfo]) -> String {
    let each: Vec<String> = processes.iter().map(|p| format!("PID {} ({})", p.pid, p.command)).collect();
    each.join(", ")
}

/// Applies the fix to the server behind `config.address`, runs `config` once more, restores.
/// Returns the measured trial, if any, and what was done.
pub(crate) fn try_fix(config: &EngineConfig, keep: bool) -> Result<(Option<FixTrial>, TryFixReport)> {
    let address = config.address;
    let change = match nodelay_host::set_nodelay(Target::Address(address), false) {
        Ok(change) => change,
        Err(error) => {
            let outcome = format!("not applied: the server's sockets could not be changed: {error}");
            return Ok((None, TryFixReport::not_applied(outcome, Vec::new())));
        }
    };
    let who = processes(&change.processes);
    if change.changed.is_empty() {
        let outcome = format!(
            "not applied: the listening socket of {who} at {address} has TCP_NODELAY already, so the program \
             turns it off per connection; only its own setting (see the fixes) or `nodelay exec` can change that"
        );
        return Ok((None, TryFixReport::not_applied(outcome, change.processes)));
    }
    let applied = format!("TCP_NODELAY set on {who}");
    // Measure, then restore whatever happened while measuring; a second Ctrl-C or SIGTERM
    // that exits at once still restores. A failed measurement restores even with --keep-fix:
    // there is nothing to keep a fix for.
    let undo = change.clone();
    let (measured, restored) = stop::undoing(
        move || {
            if !keep {
                nodelay_host::restore(&undo);
            }
        },
        || {
            let measured = run_phase(config, None);
            let restored = (!keep || measured.is_err()).then(|| nodelay_host::restore(&change));
            (measured, restored)
        },
    );
    let phase = measured.with_context(|| match &restored {
        Some(restored) if restored.failed.is_empty() => "measuring with TCP_NODELAY set on the server failed; \
                                                        it was set back to off"
            .to_string(),
        _ => "measuring with TCP_NODELAY set on the server failed; it could NOT be set back to off everywhere: \
              `nodelay inspect` shows the sockets"
            .to_string(),
    })?;
    let mut report = report(&change, &applied, restored);
    if phase.summary().stalled_fraction() >= STILL_STALLS {
        report.outcome.push_str(
            " The stall remained: the program turns TCP_NODELAY off on each connection it accepts (as Go's \
             SetNoDelay(false) does), which only its own setting can change.",
        );
    }
    Ok((Some(FixTrial { applied, phase }), report))
}

/// What was done: `restored` is `None` when the fix was kept.
fn report(change: &NodelayChange, applied: &str, restored: Option<Restored>) -> TryFixReport {
    let changed = change.changed.len();
    let listening = change.listening_changed();
    let sockets = match (listening, changed - listening) {
        (0, connections) => plural(connections, "connection", "connections"),
        (listening, 0) => plural(listening, "listening socket", "listening sockets"),
        (listening, connections) => format!(
            "{} and {}",
            plural(listening, "listening socket", "listening sockets"),
            plural(connections, "connection", "connections")
        ),
    };
    let afterwards = match &restored {
        None => format!("kept on ({}): it lasts until the program restarts", Flag::KeepFix),
        Some(restored) if !restored.failed.is_empty() => format!(
            "but it could NOT be set back to off on {} ({}); `nodelay inspect` shows them",
            plural(restored.failed.len(), "socket", "sockets"),
            restored.failed.join("; ")
        ),
        Some(restored) if restored.gone > 0 => format!(
            "then set back to off on {} of {changed} (the others had closed); connections accepted meanwhile \
             keep it until they close",
            restored.restored
        ),
        Some(_) => {
            "then set back to off; connections accepted meanwhile keep it until they close".to_string()
        }
    };
    let kept = restored.is_none();
    let (sockets_restored, restore_failed) =
        restored.map_or((0, Vec::new()), |restored| (restored.restored, restored.failed));
    TryFixReport {
        applied: true,
        outcome: format!(
            "{applied}: {sockets}; measured again on a fresh keep-alive connection; {afterwards}."
        ),
        processes: change.processes.clone(),
        sockets_changed: changed,
        listening_changed: listening,
        sockets_restored,
        restore_failed,
        kept,
    }
}
