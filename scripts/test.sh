#!/usr/bin/env bash
# The whole test suite: formatting, lints, API docs, unit tests and integration tests against
# real peers on loopback. This is what CI runs (.ci/run) and what the README names.
#
# Usage: scripts/test.sh [--quick] [--under-load]
#   --quick       the inner loop: lints shown but not fatal, no API docs; unit tests and the
#                 integration tests that take seconds (nextest's `quick` profile,
#                 .config/nextest.toml)
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
# The workspace's crates compile through clippy's driver (scripts/clippy-rustc.sh): the build
# is the lint. In every phase, so that each finds the others' units fresh; a plain `cargo
# build` afterwards recompiles the workspace's crates (not the dependencies) once.
export RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/clippy-rustc.sh"

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

# Writes a phase's line for the report: NAME STARTED STATUS [beside], its time up to now.
record() {
  awk -v name="$1" -v a="$2" -v b="$EPOCHREALTIME" -v s="$3" -v beside="${4:+ beside}" \
    'BEGIN { printf "%s %.1f %s%s\n", name, b - a, s, beside }' >>"$phases"
}

# Runs one phase, records its time and whether it passed; a failure does not stop the run.
phase() {
  local name=$1
  shift
  echo "== $name: $*" >&2
  local started=$EPOCHREALTIME status=ok
  "$@" || status=failed
  record "$name" "$started" "$status"
  [[ $status == ok ]]
}

# A command's output shown and kept for the report; the command's own exit status.
logged() {
  local log=$1
  shift
  "$@" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

# Starts a phase beside the ones that follow, its output kept in a log; `await_beside` waits
# for it. Its line in the phases file says `beside`: its time overlaps theirs.
beside_pid=
beside_log=
beside() {
  local name=$1 log=$2
  shift 2
  echo "== $name (beside the tests, output in $log): $*" >&2
  beside_log=$log
  (
    started=$EPOCHREALTIME status=ok
    "$@" >"$log" 2>&1 || status=failed
    record "$name" "$started" "$status" beside
    [[ $status == ok ]]
  ) &
  beside_pid=$!
}
await_beside() {
  [[ -n $beside_pid ]] || return 0
  local started=$EPOCHREALTIME status=0
  wait "$beside_pid" || status=$?
  beside_pid=
  # The wait is a phase of its own. It fails with the phase beside, which also says so on its
  # own line, unless it was killed before it could.
  record wait-beside "$started" "$( ((status)) && echo failed || echo ok)"
  if ((status)); then
    echo "== the phase beside the tests failed; the end of $beside_log:" >&2
    tail -n 40 "$beside_log" >&2
  fi
}

busy_pids=()
stop_load() {
  ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null
  busy_pids=()
}
# On an early exit, the phase beside the tests (its subshell, and nice's cargo under it) ends
# with the script.
stop_all() {
  stop_load
  if [[ -n ${beside_pid:-} ]]; then
    pkill -TERM -P "$beside_pid" 2>/dev/null
    kill "$beside_pid" 2>/dev/null
  fi
}
trap stop_all EXIT
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
# A pyenv python3 is a shim, a bash script that finds the interpreter each time: 0.1 s of CPU
# on an idle machine and up to 0.6 s on a busy one, at each of the ~470 peers and clients the
# tests start. A link to the interpreter it finds goes first on PATH, and nothing else does.
if [[ $(command -v python3) == */shims/python3 ]] &&
  python=$(python3 -c 'import sys; print(sys.executable)') && [[ $python == /* ]]; then
  mkdir -p target/python3-bin
  ln -sfn "$python" target/python3-bin/python3
  export PATH="$PWD/target/python3-bin:$PATH"
fi
phase fmt cargo fmt --all -- --check
# Every target, as `cargo clippy --all-targets` linted (the examples too). Warnings are errors
# here only (scripts/clippy-rustc.sh), so a lint fails this phase and the tests still run.
# Cargo does not see that variable: a crate compiled before without it (by the tests phase of
# a run that failed here, or by --quick) is fresh, and cargo replays its warnings as warnings.
# So any compiler warning in the output fails the phase too: a `warning` line whose next line
# gives its place (`  --> FILE:LINE:COL`), as rustc's and clippy's do; cargo's own (a network
# retry, a build script's `warning: PACKAGE@VERSION: ...`) have none. With --cargo-quiet,
# cargo prints no "generated N warnings" line to look for.
build=(cargo nextest run --workspace --all-targets --locked --no-run --cargo-quiet)
lint_build() {
  local log="$logs/build.log" status
  NODELAY_DENY_WARNINGS=1 logged "$log" "${build[@]}"
  status=$?
  if awk '/^warning/ { w = 1; next } w && /^ *--> / { found = 1 } { w = 0 } END { exit !found }' "$log"; then
    echo "== build: compiler warnings (above) fail the build, as clippy's -D warnings did" >&2
    status=1
  fi
  return "$status"
}
if $quick; then
  phase build "${build[@]}"
else
  phase build lint_build
  # The container image's static binary (a musl build of nodelay's crates, 73 s of CPU): the
  # container tests' image build finds it fresh. Built during the tests, it held the cores
  # while the timing group's first tests ran, and each failure of a clean-clone run in two
  # stops was among the first tests to end.
  phase image bash scripts/image.sh --dev --binary-only
fi


rm -f "target/nextest/$profile/junit.xml" "$logs/nextest.log" "$logs/doctests.log" "$logs/doc.log"
$under_load && start_load
if ! $quick; then
  # The library crates' Rust API: every public item documented (missing_docs), no broken
  # links. The binary's crate is documented too, though its doc comments are clap's help text
  # (it allows the two rustdoc lints that markup trips). rustdoc needs every dependency
  # checked (metadata, which the build phase does not leave): 117 s of CPU, 61 s alone. It
  # runs beside the tests at the lowest priority, on the sixth of the cores they leave idle,
  # in a target directory of its own (the tests' cargo would wait for the lock of this one).
  # Started before the build instead, it made the build and image phases 39 s longer
  # (254 and 45 s against 226 and 34), though at nice 19.
  RUSTDOCFLAGS="-D warnings" CARGO_TARGET_DIR=target/api-docs beside doc "$logs/doc.log" \
    env -u RUSTC_WORKSPACE_WRAPPER nice -n 19 cargo doc --workspace --lib --no-deps --locked
fi
phase tests logged "$logs/nextest.log" \
  cargo nextest run --workspace --locked --profile "$profile" --cargo-quiet --show-progress none
doctest_log=-
if ! $quick; then
  doctest_log="$logs/doctests.log"
  phase doctests logged "$doctest_log" cargo test --workspace --doc --locked --quiet
fi
# The busy processes stop first: at nice 0 they would leave the doc build 1.5 % of a core.
stop_load
await_beside

python3 scripts/test_report.py "$phases" "target/nextest/$profile/junit.xml" \
  "$logs/nextest.log" "$doctest_log"
