#!/usr/bin/env python3
"""How close is nodelay to the least a load generator can spend per request on this machine?

Issue 15 asks for nodelay's requests per CPU-second at 1.5x wrk's. Most of a request's CPU
is the kernel's TCP send and receive, which every generator pays; this bench measures the
floor beside nodelay and wrk in one run: bench/floor_client.rs, a client that does nothing
but send the same GET on each connection when the last response's bytes are in (no parsing,
no histograms, no server view), in four modes:
  floor epoll           a wake-up per ready batch, as wrk and nodelay's default
  floor io_uring        batched waits (N/2 ready sockets or 500 us), as nodelay --io-uring
  floor io_uring+stamps the same, reading with recvmsg and SO_TIMESTAMPNS, as --io-uring must
                        to time a held response by its arrival: the floor for nodelay --io-uring
  floor multishot+stamps the reads (multishot recvmsg into provided buffers, stamped) and the
                        writes as io_uring operations: no system call of its own per request

nginx serves a 13-byte file with keep-alive on core 0; each generator runs on core 1 under
GNU time (user + system CPU of the whole process). Rounds alternate the tools; medians.
Prints req/s, req/CPU-s, each against wrk, and nodelay's share of its floor.

Usage: bench/generator_floor.py [--rounds 5] [--seconds 5] [--connections 50]
Exit status 0 (it judges nothing: the ratios are for the planners of issue 15).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_wrk import ROOT, nodelay_with, run_wrk, setup_and_build, start_nginx, timed  # noqa: E402

FLOOR = os.path.join(ROOT, "target", "release", "examples", "floor_client")


def floor_with(mode):
    def run(url, connections, seconds):
        address, path = url.removeprefix("http://").split("/", 1)
        out, cpu, rss = timed([FLOOR, mode, address, "/" + path, str(connections), str(seconds)])
        report = json.loads(out)
        return dict(requests=report["requests"], rps=report["requests"] / report["seconds"], cpu=cpu, rss=rss)
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1:
        parser.error("--rounds, --seconds and --connections must be at least 1")
    setup_and_build()
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay-engine", "--example",
                    "floor_client"], cwd=ROOT, check=True)
    tools = {
        "wrk": run_wrk,
        "nodelay": nodelay_with(),
        "nodelay --io-uring": nodelay_with("--io-uring"),
        "floor epoll": floor_with("epoll"),
        "floor io_uring": floor_with("uring"),
        "floor io_uring+stamps": floor_with("uring-stamped"),
        "floor multishot+stamps": floor_with("uring-multishot"),
    }
    runs = {name: [] for name in tools}
    workdir = tempfile.mkdtemp(prefix="nodelay-floor-")
    nginx, url = start_nginx(workdir)
    try:
        for round_number in range(args.rounds):
            order = list(tools) if round_number % 2 == 0 else list(reversed(tools))
            for name in order:
                runs[name].append(tools[name](url, args.connections, args.seconds))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    rps = {n: statistics.median(r["rps"] for r in rs) for n, rs in runs.items()}
    per_cpu = {n: statistics.median(r["requests"] / r["cpu"] for r in rs) for n, rs in runs.items()}
    print(f"\nnginx 13-byte file, keep-alive, {args.connections} connections, {args.seconds} s x "
          f"{args.rounds} rounds (medians); nginx on core 0, generator on core 1")
    print(f"{'generator':<24}{'req/s':>9}{'req/CPU-s':>11}{'us/req':>8}{'x wrk':>7}")
    for name in tools:
        print(f"{name:<24}{rps[name]:>9.0f}{per_cpu[name]:>11.0f}{1e6 / per_cpu[name]:>8.2f}"
              f"{per_cpu[name] / per_cpu['wrk']:>7.2f}")
    print()
    for name, floor in (("nodelay --io-uring", "floor io_uring+stamps"), ("nodelay", "floor epoll")):
        print(f"{name} spends {per_cpu[floor] / per_cpu[name]:.2f}x its floor's CPU per request ({floor})")
    print(f"reads and writes as ring operations (multishot recvmsg, provided buffers): "
          f"{per_cpu['floor multishot+stamps'] / per_cpu['floor io_uring+stamps']:.2f}x the req/CPU-s of "
          f"readiness by ring with recvmsg and send (floor io_uring+stamps)")
    best_stamped = max(per_cpu["floor io_uring+stamps"], per_cpu["floor multishot+stamps"])
    print(f"the most an arrival-timed generator gets here: {best_stamped / per_cpu['wrk']:.2f}x "
          f"wrk's req/CPU-s (issue 15's target for nodelay: 1.50x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
