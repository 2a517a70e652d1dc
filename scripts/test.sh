#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit tests and integration tests against real
# peers on loopback. This is what CI runs (.ci/run) and what the README names.
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean build gains nothing from incremental state, which took 1.4 GB of a CI runner's disk.
export CARGO_INCREMENTAL=0

scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The library crates' Rust API: every public item documented (missing_docs), no broken links.
# Not the binary's: its doc comments are clap's help text, written for a terminal.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --exclude nodelay --no-deps --locked
cargo test --workspace --locked
