//! Links the release `nodelay` binary with the functions a run executes placed together
//! (`link/symbol-order.txt`, written by `scripts/symbol_order.py`), so that the kernel's
//! fault-around, which maps 64 KB of a file around each page a process touches, maps code
//! the run uses rather than its neighbours: the binary's peak RSS under `bench -c 50` went
//! from 11.9 to 8.5-9.1 MB with it (issue 48's target is at most twice wrk's 4.9 MB).
//!
//! Only where the linker is lld, which reads the file: Rust's own for x86_64 Linux with
//! glibc from Rust 1.90 on, unless a linker or `-fuse-ld` is chosen. Names the file has and
//! the binary does not (code changed since the file was written) are skipped quietly; the
//! script's `--check` counts them. `NODELAY_SYMBOL_ORDER=0` turns it off.

use std::env;
use std::path::Path;
use std::process::Command;

/// The Rust release whose x86_64-unknown-linux-gnu target links with rust-lld by default.
const LLD_DEFAULT_FROM_MINOR: u32 = 90;

fn main() {
    let order =
        Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("link/symbol-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=NODELAY_SYMBOL_ORDER");
    if env::var("NODELAY_SYMBOL_ORDER").is_ok_and(|v| v == "0") || !links_with_rust_lld() || !order.is_file()
    {
        return;
    }
    println!("cargo:rustc-link-arg-bin=nodelay=-Wl,--symbol-ordering-file={}", order.display());
    println!("cargo:rustc-link-arg-bin=nodelay=-Wl,--no-warn-symbol-ordering");
}

/// Whether this is a release build for x86_64 Linux with glibc, linked by rust-lld: the
/// target's default from 1.90, with no linker and no `-fuse-ld` of the user's.
fn links_with_rust_lld() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("PROFILE") != "release" || var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if env::var_os("RUSTC_LINKER").is_some() || flags.contains("fuse-ld") || flags.contains("linker") {
        return false;
    }
    rustc_minor().is_some_and(|minor| minor >= LLD_DEFAULT_FROM_MINOR)
}

/// The minor version of the compiler building this crate (`rustc 1.95.0 (...)` gives 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    text.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
}
