#!/usr/bin/env bash
# The compiler scripts/test.sh builds the workspace's own crates with (RUSTC_WORKSPACE_WRAPPER):
# clippy's driver, which is rustc plus clippy's lints. The build phase then lints as it
# compiles, where a separate `cargo clippy` checked every dependency a second time (check
# mode's metadata is not the build's): 124 s of a clean clone's 257 s of clippy and build.
# Dependencies are compiled by plain rustc (cargo wraps only workspace members).
#
# NODELAY_DENY_WARNINGS=1 makes every warning an error, as `cargo clippy -- -D warnings`
# did. Cargo does not see the variable, so units it built without it stay fresh: the tests
# phase, run without it, recompiles only what the lints refused, and the tests still run.
# (A unit fresh from such a build only replays its warnings: test.sh's build phase fails on
# any warning in cargo's output for that reason.)
deny=()
[[ ${NODELAY_DENY_WARNINGS:-} == 1 ]] && deny=(-D warnings)
exec clippy-driver "$@" "${deny[@]}"
