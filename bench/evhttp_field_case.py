#!/usr/bin/env python3
"""The first field report, reproduced with the tool its reporter used: `ab -k -c 1 -n 100` on
a libevent evhttp server's 25 086-byte block (tests/peers/evhttp_server.c), pinned to core 0
with ab on core 1, three ways side by side: as shipped, under `nodelay exec`, and as shipped
after `nodelay fix :PORT` on the running process. Prints ab's mean time per request for each
and the ratios. Needs libevent-dev and ab (scripts/setup.sh --bench) and a release build.
Usage: bench/evhttp_field_case.py [--requests 100]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
BLOCK = "25086"


def build_peer(directory):
    binary = os.path.join(directory, "evhttp_server")
    source = os.path.join(ROOT, "tests", "peers", "evhttp_server.c")
    subprocess.run(["cc", "-O2", "-o", binary, source, "-levent"], check=True)
    return binary


def start(command):
    proc = subprocess.Popen(["taskset", "-c", "0"] + command, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        sys.exit(f"{command} printed {line!r}")
    return proc, int(line.split()[1])


def ab_ms(port, requests):
    """ab's mean time per request in milliseconds, after checking every request succeeded."""
    out = subprocess.run(
        ["taskset", "-c", "1", "ab", "-k", "-c", "1", "-n", str(requests), f"http://127.0.0.1:{port}/"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    length = re.search(r"Document Length:\s+(\d+)", out).group(1)
    if failed or length != BLOCK:
        sys.exit(f"ab: {failed} failed, document length {length}")
    return float(re.search(r"Time per request:\s+([\d.]+) \[ms\] \(mean\)", out).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    if not os.access(NODELAY, os.X_OK):
        sys.exit("build first: cargo build --release -p nodelay")
    with tempfile.TemporaryDirectory() as directory:
        peer = build_peer(directory)
        results = {}
        for name, command in [
            ("as shipped", [peer, "--body-bytes", BLOCK]),
            ("nodelay exec", [NODELAY, "exec", "--quiet", "--", peer, "--body-bytes", BLOCK]),
            ("nodelay fix", [peer, "--body-bytes", BLOCK]),
        ]:
            proc, port = start(command)
            try:
                if name == "nodelay fix":
                    subprocess.run([NODELAY, "fix", f":{port}"], check=True, stdout=subprocess.DEVNULL)
                results[name] = ab_ms(port, args.requests)
            finally:
                proc.kill()
                proc.wait()
    print(f"ab -k -c 1 -n {args.requests} on evhttp, {BLOCK}-byte body (server core 0, ab core 1)")
    print(f"{'server':<14}{'time per request':>18}{'vs as shipped':>16}")
    for name, ms in results.items():
        ratio = results["as shipped"] / ms
        print(f"{name:<14}{ms:>15.3f} ms{ratio:>15.0f}x")


if __name__ == "__main__":
    main()
