#!/usr/bin/env python3
"""A high-latency path at scale (issue 32, item 5): nodelay and wrk side by side over
nodelay-path (crates/netpath) at 40 ms RTT with 1000 connections.

nginx (13-byte file, keep-alive) runs in the link's server namespace, each generator (one
thread) in its client namespace, the tools alternating for --rounds. Per tool: requests/s
against c / RTT (every connection busy, one request per round trip: 25,000/s at 1000 and
40 ms); and connect times, measured the same way for both tools by tcpdump in the client
namespace: from each connection's first SYN to its SYN-ACK (what connect() waits for), as
p50 / p90 / p99 / max, and the time to open them all (first SYN to last SYN-ACK). nodelay's
own connect_ms percentiles are shown beside them, the capture being the ground truth.
nodelay-path moves every packet through a user-space process: what the link itself carries
is shown by the best of the tools, and the target's ratio is read against that too.

Target: req/s nodelay >= 0.95 x c / RTT (and, as the link allows, >= 0.95 x wrk's).
Needs root (namespaces), nginx, wrk, tcpdump. Usage:
  bench/wan_scale.py [--rounds 3] [--seconds 10] [--connections 1000] [--rtt 40ms] [--no-build]
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
WAN = os.path.join(ROOT, "target", "release", "nodelay-path")
SERVER_IP, CLIENT_IP, PORT = "10.211.0.2", "10.211.0.1", 8080


def link_up(rtt, name):
    link = subprocess.Popen([WAN, "up", "--rtt", rtt, "--name", name], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = link.stdout.readline()
    if not line.startswith("READY"):
        link.kill()
        sys.exit(f"nodelay-path did not come up: {line!r}")
    return link


def in_ns(ns, cmd):
    return ["ip", "netns", "exec", ns] + cmd


def start_nginx(ns, workdir, connections):
    www = os.path.join(workdir, "www")
    os.makedirs(www)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("Hello, world!")
    os.chmod(workdir, 0o755)
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
worker_rlimit_nofile {connections * 2 + 1024};
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{ worker_connections {connections * 2 + 512}; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path {workdir}/body; proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fastcgi; uwsgi_temp_path {workdir}/uwsgi; scgi_temp_path {workdir}/scgi;
  server {{ listen {SERVER_IP}:{PORT} backlog=65535; root {www}; location / {{ }} }}
}}
""")
    subprocess.run(in_ns(ns, ["sysctl", "-q", "-w", "net.core.somaxconn=65535",
                              "net.ipv4.tcp_max_syn_backlog=65535"]), check=True)
    nginx = subprocess.Popen(in_ns(ns, ["nginx", "-c", conf, "-p", workdir]))
    deadline = time.time() + 10
    while time.time() < deadline:
        probe = subprocess.run(in_ns(ns, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                          f"http://{SERVER_IP}:{PORT}/"]), capture_output=True, text=True)
        if probe.stdout == "200":
            return nginx
        time.sleep(0.1)
    nginx.terminate()
    sys.exit("nginx did not start in the server namespace")


