//! Compiles the eBPF programs under bpf/ with clang (scripts/setup.sh installs it). Without
//! clang the crate still builds, and the modes that need the programs say so at run time:
//! bench, doctor and the rest need no eBPF.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=bpf/fix_nodelay.bpf.c");
    println!("cargo::rerun-if-changed=bpf/watch_holds.bpf.c");
    println!("cargo::rerun-if-env-changed=NODELAY_CLANG");
    println!("cargo::rustc-check-cfg=cfg(nodelay_bpf)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("NODELAY_CLANG").unwrap_or_else(|_| "clang".into());
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        return;
    }
    // linux/bpf.h includes asm/types.h, which Debian keeps under the multiarch directory.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    // The programs run in this machine's kernel, in its byte order.
    let target = match std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() {
        Ok("big") => "bpfeb",
        _ => "bpfel",
    };
    let mut failed = None;
    for program in ["fix_nodelay", "watch_holds"] {
        let built = Command::new(&clang)
            .args(["-O2", "-g", "-target", target, "-Wall", "-Werror"])
            .arg(format!("-I{multiarch}"))
            .args(["-c", &format!("bpf/{program}.bpf.c"), "-o"])
            .arg(out.join(format!("{program}.bpf.o")))
            .output();
        match built {
            Ok(output) if output.status.success() => {}
            Ok(output) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let first = stderr.lines().find(|l| l.contains("error")).unwrap_or("no message").to_string();
                failed = Some(format!("{clang} failed on {program}.bpf.c: {first}"));
            }
            Err(e) => failed = Some(format!("{clang}: {e}")),
        }
    }
    let Some(why) = failed else { return println!("cargo::rustc-cfg=nodelay_bpf") };
    // Built again once scripts/setup.sh has installed what was missing.
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=/usr/include/bpf/bpf_helpers.h");
    // The tests hold a build from scripts/setup.sh to having them (crates/cli/tests/suite/ebpf_fix.rs).
    println!(
        "cargo::warning=no eBPF programs in this build ({why}); `nodelay fix --cgroup` will say so. \
         scripts/setup.sh installs clang and libbpf-dev"
    );
}
