//! The kernel's hold timing ([`nodelay_ebpf::HoldWatch`]) attached until standard input
//! closes, for bench/kernel_holds_cost.py: prints `READY` once attached, then at the end one
//! line of totals. Not a command of nodelay's: `nodelay watch` does not use it yet.

use std::io::{BufRead, Write};

fn main() {
    let watch = match nodelay_ebpf::HoldWatch::start() {
        Ok(watch) => watch,
        Err(error) => {
            eprintln!("hold_watch: {error}");
            std::process::exit(1);
        }
    };
    println!("READY");
    let _ = std::io::stdout().flush();
    // Until the bench closes our stdin (or dies, which closes it too).
    let _ = std::io::stdin().lock().lines().count();
    match watch.read() {
        Ok(all) => {
            let holds: u64 = all.iter().map(|s| s.holds).sum();
            let sends: u64 = all.iter().map(|s| s.sends).sum();
            println!("groups {} holds {holds} sends {sends}", all.len());
        }
        Err(error) => {
            eprintln!("hold_watch: {error}");
            std::process::exit(1);
        }
    }
}
