#!/usr/bin/env python3
"""nodelay's raw-TCP path vs its HTTP path, on the same trivial peer (bench/canned_peer.c,
one epoll thread answering canned bytes) pinned to core 0, nodelay pinned to core 1.

Issue 48's target: requests per CPU-second on the raw path at least 0.95 of the HTTP path's (the
raw path frames less). One run's requests per CPU-second moves by up to 20 % from run to run
on a 2-core VM, for either path: the rounds alternate (http raw, raw http, ...) and the ratio
is the Hodges-Lehmann estimate (the median of every raw run over every http run), with each
round's own ratio printed beside it.
Usage: bench/raw_vs_http.py [--rounds 9] [--seconds 3] [--connections 50]
Exit status 0 when the target is met."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from vs_wrk import timed  # noqa: E402  (GNU time on core 1: stdout, CPU seconds, peak RSS)


def start_peer(binary, mode):
    proc = subprocess.Popen(["taskset", "-c", "0", binary, mode], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        sys.exit(f"canned_peer {mode} printed {line!r}")
    return proc, int(line.split()[1])


def run(args, seconds, connections):
    out, cpu, rss = timed([NODELAY, "bench", "-t", "1", "-c", str(connections), "-d", f"{seconds}s", "-q", "--json"] + args)
    report = json.loads(out)
    if sum(report["errors"].values()):
        sys.exit(f"errors: {report['errors']}")
    return dict(rps=report["requests_per_second"], per_cpu=report["requests_completed"] / cpu, rss=rss)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1:
        parser.error("--rounds, --seconds and --connections must be at least 1")
    subprocess.run([os.path.join(ROOT, "scripts", "setup.sh"), "--bench"], check=True)
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    workdir = tempfile.mkdtemp(prefix="nodelay-raw-")
    peer_binary = os.path.join(workdir, "canned_peer")
    subprocess.run(["cc", "-O2", "-o", peer_binary, os.path.join(ROOT, "bench", "canned_peer.c")], check=True)
    http_peer, http_port = start_peer(peer_binary, "http")
    line_peer, line_port = start_peer(peer_binary, "line")
    results = {"http": [], "raw": []}
    paths = {"http": [f"http://127.0.0.1:{http_port}/"],
             "raw": ["--send", r"PING\n", "--frame", "line", f"tcp://127.0.0.1:{line_port}"]}
    try:
        for round_number in range(args.rounds):
            # The order alternates, so that drift favours neither path.
            order = ("http", "raw") if round_number % 2 == 0 else ("raw", "http")
            for path in order:
                results[path].append(run(paths[path], args.seconds, args.connections))
            ratio = results["raw"][-1]["per_cpu"] / results["http"][-1]["per_cpu"]
            print(f"round {round_number + 1}/{args.rounds}: raw/http {ratio:.2f} req/CPU-s", file=sys.stderr)
    finally:
        for proc in (http_peer, line_peer):
            proc.kill()
    print(f"\ncanned peer (1 epoll thread) on core 0, nodelay -t 1 -c {args.connections} on core 1, "
          f"{args.seconds} s x {args.rounds} rounds (medians)")
    print(f"{'path':<8}{'req/s':>12}{'req/CPU-s':>12}{'peak RSS':>12}")
    med = {}
    for path, runs in results.items():
        med[path] = {k: statistics.median(r[k] for r in runs) for k in ("rps", "per_cpu", "rss")}
        m = med[path]
        print(f"{path:<8}{m['rps']:>12.0f}{m['per_cpu']:>12.0f}{m['rss'] / 1024:>9.1f} MB")
    pairs = sorted(r["per_cpu"] / h["per_cpu"] for r in results["raw"] for h in results["http"])
    ratio = statistics.median(pairs)
    rounds = [r["per_cpu"] / h["per_cpu"] for r, h in zip(results["raw"], results["http"])]
    print(f"each round's raw/http: {' '.join(f'{x:.2f}' for x in rounds)}")
    ok = ratio >= 0.95
    print(f"\nreq/CPU-s raw/http {ratio:.2f} (Hodges-Lehmann over {args.rounds}+{args.rounds} runs)  "
          f"(target >= 0.95) {'ok' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
