#!/usr/bin/env bash
# The whole test suite: formatting, lints, API docs, unit tests and integration tests against
# real peers on loopback. This is what CI runs (.ci/run) and what the README names.
#
# Usage: scripts/test.sh [--quick] [--under-load]
#   --quick       the inner loop: no clippy or docs; unit tests and the integration tests
#                 that take seconds (nextest's `quick` profile, .config/nextest.toml)
#   --under-load  one busy process per core at normal priority while the tests run, as on a
#                 developer's laptop doing other work: every test must still pass
#
# Every phase and every test binary runs even when one before it failed. The report at the
# end gives each phase's time, each test binary's, the slowest tests, and last one line:
# `N passed, M failed, K skipped`. Exits 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# A clean build gains nothing from incremental state, which took 1.4 GB of a CI runner's disk.
export CARGO_INCREMENTAL=0

quick=false
under_load=false
for argument in "$@"; do
  case "$argument" in
    --quick) quick=true ;;
    --under-load) under_load=true ;;
    *) echo "scripts/test.sh: unknown argument '$argument' (usage: scripts/test.sh [--quick] [--under-load])" >&2; exit 2 ;;
  esac
done
profile=default
$quick && profile=quick

logs=target/test-logs
mkdir -p "$logs"
phases="$logs/phases"
: >"$phases"

# Runs one phase, records its time and whether it passed; a failure does not stop the run.
phase() {
  local name=$1
  shift
  echo "== $name: $*" >&2
  local started=$EPOCHREALTIME status=ok
  "$@" || status=failed
  awk -v name="$name" -v a="$started" -v b="$EPOCHREALTIME" -v s="$status" \
    'BEGIN { printf "%s %.1f %s\n", name, b - a, s }' >>"$phases"
  [[ $status == ok ]]
}

busy_pids=()
stop_load() {
  ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null
  busy_pids=()
}
trap stop_load EXIT
start_load() {
  for _ in $(seq "$(nproc)"); do
    # A shell spinning on a builtin: a whole core's worth of work at normal priority, and it
    # ends with this script. Bounded all the same: it gives up after an hour.
    bash -c 'end=$((SECONDS + 3600)); while ((SECONDS < end)); do :; done' &
    busy_pids+=($!)
  done
  echo "== under load: ${#busy_pids[@]} busy processes (${busy_pids[*]})" >&2
}

if ! phase setup scripts/setup.sh; then
  echo "scripts/test.sh: scripts/setup.sh failed; nothing else can run" >&2
  exit 1
fi
phase fmt cargo fmt --all -- --check
if ! $quick; then
  phase clippy cargo clippy --workspace --all-targets --locked -- -D warnings
  # The library crates' Rust API: every public item documented (missing_docs), no broken
  # links. The binary's crate is documented too, though its doc comments are clap's help text
  # (it allows the two rustdoc lints that markup trips): without it, the dependencies'
  # features differ from clippy's and rustdoc checks 60 of them again (37 s on 2 cores).
  RUSTDOCFLAGS="-D warnings" phase doc cargo doc --workspace --lib --no-deps --locked
fi
phase build cargo nextest run --workspace --locked --no-run --cargo-quiet

# A command's output shown and kept for the report; the command's own exit status.
logged() {
  local log=$1
  shift
  "$@" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

rm -f "target/nextest/$profile/junit.xml" "$logs/nextest.log" "$logs/doctests.log"
$under_load && start_load
phase tests logged "$logs/nextest.log" \
  cargo nextest run --workspace --locked --profile "$profile" --cargo-quiet --show-progress none
doctest_log=-
if ! $quick; then
  doctest_log="$logs/doctests.log"
  phase doctests logged "$doctest_log" cargo test --workspace --doc --locked --quiet
fi
stop_load

python3 scripts/test_report.py "$phases" "target/nextest/$profile/junit.xml" \
  "$logs/nextest.log" "$doctest_log"
