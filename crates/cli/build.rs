//! Links the release `nodelay` binary with the functions a run executes placed together
//! (`link/symbol-order.txt`, written by `scripts/symbol_order.py`), so that the kernel's
//! fault-around, which maps 64 KB of a file around each page a process touches, maps code
//! the run uses rather than its neighbours: under `bench -t 1 -c 50` the peak RSS went from
//! 11.4-11.9 MB to 7.4-7.8 MB (issue 48: at most twice wrk's 4.9 MB; docs/performance.md).
//!
//! Only where the linker is surely lld, which reads the file: a native x86_64 Linux glibc
//! build by a rustup compiler of 1.90 or later (which links with its own rust-lld unless told
//! otherwise, and ships it), with no linker of the user's. Names the file has and the binary
//! does not (code changed since the file was written) are skipped quietly; the script's
//! `--check` counts them. `NODELAY_SYMBOL_ORDER=0` turns it off.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Rust release whose x86_64-unknown-linux-gnu target links with rust-lld by default.
const LLD_DEFAULT_FROM_MINOR: u32 = 90;
const TARGET: &str = "x86_64-unknown-linux-gnu";

fn main() {
    let order =
        Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("link/symbol-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=NODELAY_SYMBOL_ORDER");
    if env::var("NODELAY_SYMBOL_ORDER").is_ok_and(|v| v == "0") || !links_with_rust_lld() || !order.is_file()
    {
        return;
    }
    // -Xlinker passes each argument whole: a path with a comma would be split by -Wl.
    for argument in ["-Xlinker", &format!("--symbol-ordering-file={}", order.display())] {
        println!("cargo:rustc-link-arg-bin=nodelay={argument}");
    }
    for argument in ["-Xlinker", "--no-warn-symbol-ordering"] {
        println!("cargo:rustc-link-arg-bin=nodelay={argument}");
    }
}

/// Whether this is a native release build for x86_64 Linux with glibc that rust-lld links:
/// the default from 1.90 for compilers that ship it (rustup's; a distribution's rustc may
/// link with the system's cc and GNU ld, which refuse the option), no linker and no
/// `-fuse-ld` or linker flavour of the user's.
fn links_with_rust_lld() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("PROFILE") != "release" || var("TARGET") != TARGET || var("HOST") != TARGET {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if env::var_os("RUSTC_LINKER").is_some() || flags.contains("fuse-ld") || flags.contains("linker") {
        return false;
    }
    let Some((minor, sysroot)) = rustc_minor_and_sysroot() else { return false };
    minor >= LLD_DEFAULT_FROM_MINOR
        && sysroot.join("lib/rustlib").join(TARGET).join("bin/gcc-ld/ld.lld").is_file()
}

/// The minor version of the compiler building this crate (`rustc 1.95.0 (...)` gives 95),
/// and its sysroot.
fn rustc_minor_and_sysroot() -> Option<(u32, PathBuf)> {
    let rustc = env::var_os("RUSTC")?;
    let output = |arguments: &[&str]| -> Option<String> {
        let done = Command::new(&rustc).args(arguments).output().ok()?;
        done.status.success().then(|| String::from_utf8_lossy(&done.stdout).trim().to_string())
    };
    let version = output(&["--version"])?;
    let minor = version.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()?;
    Some((minor, PathBuf::from(output(&["--print", "sysroot"])?)))
}
