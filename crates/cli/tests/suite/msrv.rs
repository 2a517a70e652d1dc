//! The workspace's `rust-version` is what the locked dependencies really need: the highest
//! `rust-version` among the packages a build (not the tests) compiles. Another toolchain
//! cannot be installed here, so this reads what each locked package declares.

use crate::common::repo_root;
use std::collections::HashSet;
use std::process::Command;

fn cargo(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO")).args(args).current_dir(repo_root()).output().expect("run cargo");
    assert!(output.status.success(), "cargo {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The target triple the tests were built for, as rustc names it (`x86_64-unknown-linux-gnu`).
fn host_triple() -> String {
    let output = Command::new("rustc").arg("-vV").output().expect("run rustc -vV");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("no host line in rustc -vV: {text}"))
        .to_string()
}

fn version(text: &str) -> (u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn rust_version_matches_the_locked_dependencies() {
    let built: HashSet<String> =
        cargo(&["tree", "-e", "normal", "--workspace", "--prefix", "none", "--locked", "--offline"])
            .lines()
            .filter_map(|line| line.split_whitespace().next().map(str::to_string))
            .collect();
    // Only this platform's packages: the others (Windows-only crates) are never downloaded
    // by a build here, so --offline cannot read their manifests on a fresh machine.
    let host = host_triple();
    let metadata: serde_json::Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--offline",
        "--filter-platform",
        &host,
    ]))
    .expect("JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let declared = packages
        .iter()
        .find(|p| p["name"] == "nodelay")
        .and_then(|p| p["rust_version"].as_str())
        .map(version)
        .expect("nodelay declares a rust-version");
    let (needed, by) = packages
        .iter()
        .filter(|p| p["name"].as_str().is_some_and(|name| built.contains(name)))
        .filter_map(|p| Some((version(p["rust_version"].as_str()?), p["name"].as_str()?.to_string())))
        .max()
        .expect("some dependency declares a rust-version");
    assert_eq!(declared, needed, "rust-version should be {}.{} (needed by {by})", needed.0, needed.1);
}
