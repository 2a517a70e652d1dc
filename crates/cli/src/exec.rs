//! `nodelay exec -- PROGRAM ARGS...`: says in one line how TCP_NODELAY will be forced, then
//! becomes the program (the logic is in nodelay-launch). Returns only when the program could
//! not be started, with a shell's status for it.

use crate::args::ExecArgs;
use crate::exit::Outcome;
use crate::output;
use anyhow::Result;
use nodelay_launch::{LaunchError, Method};

pub fn exec(args: &ExecArgs) -> Result<Outcome> {
    let Some((program, rest)) = args.command.split_first() else {
        unreachable!("clap requires PROGRAM");
    };
    let launch = match nodelay_launch::prepare(program, rest) {
        Ok(launch) => launch,
        Err(error) => return Ok(cannot_run(&error)),
    };
    let name = program.to_string_lossy();
    match launch.method() {
        Method::Preload { .. } => {
            if !args.quiet {
                say(&format!("TCP_NODELAY forced on every TCP socket of {name} (LD_PRELOAD)"));
            }
        }
        // Printed even with --quiet: the guarantee is weaker than the command promises, and a
        // script that silenced the usual line must still learn that.
        Method::FromOutside { reason } => say(&format!(
            "{reason}; setting TCP_NODELAY on {name}'s sockets from outside instead, every 50 ms \
             (2 ms at start), which can miss a connection accepted between two scans if {name} \
             turns NODELAY off per connection"
        )),
    }
    let error = launch.exec(say);
    Ok(cannot_run(&error))
}

fn say(text: &str) {
    output::stderr_line(&format!("nodelay exec: {text}"));
}

fn cannot_run(error: &LaunchError) -> Outcome {
    say(&error.to_string());
    error.into()
}
