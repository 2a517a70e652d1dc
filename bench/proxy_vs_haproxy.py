#!/usr/bin/env python3
"""nodelay proxy (release build) vs HAProxy in mode tcp, in front of the same trivial server.

The server is bench/canned_peer.c in http mode (epoll, TCP_NODELAY, a 13-byte HTTP/1.1
response per request). Each proxy is pinned to core 0; the load generator and the server to
core 1. Runs alternate direct, nodelay proxy and HAProxy --rounds times. Measures:
  - added p50 latency at 1 connection (nodelay bench -c 1: p50 through the proxy minus p50
    direct),
  - requests/s at 50 connections (wrk -t1 -c50),
  - the CPU time each proxy spent per request at 50 connections (utime + stime from
    /proc/PID/stat around the wrk run): steadier than req/s on a machine others use,
  - peak RSS of each proxy (VmHWM of its process, read before it is stopped),
and prints them side by side with the ratios that issue 11 sets targets for:
  added p50 nodelay <= HAProxy's, req/s nodelay >= 0.9 x HAProxy's.
The ratios are medians of per-round ratios (the two proxies run seconds apart, in alternating
order), which a machine shared with other work disturbs far less than medians of the raw
figures; both are printed.

Usage: bench/proxy_vs_haproxy.py [--rounds 3] [--seconds 5] [--connections 50]
The binary is $CARGO_TARGET_DIR/release/nodelay (target/release without it).
Exit status 0 when every target is met, 1 otherwise.
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
NODELAY = os.path.join(TARGET, "release", "nodelay")
PROXY_CORE, LOAD_CORE = "0", "1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what):
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    proc.kill()
    sys.exit(f"{what} did not listen on {port}")


def start_server(workdir):
    binary = os.path.join(workdir, "canned_peer")
    subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", "-o", binary, os.path.join(ROOT, "bench", "canned_peer.c")], check=True)
    proc = subprocess.Popen(["taskset", "-c", LOAD_CORE, binary, "http"], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, port


class NodelayProxy:
    name = "nodelay"

    def __init__(self, upstream_port, workdir):
        self.proc = subprocess.Popen(
            ["taskset", "-c", PROXY_CORE, NODELAY, "proxy", "--listen", "127.0.0.1:0",
             "--upstream", f"127.0.0.1:{upstream_port}", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        match = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not match:
            sys.exit(f"nodelay proxy printed {line!r}")
        self.port = int(match.group(1))

    def stop(self):
        rss_kb = peak_rss_kb(self.proc.pid)
        self.proc.send_signal(2)  # SIGINT: the report, then exit
        out, err = self.proc.communicate(timeout=30)
        report = json.loads(out)
        # Load generators reset their connections when they stop: only the upstream's count.
        if report["upstream_failures"]["total"]:
            sys.exit(f"nodelay proxy could not reach the server: {report['upstream_failures']}")
        return rss_kb, report["exchanges"]


class HAProxy:
    name = "haproxy"

    def __init__(self, upstream_port, workdir):
        self.port = free_port()
        config = os.path.join(workdir, f"haproxy-{self.port}.cfg")
        with open(config, "w") as f:
            f.write(f"""
global
  nbthread 1
  maxconn 4096
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend relay
  bind 127.0.0.1:{self.port}
  default_backend upstream
backend upstream
  server peer 127.0.0.1:{upstream_port}
""")
        self.proc = subprocess.Popen(["taskset", "-c", PROXY_CORE, "haproxy", "-db", "-f", config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for_port(self.port, self.proc, "haproxy")

    def stop(self):
        rss_kb = peak_rss_kb(self.proc.pid)
        self.proc.terminate()
        self.proc.wait(timeout=30)
        return rss_kb, None


def cpu_seconds(pid):
    """User plus system CPU time the process has used (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1))


