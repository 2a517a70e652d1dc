#!/usr/bin/env python3
"""Does reading the server's side of a run slow the run? nodelay bench against nginx (a 13-byte
file, keep-alive) with the server view (the default for a local target) and with
--no-server-view, alternating --rounds times (which goes first alternates too); nginx pinned to
core 0, nodelay (and so its sampler thread) to core 1.

Prints the median requests/s of each, their ratio, and the median of the rounds' own ratios
(a round's two runs are close in time, so this one is steadier). Issue 11 sets the target:
within 2 %.

Then the view's fixed cost: the CPU time of short runs (2000 requests) with and without it,
alternating, and the difference of their medians: what finding the server and reading its
socket tables at the start and the end cost the generator's core, once per run.

Usage: bench/server_view_overhead.py [--rounds 9] [--seconds 3] [--connections 50]
Exit status 0 when the target is met, 1 otherwise.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_wrk import NODELAY, ROOT, start_nginx  # noqa: E402


def bench(url, seconds, connections, view):
    cmd = ["taskset", "-c", "1", NODELAY, "bench", "-q", "--json", "-t", "1",
           "-c", str(connections), "-d", f"{seconds}s", url]
    if not view:
        cmd.append("--no-server-view")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    if view and not (report["server_view"] or {}).get("available"):
        sys.exit(f"the server view was not read: {report['server_view']}")
    return report["requests_per_second"], report["server_view"]


def short_run_cpu_ms(url, connections, view):
    """The CPU time (user + system) of a 2000-request run, in ms."""
    cmd = ["taskset", "-c", "1", NODELAY, "bench", "-q", "--json", "-t", "1",
           "-c", str(connections), "-n", "2000", url] + ([] if view else ["--no-server-view"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1:
        parser.error("--rounds, --seconds and --connections must be at least 1")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "nodelay"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as workdir:
        nginx, url = start_nginx(workdir)
        try:
            with_view, without = [], []
            for round_number in range(args.rounds):
                if round_number % 2 == 0:
                    rate, view = bench(url, args.seconds, args.connections, True)
                    rate_off, _ = bench(url, args.seconds, args.connections, False)
                else:
                    rate_off, _ = bench(url, args.seconds, args.connections, False)
                    rate, view = bench(url, args.seconds, args.connections, True)
                with_view.append(rate)
                without.append(rate_off)
                print(f"round {round_number + 1}: with server view {rate:9.0f} req/s, "
                      f"without {rate_off:9.0f} req/s; server CPU {view['cpu_per_request_ms'] * 1e3:.1f} µs "
                      f"per request")
            short_on, short_off = [], []
            for round_number in range(args.rounds):
                for view in ([True, False] if round_number % 2 == 0 else [False, True]):
                    (short_on if view else short_off).append(short_run_cpu_ms(url, args.connections, view))
        finally:
            nginx.terminate()  # SIGTERM: nginx stops its workers too
            nginx.wait()
    on, off = statistics.median(with_view), statistics.median(without)
    ratio = on / off
    per_round = statistics.median(a / b for a, b in zip(with_view, without))
    print(f"\nmedian of {args.rounds} rounds: with server view {on:.0f} req/s, without {off:.0f} req/s; "
          f"ratio {ratio:.3f}; median of the rounds' ratios {per_round:.3f} (target >= 0.98)")
    cpu_on, cpu_off = statistics.median(short_on), statistics.median(short_off)
    print(f"2000-request runs, median CPU: with server view {cpu_on:.1f} ms, without {cpu_off:.1f} ms; "
          f"the view's fixed cost {cpu_on - cpu_off:.1f} ms per run")
    return 0 if per_round >= 0.98 else 1


if __name__ == "__main__":
    sys.exit(main())
