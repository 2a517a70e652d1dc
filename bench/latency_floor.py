#!/usr/bin/env python3
"""nodelay's 1-connection latency vs the machine's floor, against nginx serving a 13-byte file
with keep-alive.

The floor is bench/pingpong.c: one blocking socket with TCP_NODELAY sending nodelay's exact
request bytes (captured from nodelay at startup) and reading each whole response before the
next, timing every round trip with CLOCK_MONOTONIC. nginx is pinned to core 0 and every client
to core 1. Runs alternate pingpong, nodelay (-c 1 -t 1 -n REQUESTS), wrk (-t1 -c1 --latency),
nodelay --io-uring and ab (-k -c 1 -n REQUESTS) --rounds times. nodelay --io-uring times a
response by its arrival stamp, so its p50 leaves out the client's own wake-up and can fall
below the floor; it is shown for context. Prints the medians of p50 and p99 in microseconds
and the target: nodelay p50 / floor p50 <= 1.05 (within 5 %); wrk/floor and ab/floor are for
context. ab reports percentiles in whole ms only, so its figure is its mean time per request.

Usage: bench/latency_floor.py [--rounds 5] [--requests 20000] [--wrk-seconds 3] [--no-ab]
Exit status 0 when the target is met, 1 otherwise.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
sys.path.insert(0, os.path.join(ROOT, "bench"))
# nginx on core 0 (13-byte index.html, keep-alive); GNU time on core 1: stdout, CPU s, peak RSS.
from vs_wrk import setup_and_build, start_nginx, timed, to_ms  # noqa: E402

TARGET = 1.05


def capture_request(port):
    """The bytes nodelay sends for http://127.0.0.1:PORT/index.html, captured by a one-shot
    listener on a scratch port with that port in the Host header swapped for PORT."""
    listener = socket.create_server(("127.0.0.1", 0))
    scratch = listener.getsockname()[1]
    listener.settimeout(10)
    got = {}

    def serve():
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                got["request"] = data
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!")
        except OSError as e:
            got["error"] = e

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    out = subprocess.run([NODELAY, "bench", "-n", "1", "-c", "1", "-t", "1", "-q", "--json",
                          f"http://127.0.0.1:{scratch}/index.html"], capture_output=True, text=True, timeout=30)
    thread.join(10)
    listener.close()
    request = got.get("request", b"")
    if out.returncode != 0 or not request.endswith(b"\r\n\r\n"):
        sys.exit(f"could not capture nodelay's request ({got.get('error')}): {request!r}\n{out.stderr}")
    old, new = f"\r\nHost: 127.0.0.1:{scratch}\r\n".encode(), f"\r\nHost: 127.0.0.1:{port}\r\n".encode()
    if request.count(old) != 1:
        sys.exit(f"nodelay's request has no Host header for the scratch port: {request!r}")
    return request.replace(old, new)


def run_pingpong(binary, request_file, port, requests):
    out, cpu, _ = timed([binary, "-n", str(requests), "-w", "500", "-r", request_file, "127.0.0.1", str(port)])
    fields = dict(kv.split("=") for kv in out.split())
    return dict(p50=float(fields["p50_us"]), p99=float(fields["p99_us"]), cpu_per_req=cpu / requests * 1e6)


def run_nodelay(url, requests, *flags):
    out, cpu, _ = timed([NODELAY, "bench", *flags, "-c", "1", "-t", "1", "-n", str(requests), "-q", "--json", url])
    report = json.loads(out)
    if sum(report["errors"].values()) or report["non_success_responses"]:
        sys.exit(f"nodelay saw errors: {report['errors']}, non-success {report['non_success_responses']}")
    latency = report["latency_ms"]
    return dict(p50=latency["p50"] * 1000, p99=latency["p99"] * 1000,
                cpu_per_req=cpu / report["requests_completed"] * 1e6)


def run_wrk(url, seconds):
    out, cpu, _ = timed(["wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", url])
    if re.search(r"Non-2xx or 3xx responses|Socket errors", out):
        sys.exit(f"wrk saw errors:\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = re.search(r"\n\s+50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"\n\s+99%\s+([\d.]+)(us|ms|s)", out)
    return dict(p50=to_ms(*p50.groups()) * 1000, p99=to_ms(*p99.groups()) * 1000, cpu_per_req=cpu / requests * 1e6)


def run_ab(url, requests):
    out, cpu, _ = timed(["ab", "-k", "-q", "-c", "1", "-n", str(requests), url])
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    if failed or non2xx:
        sys.exit(f"ab saw errors:\n{out}")
    mean_ms = float(re.search(r"Time per request:\s+([\d.]+) \[ms\] \(mean\)", out).group(1))
    return dict(p50=mean_ms * 1000, p99=None, cpu_per_req=cpu / requests * 1e6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20000, help="per pingpong, nodelay and ab run")
    parser.add_argument("--wrk-seconds", type=int, default=3)
    parser.add_argument("--no-ab", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1 or args.requests < 1 or args.wrk_seconds < 1:
        parser.error("--rounds, --requests and --wrk-seconds must be at least 1")

    setup_and_build()
    workdir = tempfile.mkdtemp(prefix="nodelay-floor-")
    pingpong = os.path.join(workdir, "pingpong")
    subprocess.run(["cc", "-O2", "-o", pingpong, os.path.join(ROOT, "bench", "pingpong.c")], check=True)
    nginx, url = start_nginx(workdir)
    port = int(re.search(r":(\d+)/", url).group(1))
    request = capture_request(port)
    request_file = os.path.join(workdir, "request")
    with open(request_file, "wb") as f:
        f.write(request)
    print(f"request ({len(request)} bytes): {request!r}", file=sys.stderr)

    tools = {
        "C floor": lambda: run_pingpong(pingpong, request_file, port, args.requests),
        "nodelay": lambda: run_nodelay(url, args.requests),
        "wrk": lambda: run_wrk(url, args.wrk_seconds),
        "nodelay --io-uring": lambda: run_nodelay(url, args.requests, "--io-uring"),
    }
    if not args.no_ab and shutil.which("ab"):
        tools["ab"] = lambda: run_ab(url, args.requests)
    results = {name: [] for name in tools}
    try:
        for round_number in range(args.rounds):
            for name, run in tools.items():
                results[name].append(run())
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    med = {name: {key: statistics.median(r[key] for r in runs) if runs[0][key] is not None else None
                  for key in ("p50", "p99", "cpu_per_req")} for name, runs in results.items()}
    floor = med["C floor"]["p50"]
    print(f"\nnginx 13-byte file, keep-alive, 1 connection, {args.requests} requests "
          f"(wrk {args.wrk_seconds} s) x {args.rounds} rounds (medians); nginx on core 0, client on core 1")
    print(f"{'client':<20}{'p50 us':>10}{'p99 us':>10}{'/floor p50':>12}{'CPU us/req':>12}")
    for name, m in med.items():
        p50 = f"{m['p50']:.1f}" + ("*" if name == "ab" else "")
        p99 = f"{m['p99']:.1f}" if m["p99"] is not None else "-"
        print(f"{name:<20}{p50:>10}{p99:>10}{m['p50'] / floor:>12.3f}{m['cpu_per_req']:>12.1f}")
    print("CPU us/req: the client's user+system CPU over the whole run (startup included) / requests")
    if "ab" in med:
        print("* ab: mean time per request (its percentiles are whole ms only)")

    ratio = med["nodelay"]["p50"] / floor
    ok = ratio <= TARGET
    print(f"\n{'p50 nodelay/floor':<20}{ratio:>6.3f}  (target <= {TARGET:.2f}, within 5 %) {'ok' if ok else 'MISSED'}")
    for name in ("wrk", "ab"):
        if name in med:
            print(f"{f'p50 {name}/floor':<20}{med[name]['p50'] / floor:>6.3f}  (context)")
    # Not a round trip in user space: its time ends at the response's arrival in the kernel.
    print(f"{'p50 nodelay --io-uring/floor':<29}{med['nodelay --io-uring']['p50'] / floor:>6.3f}  "
          "(context: timed by arrival stamps, without the client's own wake-up)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
