#!/usr/bin/env bash
# Builds nodelay's container image from the Containerfile with podman: a static binary for the
# x86_64-unknown-linux-musl target, built here by cargo, on scratch. Nothing is pulled: the only
# downloads are crates (and the rustup target, which scripts/setup.sh adds).
#
# Usage: scripts/image.sh [--dev] [--binary-only] [--tag NAME]...
#   default       the release profile, tagged localhost/nodelay:MAJOR.MINOR and :VERSION
#   --dev         the dev profile without debug info: half the build time of a release, for tests
#   --binary-only the static binary, no image (scripts/test.sh builds it before the tests start)
#   --tag NAME    this name instead of the version tags
# The binary is built in ~/.cache/nodelay/musl-target (or $NODELAY_MUSL_TARGET_DIR): apart from
# target/, whose lock a running `cargo test` holds, and shared by every checkout on the machine,
# so that a fresh clone (CI's) rebuilds only nodelay's own crates (35 s, not 2 minutes). Prints
# the image's ID.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
binary_only=false
tags=()
while (($#)); do
  case "$1" in
    --dev) profile=dev ;;
    --binary-only) binary_only=true ;;
    --tag)
      [[ $# -ge 2 ]] || { echo "scripts/image.sh: --tag needs a NAME" >&2; exit 2; }
      tags+=("$2")
      shift
      ;;
    *) echo "scripts/image.sh: unknown argument '$1' (usage: scripts/image.sh [--dev] [--binary-only] [--tag NAME]...)" >&2; exit 2 ;;
  esac
  shift
done

target=x86_64-unknown-linux-musl
# Plain rustc: scripts/test.sh's lint wrapper (clippy's driver, scripts/clippy-rustc.sh) would
# only slow the image's build.
unset RUSTC_WORKSPACE_WRAPPER NODELAY_DENY_WARNINGS
cache="${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}"
export CARGO_TARGET_DIR="${NODELAY_MUSL_TARGET_DIR:-${cache:-$PWD/target}/nodelay/musl-target}"
if [[ $profile == dev ]]; then
  # No debug info and no symbols: half the compile time, and 23 MB of image instead of 150.
  CARGO_PROFILE_DEV_DEBUG=false CARGO_PROFILE_DEV_STRIP=true \
    cargo build --quiet --locked --target "$target" -p nodelay --bin nodelay
  binary="$CARGO_TARGET_DIR/$target/debug/nodelay"
else
  cargo build --quiet --locked --release --target "$target" -p nodelay --bin nodelay
  binary="$CARGO_TARGET_DIR/$target/release/nodelay"
fi

$binary_only && exit 0

# The build context holds exactly what the Containerfile copies.
context="$(mktemp -d "${TMPDIR:-/tmp}/nodelay-image.XXXXXX")"
trap 'rm -rf "$context"' EXIT
cp "$binary" "$context/nodelay"
cp /etc/ssl/certs/ca-certificates.crt "$context/ca-certificates.crt"

# The binary names its own version, and proves it runs outside a container first.
version="$("$context/nodelay" --version)"
version="${version#nodelay }"
if ((${#tags[@]} == 0)); then
  tags=("localhost/nodelay:${version%.*}" "localhost/nodelay:$version")
fi

# A rebuild moves the tags to a new image: the one they leave, if no other tag holds it, goes.
previous="$(podman image inspect --format '{{.Id}}' "${tags[0]}" 2>/dev/null || true)"
tag_args=()
for tag in "${tags[@]}"; do tag_args+=(--tag "$tag"); done
podman build --quiet --file Containerfile --build-arg "VERSION=$version" "${tag_args[@]}" "$context"
if [[ -n $previous ]] && [[ "$(podman image inspect --format '{{.Id}}' "${tags[0]}")" != "$previous" ]]; then
  podman image rm "$previous" >/dev/null 2>&1 || true
fi
