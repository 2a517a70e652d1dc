#!/usr/bin/env python3
"""Every performance target of issue 15 in one run: runs the benchmarks that measure them one
after another (nothing else should run meanwhile), then prints each script's ratio lines
against their targets together, and which scripts met all of theirs.

  bench/vs_wrk.py --rounds 5 --seconds 5   targets 1, 2 (and RSS, c=1 p50)
  bench/generator_floor.py                 the floor target 2 is measured against (no target)
  bench/latency_floor.py --rounds 5        target 3
  bench/open_loop.py                       target 4
  bench/raw_vs_http.py --rounds 5          target 5, raw TCP path within 10 % of HTTP
  bench/pcap_vs_tshark.py                  target 5, pcap >= 1000 MB/s
  bench/server_view_overhead.py            the server view costs under 2 % of req/s

Each script's whole output goes to bench/out/performance-<script>.txt. Takes ~15 minutes on a
2-core machine. Usage: bench/performance.py [--only vs_wrk,open_loop]
Exit status 0 when every script met its targets.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = [
    ("vs_wrk", ["--rounds", "5", "--seconds", "5"]),
    ("generator_floor", []),
    ("latency_floor", ["--rounds", "5"]),
    ("open_loop", []),
    ("raw_vs_http", ["--rounds", "5"]),
    ("pcap_vs_tshark", []),
    ("server_view_overhead", []),
]


def summary_lines(output):
    """The lines that state a ratio against a target, the verdicts under them, and the
    floor's own summary."""
    keep = ("target", "->", "the most an arrival-timed", "its floor's CPU", "fixed cost", "ring operations")
    return [line for line in output.splitlines() if any(word in line for word in keep)]


def main():
    parser = argparse.ArgumentParser(
        description="Runs issue 15's benchmarks one after another and prints their ratios against "
                    "the targets together.")
    parser.add_argument("--only", metavar="NAMES",
                        help="comma-separated, from: " + ", ".join(name for name, _ in RUNS))
    args = parser.parse_args()
    runs = RUNS
    if args.only is not None:
        # An empty --only (a variable left unset) must not start the whole 15-minute run.
        wanted = [name for name in args.only.split(",") if name]
        unknown = sorted(set(wanted) - {name for name, _ in RUNS})
        if not wanted or unknown:
            what = f"no benchmark named {', '.join(unknown)}" if unknown else "empty"
            parser.error(f"--only: {what} (names in --help)")
        runs = [run for run in RUNS if run[0] in wanted]
    out_dir = os.path.join(ROOT, "bench", "out")
    os.makedirs(out_dir, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    results = []
    for name, extra in runs:
        started = time.monotonic()
        print(f"running bench/{name}.py {' '.join(extra)}", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", f"{name}.py")] + extra,
                              cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - started
        path = os.path.join(out_dir, f"performance-{name}.txt")
        with open(path, "w") as f:
            f.write(done.stdout + done.stderr)
        results.append((name, done.returncode, seconds, summary_lines(done.stdout), path))
    print(f"\nissue 15's benchmarks at {commit} ({time.strftime('%Y-%m-%d %H:%M %Z')})")
    for name, code, seconds, lines, path in results:
        verdict = "targets met" if code == 0 else f"MISSED or failed (exit {code}; see {path})"
        print(f"\nbench/{name}.py: {verdict}, {seconds:.0f} s")
        for line in lines:
            print(f"  {line.strip()}")
    failed = [name for name, code, *_ in results if code != 0]
    print(f"\n{len(results) - len(failed)} of {len(results)} benchmarks met their targets"
          + (f"; not: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        # Ctrl-C reached the running benchmark too (same process group); it cleans up itself.
        sys.exit("performance.py: interrupted; the scripts finished so far kept their output in bench/out/")
