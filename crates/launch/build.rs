//! Compiles the LD_PRELOAD shim (`shim/nodelay_shim.c` at the repository root) into a shared
//! object in OUT_DIR, which `src/library.rs` embeds. The `cc` crate picks the compiler and the
//! target flags; it builds static archives, so the link into a `.so` is done here.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let source = manifest.join("../../shim/nodelay_shim.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("libnodelay_shim.so");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed=build.rs");

    // Other systems (a type-check for macOS) get no shim: the crate is Linux-only inside.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // The shim is loaded into the programs nodelay starts, which are linked against the
    // system's C library (glibc), not nodelay's: a static musl nodelay still embeds a glibc
    // shim (a musl one needs musl's libc.so, which a glibc program cannot load).
    let mut command: Command = if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("musl") {
        Command::new("cc")
    } else {
        cc::Build::new().opt_level(2).debug(false).get_compiler().to_command()
    };
    command
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"])
        // Every symbol resolved at link time (a missing one would kill the program at its
        // first call), and no symbol table to embed.
        .args(["-Wl,-z,defs", "-s", "-o"])
        .arg(&out)
        .arg(&source)
        // dlsym: in libc since glibc 2.34, in libdl before.
        .arg("-ldl");
    let status = command.status().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}
