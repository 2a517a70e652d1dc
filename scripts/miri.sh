#!/usr/bin/env bash
# Runs the pure crates' unit tests under Miri (undefined behaviour, out-of-bounds reads,
# aliasing): the HTTP and raw framers (nodelay-wire), the capture decoder (nodelay-capture;
# its flow analysis runs past 8 minutes under Miri) and the significance tests
# (nodelay-diagnose), and the TCP model (nodelay-tcp: the kernel struct's layout read from
# bytes, the path judgement, the percentile; its socket tests need a kernel Miri has not).
# Tests that walk every split of a message or read fixture files are
# skipped: Miri interprets, about a thousand times slower than native code, and has no file
# system without -Zmiri-disable-isolation.
# Needs the nightly toolchain with the miri component:
#   rustup +nightly component add miri rust-src
# Usage: scripts/miri.sh [EXTRA TEST FILTER ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."
skip=(--skip every_split --skip at_every --skip fixture --skip mutations --skip byte_by_byte
      --skip random --skip many_rounds --skip normal_approximation)
cargo +nightly miri test -p nodelay-wire --lib -- "${skip[@]}" "$@"
cargo +nightly miri test -p nodelay-capture --lib decode -- "${skip[@]}" "$@"
cargo +nightly miri test -p nodelay-diagnose --lib significance -- "${skip[@]}" "$@"
cargo +nightly miri test -p nodelay-tcp --lib -- --skip socket "${skip[@]}" "$@"
