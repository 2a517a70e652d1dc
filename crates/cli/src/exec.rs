//! `nodelay exec -- PROGRAM ARGS...`: says how TCP_NODELAY will be forced (wrapped to stderr's
//! width), then becomes the program (the logic is in nodelay-launch). Returns only when the
//! program could not be started, with a shell's status for it, said in one line.

use crate::args::ExecArgs;
use crate::exit::Outcome;
use crate::output;
use crate::runner::stderr_width;
use anyhow::Result;
use nodelay_launch::{LaunchError, Method};
use nodelay_report::wrap_words;

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
            // The programs it starts inherit LD_PRELOAD, and the same limits: under a shell or
            // another wrapper, a statically linked server is not reached, and the line says so
            // rather than promise every socket of the process tree.
            if !args.quiet {
                tell(&format!(
                    "TCP_NODELAY forced (LD_PRELOAD) on every TCP socket of {name} and of the programs \
                     it starts, unless statically linked, set-ID or Go"
                ));
            }
        }
        // Printed even with --quiet: the guarantee is weaker than the command promises, and a
        // script that silenced the usual line must still learn that.
        Method::FromOutside { reason } => tell(&format!(
            "{reason}; setting TCP_NODELAY on {name}'s sockets from outside instead, every 50 ms \
             (2 ms at start), which can miss a connection accepted between two scans if {name} \
             turns NODELAY off per connection"
        )),
    }
    let error = launch.exec(say);
    Ok(cannot_run(&error))
}

/// Says what will happen: a paragraph wrapped to stderr's width, its later lines indented.
fn tell(text: &str) {
    output::stderr_line(&wrap_words(text, stderr_width(), "nodelay exec: ", "  ").join("\n"));
}

/// Says what went wrong: one line, as every error.
fn say(text: &str) {
    output::stderr_line(&format!("nodelay exec: {text}"));
}

fn cannot_run(error: &LaunchError) -> Outcome {
    say(&error.to_string());
    error.into()
}
