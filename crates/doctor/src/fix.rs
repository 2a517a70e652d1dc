//! `nodelay fix`: TCP_NODELAY set on a running program's sockets (crates/host), then one new
//! connection opened to check that the program keeps it, and the report of what that showed. A program that turns TCP_NODELAY off on each connection it accepts undoes
//! the fix for every connection to come: the report says so, and the way that holds.

use anyhow::Result;
use nodelay_host::{HostError, NewConnection, Target, WithNewConnection};
use nodelay_load::usage;
use nodelay_report::FixReport;

/// What `nodelay fix` did, and what a new connection showed afterwards.
#[derive(Debug, Clone)]
pub struct Fixed {
    report: WithNewConnection<FixReport>,
}

/// Sets TCP_NODELAY on the target's sockets that lack it (on a dry run, only says which),
/// then checks one new connection to its first listening socket. A PID that names no
/// process while a socket listens on a port of that number is a usage error that says so.
pub fn fix(target: Target, dry_run: bool) -> Result<Fixed> {
    let change = nodelay_host::set_nodelay(target, dry_run).map_err(|error| port_hint(target, error))?;
    let new_connection = nodelay_host::check_new_connection(&change);
    let report = FixReport::new(target.to_string(), change);
    Ok(Fixed { report: WithNewConnection { report, new_connection } })
}

/// `nodelay fix 9102` when no process 9102 exists but something listens on port 9102: the
/// user meant the port. Any other error is passed on as it is.
fn port_hint(target: Target, error: HostError) -> anyhow::Error {
    match (target, &error) {
        (Target::Pid(pid), HostError::NoSuchProcess(_))
            if u16::try_from(pid).is_ok_and(nodelay_host::listens_on) =>
        {
            usage(format!("no process {pid}; did you mean :{pid} (the port)?"))
        }
        _ => error.into(),
    }
}

impl Fixed {
    /// False when the program turned TCP_NODELAY off on the new connection: the fix cannot
    /// hold for the connections to come.
    pub fn holds(&self) -> bool {
        !self.report.new_connection.as_ref().is_some_and(NewConnection::turned_off)
    }

    /// What was done and what the new connection showed: the JSON contract
    /// (`schema/inspect.schema.json`, `fix`), and what the CLI renders as text.
    pub fn report(&self) -> &WithNewConnection<FixReport> {
        &self.report
    }
}