class Capture:
    """tcpdump of SYNs and SYN-ACKs on the client namespace's link device."""

    def __init__(self, ns, device, path):
        self.path = path
        self.proc = subprocess.Popen(in_ns(ns, ["tcpdump", "-i", device, "-n", "-tt", "-l", "-w", path, "-U",
                                                "tcp[tcpflags] & tcp-syn != 0"]),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on ..." once its filter is in place.
        self.proc.stderr.readline()

    def connect_times_ms(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=10)
        text = subprocess.run(["tcpdump", "-n", "-tt", "-r", self.path], capture_output=True, text=True).stdout
        first_syn, syn_ack = {}, {}
        for line in text.splitlines():
            m = re.match(r"([\d.]+) IP ([\d.]+)\.(\d+) > ([\d.]+)\.(\d+): Flags \[(S\.?)\]", line)
            if not m:
                continue
            when, src, sport, dst, dport, flags = m.groups()
            if flags == "S" and src == CLIENT_IP:
                first_syn.setdefault(sport, float(when))
            elif flags == "S." and dst == CLIENT_IP:
                syn_ack.setdefault(dport, float(when))
        times = sorted((syn_ack[p] - t) * 1000 for p, t in first_syn.items() if p in syn_ack)
        ramp = (max(syn_ack.values()) - min(first_syn.values())) if syn_ack and first_syn else None
        return times, ramp, len(first_syn) - len(times)


def pct(values, q):
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run_tool(name, ns, device, workdir, connections, seconds):
    url = f"http://{SERVER_IP}:{PORT}/index.html"
    capture = Capture(ns, device, os.path.join(workdir, f"{name}.pcap"))
    own_connect, mean_latency_ms = None, None
    if name == "nodelay":
        out = subprocess.run(in_ns(ns, [NODELAY, "bench", "-t", "1", "-c", str(connections), "-d", f"{seconds}s",
                                        "-q", "--json", "--no-server-view", "--connect-timeout", "10s", url]),
                             capture_output=True, text=True, timeout=seconds + 60)
        report = json.loads(out.stdout)
        rps = report["requests_per_second"]
        own_connect = report["connect_ms"]
        mean_latency_ms = report["latency_ms"]["mean"]
        errors = sum(report["errors"].values())
    else:
        out = subprocess.run(in_ns(ns, ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url]),
                             capture_output=True, text=True, timeout=seconds + 60)
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out.stdout).group(1))
        errors = out.stdout.count("Socket errors")
    times, ramp, unanswered = capture.connect_times_ms()
    return dict(rps=rps, times=times, ramp=ramp, unanswered=unanswered, own=own_connect, errors=errors,
                mean_latency_ms=mean_latency_ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--rtt", default="40ms")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("wan_scale.py needs root (network namespaces)")
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    rtt_s = float(args.rtt.rstrip("ms")) / 1000 if args.rtt.endswith("ms") else float(args.rtt)
    name = f"ndws{os.getpid() % 100000}"
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    link = link_up(args.rtt, name)
    workdir = tempfile.mkdtemp(prefix="nodelay-wan-")
    nginx = None
    runs = {"nodelay": [], "wrk": []}
    try:
        nginx = start_nginx(f"{name}-s", workdir, args.connections)
        for round_number in range(args.rounds):
            for tool in (list(runs) if round_number % 2 == 0 else list(reversed(list(runs)))):
                runs[tool].append(run_tool(tool, f"{name}-c", f"{name}c0", workdir, args.connections, args.seconds))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        link.terminate()
        link.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    ideal = args.connections / rtt_s
    print(f"\nnginx over nodelay-path, RTT {args.rtt}, {args.connections} connections, 1 generator thread, "
          f"{args.seconds} s x {args.rounds} rounds (medians)")
    print(f"{'tool':<9}{'req/s':>9}{'/ c/RTT':>9}   connect ms (capture) p50 / p90 / p99 / max   open all   "
          "own connect_ms p50 / p99")
    med = {}
    for tool, tool_runs in runs.items():
        rps = statistics.median(r["rps"] for r in tool_runs)
        med[tool] = rps
        times = sorted(t for r in tool_runs for t in r["times"])
        ramp = statistics.median(r["ramp"] for r in tool_runs if r["ramp"] is not None)
        own = [r["own"] for r in tool_runs if r["own"]]
        own_text = (f"{statistics.median(o['p50'] for o in own):.1f} / {statistics.median(o['p99'] for o in own):.1f}"
                    if own else "n/a (wrk reports none)")
        print(f"{tool:<9}{rps:>9.0f}{rps / ideal:>9.2f}   {pct(times, .5):>6.1f} / {pct(times, .9):.1f} / "
              f"{pct(times, .99):.1f} / {times[-1] if times else float('nan'):.1f}   {ramp * 1000:>7.0f} ms   {own_text}")
        unanswered = sum(r["unanswered"] for r in tool_runs)
        if unanswered:
            print(f"  {tool}: {unanswered} SYNs never answered in the capture")
    # Little's law: connections busy = throughput x time per request.
    busy = statistics.median(r["rps"] * r["mean_latency_ms"] / 1000 for r in runs["nodelay"])
    mean_ms = statistics.median(r["mean_latency_ms"] for r in runs["nodelay"])
    print(f"\nnodelay: mean response {mean_ms:.1f} ms over a {rtt_s * 1000:.0f} ms path; req/s x mean = {busy:.0f} of "
          f"{args.connections} connections busy (Little's law)")
    ratio = med["nodelay"] / ideal
    print(f"req/s nodelay / (c/RTT = {ideal:.0f})      {ratio:6.2f}  (target >= 0.95) {'ok' if ratio >= 0.95 else 'missed'}")
    print(f"req/s nodelay / wrk                   {med['nodelay'] / med['wrk']:6.2f}  (the link's own limit, read "
          "through the better tool)")
    sys.exit(0 if ratio >= 0.95 else 1)


if __name__ == "__main__":
    main()
