#!/usr/bin/env python3
"""What `nodelay watch` costs the host it watches (issue 33), side by side in one run.

1. Throughput: wrk (1 thread, 50 keep-alive connections, core 1) against nginx (13-byte
   file, 1 worker, core 0) at full speed on loopback, rounds alternating without watch, with
   `nodelay watch -i lo --port P` on nginx's core, and with it on wrk's core (both cores are
   busy: what watch takes shows wherever it runs), and with tcpdump capturing the same packets
   the same way (the floor: the kernel's tap any capture pays). Reported: wrk's req/s each way
   and the drop (target <= 3 %, or the floor and why); watch's CPU (user + system from /proc/PID/stat over wrk's window) as
   a share of one core, the packets per second it captured, and its CPU scaled to 100k
   packets/s (target <= 5 % of a core); the packets the kernel dropped (never silent).
2. Churn: watch's peak RSS (VmHWM) while wrk makes 100k short flows (`Connection: close`, a
   connection per request) and while 10k keep-alive connections stay open and busy (target
   <= 64 MB each), with the flows watch saw and evicted.

Usage: bench/watch_cost.py [--quick] [--rounds 5] [--seconds 10] [--no-build]
--quick: 2 rounds of 4 s, the same churn counts. Run as root (packet capture).
"""
import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
TICKS = os.sysconf("SC_CLK_TCK")
SHORT_FLOWS = 100_000
LONG_FLOWS = 10_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(workdir, connections):
    """nginx on core 0 serving a 13-byte file, with room for `connections` connections."""
    port = free_port()
    www = os.path.join(workdir, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("Hello, world!")
    os.chmod(workdir, 0o755)
    temp = lambda name: os.path.join(workdir, name)
    conf = temp(f"nginx-{port}.conf")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes 1;
worker_rlimit_nofile {connections + 1024};
daemon off;
pid {temp(f'nginx-{port}.pid')};
error_log {temp('error.log')};
events {{ worker_connections {connections + 512}; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path {temp('body')};
  proxy_temp_path {temp('proxy')};
  fastcgi_temp_path {temp('fastcgi')};
  uwsgi_temp_path {temp('uwsgi')};
  scgi_temp_path {temp('scgi')};
  server {{ listen 127.0.0.1:{port} backlog=65535; root {www}; location / {{ }} }}
}}
""")
    proc = subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", conf, "-p", workdir])
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("nginx did not start; see " + temp("error.log"))


class Watch:
    """`nodelay watch --json-lines` on `core` from `source` (capture on lo, or ebpf), its events
    read on a thread."""

    def __init__(self, port, core="0", source="capture"):
        where = ["-i", "lo"] if source == "capture" else []
        self.proc = subprocess.Popen(
            ["taskset", "-c", core, NODELAY, "watch", "--source", source, *where, "--port", str(port),
             "--json-lines", "--duration", "600"],
            stdout=subprocess.PIPE, text=True)
        self.events = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            sys.exit("nodelay watch did not start")
        mode = self.events[0]
        if mode.get("mode") != source:
            sys.exit(f"watch runs in the {mode.get('mode')} mode: run this as root ({mode.get('why')})")
        wait_for_summary(self, 0)

    def _read(self):
        for line in self.proc.stdout:
            self.events.append(json.loads(line))
            self.ready.set()

    def cpu_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def peak_rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def summary(self):
        """The latest per-second summary."""
        return next(e for e in reversed(self.events) if e["event"] in ("summary", "final"))

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)
        self.thread.join(5)
        return next(e for e in reversed(self.events) if e["event"] == "final")


def wait_for_summary(watch, after_s):
    """Blocks until watch told a summary from after `after_s` (its packet counts settle)."""
    deadline = time.time() + 5
    while time.time() < deadline:
        if any(e["event"] == "summary" and e["elapsed_s"] > after_s for e in watch.events):
            return
        time.sleep(0.05)


def wrk(url, connections, seconds, *extra):
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", *extra, url],
        capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"wrk failed:\n{out.stdout}\n{out.stderr}")
    text = out.stdout
    requests = int(text.split(" requests in ")[0].split()[-1])
    rps = float(text.split("Requests/sec:")[1].split()[0])
    errors = text.split("Socket errors:")[1].splitlines()[0].strip() if "Socket errors:" in text else ""
    return requests, rps, errors


def tcpdump(port, core):
    """tcpdump on `core` capturing the same packets as watch (lo, this port, received copies
    only, 96 bytes of each), writing them nowhere: the kernel tap any capture pays, and the
    least a capturing process spends, for the floor row."""
    proc = subprocess.Popen(
        ["taskset", "-c", core, "tcpdump", "-i", "lo", "-Q", "in", "-s", "96", "-w", "/dev/null",
         "-n", f"tcp port {port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # tcpdump says "listening on lo" once its socket and filter are in place.
    line = proc.stderr.readline()
    if "listening on" not in line:
        sys.exit(f"tcpdump did not start: {line}")
    return proc


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def throughput(url, port, rounds, seconds):
    """Per placement (None: nothing capturing; ("watch", core), ("tcpdump", core)): req/s, the
    capturer's CPU share and packets/s per round, and the packets the kernel dropped."""
    runs = {None: [], ("watch", "0"): [], ("watch", "1"): [], ("tcpdump", "0"): [], ("tcpdump", "1"): []}
    drops = 0
    for _ in range(rounds):
        for placement in runs:
            if placement is None:
                runs[placement].append((wrk(url, 50, seconds)[1], 0.0, 0.0))
                continue
            tool, core = placement
            if tool == "tcpdump":
                proc = tcpdump(port, core)
                before_cpu, t0 = cpu_of(proc.pid), time.time()
                _, rps, _ = wrk(url, 50, seconds)
                elapsed = time.time() - t0
                cpu = cpu_of(proc.pid) - before_cpu
                proc.send_signal(signal.SIGINT)
                proc.wait(30)
                runs[placement].append((rps, cpu / elapsed, 0.0))
                continue
            watch = Watch(port, core)
            start_s = watch.summary()["elapsed_s"]
            before_cpu, before = watch.cpu_s(), watch.summary()
            t0 = time.time()
            _, rps, _ = wrk(url, 50, seconds)
            elapsed = time.time() - t0
            cpu = watch.cpu_s() - before_cpu
            wait_for_summary(watch, start_s + elapsed + 1)
            after = watch.summary()
            final = watch.stop()
            pps = (after["packets"]["captured"] - before["packets"]["captured"]) / elapsed
            runs[placement].append((rps, cpu / elapsed, pps))
            drops += final["packets"]["dropped"]
    return runs, drops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds = 2, 4
    if os.geteuid() != 0:
        sys.exit("run as root: watch needs CAP_NET_RAW to capture")
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, LONG_FLOWS + 4096)), hard))
    workdir = tempfile.mkdtemp(prefix="watch-cost-")
    nginx, port = start_nginx(workdir, 4096)
    url = f"http://127.0.0.1:{port}/index.html"
    try:
        runs, drops = throughput(url, port, args.rounds, args.seconds)
    finally:
        nginx.terminate()
        nginx.wait()
    median = lambda rows, i: statistics.median(row[i] for row in rows)
    base = median(runs[None], 0)
    print(f"\nnginx (core 0) served wrk -t1 -c50 (core 1) for {args.seconds} s x {args.rounds} rounds; medians")
    print(f"  wrk req/s without watch              {base:10.0f}")
    for core, where in (("0", "on nginx's core"), ("1", "on wrk's core")):
        rows = runs[("watch", core)]
        rps, share, rate = median(rows, 0), median(rows, 1), median(rows, 2)
        floor = runs[("tcpdump", core)]
        floor_rps, floor_share = median(floor, 0), median(floor, 1)
        print(f"  wrk req/s with watch {where:16} {rps:10.0f}   drop {100 * (base - rps) / base:5.2f} %   "
              f"(target <= 3 %)")
        print(f"    floor: tcpdump {where:21} {floor_rps:10.0f}   drop {100 * (base - floor_rps) / base:5.2f} %   "
              f"(the same kernel tap and filter, packets written nowhere; tcpdump CPU {100 * floor_share:4.2f} %)")
        print(f"    watch CPU {100 * share:5.2f} % of a core at {rate:,.0f} packets/s: "
              f"{100 * share * 100_000 / max(rate, 1):5.2f} % at 100k packets/s   (target <= 5 %)")
    print(f"  packets dropped by the kernel        {drops:10d}")

    nginx, port = start_nginx(workdir, LONG_FLOWS + 1000)
    url = f"http://127.0.0.1:{port}/index.html"
    try:
        watch = Watch(port)
        made = 0
        while made < SHORT_FLOWS:
            requests, _, errors = wrk(url, 50, 5, "-H", "Connection: close")
            made += requests
            if errors:
                print(f"  wrk (Connection: close): socket errors {errors}")
        wait_for_summary(watch, watch.summary()["elapsed_s"] + 1)
        short_rss = watch.peak_rss_kb()
        short = watch.stop()
        watch = Watch(port)
        wrk(url, LONG_FLOWS, 5 if args.quick else 10)
        wait_for_summary(watch, watch.summary()["elapsed_s"] + 1)
        long_rss = watch.peak_rss_kb()
        long = watch.stop()
    finally:
        nginx.terminate()
        nginx.wait()
    print("\nchurn: watch's peak RSS (VmHWM)")
    print(f"  {made:,} short flows (a connection per request): {short_rss / 1024:6.1f} MB   (target <= 64 MB); "
          f"flows seen {short['flows']['seen']:,}, evicted {short['flows']['evicted']:,}, "
          f"dropped packets {short['packets']['dropped']:,}")
    print(f"  {LONG_FLOWS:,} long flows (keep-alive, busy):           {long_rss / 1024:6.1f} MB   (target <= 64 MB); "
          f"flows seen {long['flows']['seen']:,}, evicted {long['flows']['evicted']:,}, "
          f"dropped packets {long['packets']['dropped']:,}")


if __name__ == "__main__":
    main()
