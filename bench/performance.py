#!/usr/bin/env python3
"""Every performance target of issues 15 and 32 in one run: runs the benchmarks that measure them one
after another (nothing else should run meanwhile), then prints each script's ratio lines
against their targets together, and which scripts met all of theirs.

  bench/vs_wrk.py --rounds 5 --seconds 5   targets 1, 2 (and RSS, c=1 p50)
  bench/generator_floor.py                 the floor target 2 is measured against (no target)
  bench/latency_floor.py --rounds 5        target 3
  bench/open_loop.py                       target 4
  bench/raw_vs_http.py                    issue 48: raw TCP path >= 0.95 of HTTP in req/CPU-s
  bench/pcap_vs_tshark.py                  issue 48: pcap >= 0.5x the page-cache read, >= 30x tshark
  bench/server_view_overhead.py            the server view costs under 2 % of req/s
  bench/fix_cgroup_cost.py                 issue 42: fix --cgroup costs <= 1 % of connects/s
  bench/kernel_holds_cost.py               issue 42: the kernel's hold timing <= 3 % of req/s, <= 1 % CPU
  memory (in this file)                    issue 32: bench -t 1024 -c 1024 under 128 MiB RSS
  bench/server_cost_per_generator.py       issue 32: wake-ups nginx sends per request, each loop
  bench/scale.py                           issue 32: 1k/10k/50k connections, RSS, connects/s
  bench/wan_scale.py                       issue 32: 40 ms RTT, 1000 connections, c/RTT
(vs_wrk.py also carries issue 32's epoll target: a machine refusing io_uring.)

Each script's whole output goes to bench/out/performance-<script>.txt. Takes ~15 minutes on a
2-core machine (~35 with issue 32's). Usage: bench/performance.py [--only vs_wrk,open_loop]
Exit status 0 when every script met its targets.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import canned  # noqa: E402  (bench/canned_peer.c, built and started)

RUNS = [
    ("vs_wrk", ["--rounds", "5", "--seconds", "5"]),
    ("generator_floor", []),
    ("latency_floor", ["--rounds", "5"]),
    ("open_loop", []),
    ("raw_vs_http", []),
    ("pcap_vs_tshark", []),
    ("server_view_overhead", []),
    ("fix_cgroup_cost", []),
    ("kernel_holds_cost", []),
    ("memory", None),
    ("server_cost_per_generator", ["--rounds", "3", "--seconds", "4"]),
    ("scale", ["--no-build"]),
    ("wan_scale", ["--no-build"]),
]
MEMORY_TARGET_MIB = 128


def summary_lines(output):
    """The lines that state a ratio against a target, the verdicts under them, and the
    floor's own summary."""
    keep = ("target", "->", "the most an arrival-timed", "its floor's CPU", "fixed cost", "ring operations",
            "wake-ups per request", "For information", " at 10k", " at 1k", " at 50k", "/ c/RTT", "/ wrk ",
            "empty programs", "ceiling")
    return [line for line in output.splitlines() if any(word in line for word in keep)]


def memory_case():
    """Issue 32's target: `nodelay bench -t 1024 -c 1024` peaks under 128 MiB of RSS, against a
    trivial peer (bench/canned_peer.c); the largest of 3 runs counts. Returns (exit status,
    output)."""
    nodelay = os.path.join(ROOT, "target", "release", "nodelay")
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as workdir:
        try:
            peer, port = canned.start(canned.build(workdir))
        except RuntimeError as e:
            return 1, str(e)
        try:
            url = f"http://127.0.0.1:{port}/"
            peaks_mib = []
            for _ in range(3):
                rss_file = os.path.join(workdir, "rss")
                command = ["/usr/bin/time", "-o", rss_file, "-f", "%M", nodelay, "bench", "-q", "--no-server-view",
                           "-t", "1024", "-c", "1024", "-n", "20000", url]
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode != 0:
                    return done.returncode, done.stdout + done.stderr
                with open(rss_file) as f:
                    peaks_mib.append(int(f.read().split()[-1]) / 1024)
        finally:
            peer.kill()
            peer.wait()
    worst = max(peaks_mib)
    met = worst < MEMORY_TARGET_MIB
    runs = ", ".join(f"{peak:.1f}" for peak in peaks_mib)
    verdict = "met" if met else "MISSED"
    return (0 if met else 1), (f"peak RSS of bench -t 1024 -c 1024 -n 20000: {worst:.1f} MiB (runs: {runs} MiB; "
                               f"target: under {MEMORY_TARGET_MIB} MiB) -> {verdict}\n")


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
        label = "bench/performance.py's memory case" if extra is None else f"bench/{name}.py"
        print(f"running {label} {' '.join(extra or [])}", file=sys.stderr, flush=True)
        if extra is None:
            code, output = memory_case()
        else:
            done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", f"{name}.py")] + extra,
                                  cwd=ROOT, capture_output=True, text=True)
            code, output = done.returncode, done.stdout + done.stderr
        seconds = time.monotonic() - started
        path = os.path.join(out_dir, f"performance-{name}.txt")
        with open(path, "w") as f:
            f.write(output)
        results.append((label, code, seconds, summary_lines(output), path))
    print(f"\nissues 15 and 32's benchmarks at {commit} ({time.strftime('%Y-%m-%d %H:%M %Z')})")
    for label, code, seconds, lines, path in results:
        verdict = "targets met" if code == 0 else f"MISSED or failed (exit {code}; see {path})"
        print(f"\n{label}: {verdict}, {seconds:.0f} s")
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
