//! Ctrl-C (and SIGTERM, SIGHUP): the first asks the running measurement to stop and report
//! what it has; a second exits at once, after undoing what nodelay changed in another process
//! (`doctor --try-fix`), if anything.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INSTALLED: OnceLock<()> = OnceLock::new();
/// What to undo before an immediate exit.
static UNDO: Mutex<Option<Box<dyn FnOnce() + Send>>> = Mutex::new(None);

/// Runs `undo` if the process is made to exit at once while `work` runs (`work` itself must
/// undo on the normal path).
pub fn undoing<T>(undo: impl FnOnce() + Send + 'static, work: impl FnOnce() -> T) -> T {
    *UNDO.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(undo));
    let result = work();
    UNDO.lock().unwrap_or_else(|e| e.into_inner()).take();
    result
}

/// Installs the handler (once per process).
pub fn install() {
    INSTALLED.get_or_init(|| {
        // Without a handler Ctrl-C still ends the process, just without a report.
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                // No one is left to clear a progress line: wipe the one the cursor is on.
                let mut stderr = std::io::stderr();
                if stderr.is_terminal() {
                    let _ = stderr.write_all(b"\r\x1b[2K");
                }
                if let Some(undo) = UNDO.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    undo();
                }
                std::process::exit(130);
            }
        });
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