def p50_ms(port, seconds):
    """nodelay bench -c 1 on the load core: p50 in ms."""
    out = subprocess.run(
        ["taskset", "-c", LOAD_CORE, NODELAY, "bench", "-t", "1", "-c", "1", "-d", f"{seconds}s", "-q", "--json",
         f"http://127.0.0.1:{port}/"], capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    if sum(report["errors"].values()):
        sys.exit(f"bench saw errors: {report['errors']}")
    return report["latency_ms"]["p50"]


def requests_per_second(port, connections, seconds, pid=None):
    """wrk -t1 on the load core: requests/s, and the CPU time process `pid` spent per request."""
    cpu_before = cpu_seconds(pid) if pid else 0.0
    out = subprocess.run(["taskset", "-c", LOAD_CORE, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True, timeout=120).stdout
    if re.search(r"Non-2xx or 3xx responses|Socket errors", out):
        sys.exit(f"wrk saw errors:\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    cpu_us = (cpu_seconds(pid) - cpu_before) * 1e6 / requests if pid else 0.0
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), cpu_us


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 1:
        parser.error("--rounds, --seconds and --connections must be at least 1")

    subprocess.run([os.path.join(ROOT, "scripts", "setup.sh"), "--bench"], check=True)
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    workdir = tempfile.mkdtemp(prefix="nodelay-proxy-bench-")
    server, upstream_port = start_server(workdir)
    results = {name: {"p50": [], "rps": [], "rss": [], "cpu": []} for name in ("direct", "nodelay", "haproxy")}
    try:
        for round_number in range(args.rounds):
            results["direct"]["p50"].append(p50_ms(upstream_port, args.seconds))
            results["direct"]["rps"].append(requests_per_second(upstream_port, args.connections, args.seconds)[0])
            # Alternate which proxy goes first: neither always meets the same moment of the
            # machine's other load.
            kinds = (NodelayProxy, HAProxy) if round_number % 2 == 0 else (HAProxy, NodelayProxy)
            for kind in kinds:
                proxy = kind(upstream_port, workdir)
                try:
                    results[kind.name]["p50"].append(p50_ms(proxy.port, args.seconds))
                    rps, cpu_us = requests_per_second(proxy.port, args.connections, args.seconds, proxy.proc.pid)
                    results[kind.name]["rps"].append(rps)
                    results[kind.name]["cpu"].append(cpu_us)
                finally:
                    rss_kb, _ = proxy.stop()
                results[kind.name]["rss"].append(rss_kb)
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    med = lambda name, key: statistics.median(results[name][key])
    direct_p50 = med("direct", "p50")
    added = {name: med(name, "p50") - direct_p50 for name in ("nodelay", "haproxy")}
    print(f"\ncanned HTTP peer (13-byte body), {args.seconds} s x {args.rounds} rounds (medians); each proxy pinned "
          f"to core {PROXY_CORE}, generator and server to core {LOAD_CORE}")
    print(f"{'':<10}{'p50 c=1':>12}{'added p50':>12}{'req/s c=' + str(args.connections):>14}"
          f"{'CPU/req':>12}{'peak RSS':>12}")
    print(f"{'direct':<10}{direct_p50 * 1000:>9.1f} us{'-':>12}{med('direct', 'rps'):>14.0f}{'-':>12}{'-':>12}")
    for name in ("nodelay", "haproxy"):
        print(f"{name:<10}{med(name, 'p50') * 1000:>9.1f} us{added[name] * 1000:>9.1f} us"
              f"{med(name, 'rps'):>14.0f}{med(name, 'cpu'):>9.1f} us{med(name, 'rss') / 1024:>9.1f} MB")
    print("\nper round, req/s: " + "; ".join(
        f"{name} " + ", ".join(f"{v:.0f}" for v in results[name]["rps"]) for name in results))
    print("per round, p50 c=1 (us): " + "; ".join(
        f"{name} " + ", ".join(f"{v * 1000:.1f}" for v in results[name]["p50"]) for name in results))
    # Ratios within a round compare runs seconds apart, under the same other load: their
    # median is what the targets are checked on.
    direct_p50s = results["direct"]["p50"]
    added_ratio = statistics.median(
        (n - d) / (h - d) for n, h, d in zip(results["nodelay"]["p50"], results["haproxy"]["p50"], direct_p50s))
    rps_ratio = statistics.median(n / h for n, h in zip(results["nodelay"]["rps"], results["haproxy"]["rps"]))
    print("per round, req/s nodelay/haproxy: " + ", ".join(
        f"{n / h:.2f}" for n, h in zip(results["nodelay"]["rps"], results["haproxy"]["rps"])))
    ratios = [
        ("added p50 nodelay/haproxy", added_ratio, lambda r: r <= 1.0, "<= 1.00"),
        ("req/s nodelay/haproxy", rps_ratio, lambda r: r >= 0.9, ">= 0.90"),
        ("proxy CPU/req nodelay/haproxy", med("nodelay", "cpu") / med("haproxy", "cpu"), lambda r: True,
         "(no target)"),
        ("peak RSS nodelay/haproxy", med("nodelay", "rss") / med("haproxy", "rss"), lambda r: True, "(no target)"),
    ]
    print()
    failed = False
    for label, ratio, ok, target in ratios:
        failed |= not ok(ratio)
        print(f"{label:<28}{ratio:>6.2f}  (target {target}) {'ok' if ok(ratio) else 'MISSED'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
