#!/usr/bin/env python3
"""Scale: nodelay, wrk and oha side by side at 1 k, 10 k and 50 k connections (issue 32, item 3).

nginx (13-byte file) is pinned to core 0, each generator to core 1, one generator thread each;
the tools alternate within each round, figures are medians of the rounds. Per tool and
connection count: requests/s; the generator's CPU per request (user + system seconds of the
child, from GNU time's rusage, over the requests it completed); its peak RSS; connect times
(nodelay: p50 / p99 of its connect_ms; oha: avg / max of its DNSDialup, DNS + connect, it has
no percentiles; wrk reports none: n/a); the time to open all connections and the most held,
both measured the same way for all three from nginx's stub_status ("Active connections",
polled every 10 ms, less the poll's own connection): from the generator's launch to the first
poll that saw all of them.
A row nodelay* (nodelay --no-server-view) is shown for information and judged against nothing.
When a count needs more descriptors than RLIMIT_NOFILE allows, it is still run (each tool's
failure is printed), and the most this machine allows is measured as an extra count.
Then a connection-per-request workload (`-H 'Connection: close'` for all three) at
--close-connections: connects/s (= requests/s, each request opens its own connection).

Targets, printed with each ratio (a measurement: exit 0 even when one is MISSED):
  req/s nodelay / best of (wrk, oha) >= 1.00 at every connection count;
  peak RSS nodelay / wrk <= 1.50 at 10 k; connects/s nodelay / wrk >= 1.00 (Connection: close).

Limits, raised as a user would (and said so in the output):
  RLIMIT_NOFILE of this script, inherited by nginx and the generators, to the largest count +
  1024 (when the hard limit is lower and cannot be raised without CAP_SYS_RESOURCE, to the
  hard limit, and the rows above it show how each tool fails);
  as root, unless --no-sysctl: net.ipv4.ip_local_port_range widened to 1024-65535 when the
  largest count needs more ports than it has (none of the tools can bind several 127.0.0.x
  source addresses), net.core.somaxconn and net.ipv4.tcp_max_syn_backlog raised to 65535 so a
  burst of connects is not dropped at nginx's listen queue (backlog=65535); every sysctl
  changed is restored at exit. nginx gets worker_connections and worker_rlimit_nofile for the
  count, multi_accept on, and as many workers (all on core 0, reuseport) as its descriptor
  limit requires.

Usage: bench/scale.py [--quick] [--rounds 3] [--seconds 5] [--connections 1000,10000,50000]
                      [--close-connections 1000] [--no-build] [--no-sysctl] [--no-info-row]
--quick: 1 round of 3 s. The full run takes ~7 minutes on 2 cores.
"""
import argparse
import http.client
import json
import math
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from vs_wrk import free_port, oha_binary  # noqa: E402

POLL_INTERVAL_S = 0.010
SPARE_FDS = 1024  # beyond one descriptor per connection: epoll, pipes, logs, the server view
BACKLOG = 65535


# ---- limits ---------------------------------------------------------------------------------

def raise_nofile(wanted):
    """Raises this process's RLIMIT_NOFILE (inherited by every child); returns (limit, note)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted, f"RLIMIT_NOFILE raised to {wanted} (hard was {hard})"
        except (ValueError, OSError) as err:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard, (f"RLIMIT_NOFILE: wanted {wanted}, but the hard limit {hard} cannot be raised "
                          f"({err}; it needs CAP_SYS_RESOURCE): soft limit set to {hard}")
    limit = wanted if hard == resource.RLIM_INFINITY else hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    return limit, f"RLIMIT_NOFILE soft limit set to {limit} (hard {hard}), from {soft}"


class Sysctls:
    """Sysctls changed for the run, each restored by restore() (called from a finally)."""

    def __init__(self):
        self.saved = {}

    @staticmethod
    def path(name):
        return "/proc/sys/" + name.replace(".", "/")

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read().strip()

    def set(self, name, value):
        old = self.read(name)
        if old.split() == value.split():
            return None
        try:
            with open(self.path(name), "w") as f:
                f.write(value)
        except OSError as err:
            return f"{name}: could not set {value!r} ({err}); left at {old!r}"
        self.saved.setdefault(name, old)
        return f"{name}: {old!r} -> {value!r} (restored at exit)"

    def restore(self):
        for name, old in self.saved.items():
            try:
                with open(self.path(name), "w") as f:
                    f.write(old)
            except OSError as err:
                print(f"could not restore {name} to {old!r}: {err}", file=sys.stderr)
        self.saved.clear()


def tune_sysctls(sysctls, largest):
    notes = []
    low, high = (int(v) for v in sysctls.read("net.ipv4.ip_local_port_range").split())
    if high - low + 1 < largest + SPARE_FDS:
        notes.append(sysctls.set("net.ipv4.ip_local_port_range", "1024 65535"))
    for name in ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog"):
        if int(sysctls.read(name)) < BACKLOG:
            notes.append(sysctls.set(name, str(BACKLOG)))
    return [n for n in notes if n]


# ---- nginx and its connection count -----------------------------------------------------------

def nginx_worker_capacity(fd_limit):
    """(worker_connections, connections one worker holds): below 1/16 of its connections free,
    nginx closes idle keep-alive ones to make room (ngx_drain_connections), so a worker sized to
    the descriptor limit holds only 15/16 of it."""
    per_worker = max(1024, fd_limit - 64)
    return per_worker, per_worker * 15 // 16 - 64


def start_nginx(workdir, connections, fd_limit):
    """nginx on core 0 sized for `connections`; returns (process, url, status_port, workers)."""
    port = free_port()
    per_worker, holds = nginx_worker_capacity(fd_limit)
    workers = max(1, math.ceil(connections / holds))
    www = os.path.join(workdir, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("Hello, world!")  # 13 bytes
    os.chmod(workdir, 0o755)
    conf = os.path.join(workdir, "nginx.conf")
    temp = lambda name: os.path.join(workdir, name)
    reuseport = " reuseport" if workers > 1 else ""
    with open(conf, "w") as f:
        f.write(f"""
worker_processes {workers};
worker_rlimit_nofile {per_worker + 64};
daemon off;
pid {temp('nginx.pid')};
error_log {temp('error.log')};
events {{ worker_connections {per_worker}; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120;
  client_body_temp_path {temp('body')};
  proxy_temp_path {temp('proxy')};
  fastcgi_temp_path {temp('fastcgi')};
  uwsgi_temp_path {temp('uwsgi')};
  scgi_temp_path {temp('scgi')};
  server {{
    listen 127.0.0.1:{port} backlog={BACKLOG}{reuseport};
    root {www};
    location / {{ }}
    location = /nginx_status {{ stub_status; }}
  }}
}}
""")
    # multi_accept: without it nginx accepts one connection per wait, and (as we read it) a
    # wait returns at most 512 of the ready sockets in turn, so with thousands of connections
    # already busy the rest left the accept queue at ~10 a second: 9 345 of 18 626 waited there
    # the whole run, in one of a few runs (ss -lnt's Recv-Q), whichever generator it was.
    # nginx's SIGTERM (Popen.terminate) stops its workers too; SIGKILL would orphan them.
    proc = subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", conf, "-p", workdir])
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/nginx_status")
            if conn.getresponse().status == 200:
                conn.close()
                return proc, f"http://127.0.0.1:{port}/index.html", port, workers
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("nginx did not start; see " + temp("error.log"))


class ActiveConnections(threading.Thread):
    """Polls nginx's stub_status every POLL_INTERVAL_S: (time, connections other than its own)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.samples = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def run(self):
        conn = None
        while not self.stopping.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/nginx_status")
                body = conn.getresponse().read().decode()
                active = int(re.search(r"Active connections:\s*(\d+)", body).group(1)) - 1
                with self.lock:
                    self.samples.append((time.monotonic(), active))
            except (OSError, http.client.HTTPException, AttributeError):
                conn = None  # nginx busy or restarting: reconnect at the next poll
            self.stopping.wait(POLL_INTERVAL_S)

    def between(self, start, end):
        with self.lock:
            return [(t, n) for t, n in self.samples if start <= t <= end]

    def latest(self):
        with self.lock:
            return self.samples[-1][1] if self.samples else None

    def stop(self):
        self.stopping.set()
        self.join()

    def wait_drained(self, timeout_s=30):
        """Waits until nginx holds no connection but the poll's own (the last run's are closed)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.latest() == 0:
                return True
            time.sleep(0.05)
        return False


def time_wait_sockets():
    """TCP sockets in TIME-WAIT in this network namespace (/proc/net/sockstat's tw)."""
    with open("/proc/net/sockstat") as f:
        return int(re.search(r"TCP:.* tw (\d+)", f.read()).group(1))


def tcp_counters():
    """The namespace's TcpExt counters (SYN retransmits, listen-queue overflows)."""
    with open("/proc/net/netstat") as f:
        lines = [line.split() for line in f if line.startswith("TcpExt:")]
    return {name: int(value) for name, value in zip(lines[0][1:], lines[1][1:])}


# ---- the generators ---------------------------------------------------------------------------

def launch(cmd, seconds, poller, connections):
    """Runs cmd pinned to core 1 under GNU time, with nginx's count polled meanwhile."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        full = ["/usr/bin/time", "-o", t.name, "-f", "%U %S %M", "taskset", "-c", "1"] + cmd
        counters, time_wait = tcp_counters(), time_wait_sockets()
        start = time.monotonic()
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=seconds + 90)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += f"\nkilled after {seconds + 90} s"
        end = time.monotonic()
        fields = t.read().split()
    delta = {k: v - counters.get(k, 0) for k, v in tcp_counters().items()}
    samples = poller.between(start, end)
    reached = [t for t, n in samples if n >= connections]
    run = dict(out=out, err=err, returncode=proc.returncode,
               open_s=reached[0] - start if reached else None,
               held=max((n for _, n in samples), default=0), time_wait=time_wait,
               syn_retrans=delta.get("TCPSynRetrans", 0), listen_drops=delta.get("ListenDrops", 0))
    if len(fields) >= 3:
        user, system, rss = fields[-3:]
        run.update(cpu_s=float(user) + float(system), rss_kb=int(rss))
    return run


def failure(run, name):
    text = (run["err"].strip() or run["out"].strip() or "no output").splitlines()
    lines = [line for line in text if line.strip() and not line.startswith("Command exited")]
    return f"{name} exited {run['returncode']}: {lines[-1] if lines else ''}"[:400]


def run_nodelay(url, connections, seconds, close, poller, flags=()):
    cmd = [NODELAY, "bench", "-t", "1", "-c", str(connections), "-d", f"{seconds}s", "-q", "--json", *flags]
    run = launch(cmd + (["-H", "Connection: close"] if close else []) + [url], seconds, poller, connections)
    try:
        report = json.loads(run["out"])
    except ValueError:
        return dict(run, failed=failure(run, "nodelay"))
    errors = {k: v for k, v in report["errors"].items() if v}
    connect = report.get("connect_ms") or {}
    example = next(iter(report.get("error_examples", {}).items()), None)
    return dict(run, requests=report["requests_completed"], rps=report["requests_per_second"],
                connect=(connect.get("p50"), connect.get("p99")) if connect else None,
                errors=sum(errors.values()), error_kinds=errors,
                error_example=f"{example[0]}: {example[1]}" if example else None,
                syn_retry=report.get("connects_at_syn_retry"), opened=report.get("connections_opened"))


def run_wrk(url, connections, seconds, close, poller):
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s"] + (["-H", "Connection: close"] if close else [])
    run = launch(cmd + [url], seconds, poller, connections)
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", run["out"])
    if run["returncode"] != 0 or not done:
        return dict(run, failed=failure(run, "wrk"))
    elapsed_s = float(done.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60}[done.group(3)]
    kinds = {}
    socket_errors = re.search(r"Socket errors: (.*)", run["out"])
    if socket_errors:
        for kind, count in re.findall(r"(\w+) (\d+)", socket_errors.group(1)):
            if int(count):
                kinds[kind] = int(count)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", run["out"])
    if non2xx:
        kinds["non-2xx"] = int(non2xx.group(1))
    return dict(run, requests=int(done.group(1)), rps=int(done.group(1)) / elapsed_s, connect=None,
                errors=sum(kinds.values()), error_kinds=kinds,
                error_example=("Socket errors: " + socket_errors.group(1)) if socket_errors else None)


def run_oha(url, connections, seconds, close, poller):
    cmd = [oha_binary(), "--no-tui", "--output-format", "json", "-c", str(connections), "-z", f"{seconds}s"]
    run = launch(cmd + (["-H", "Connection: close"] if close else []) + [url], seconds, poller, connections)
    try:
        report = json.loads(run["out"])
    except ValueError:
        return dict(run, failed=failure(run, "oha"))
    # With -z, requests cut off by the deadline are listed as errors; they are not failures.
    kinds = {k: v for k, v in report.get("errorDistribution", {}).items() if "deadline" not in k}
    statuses = report["statusCodeDistribution"]
    dial = (report.get("details") or {}).get("DNSDialup") or {}
    example = max(kinds.items(), key=lambda kv: kv[1], default=None)
    return dict(run, requests=sum(statuses.values()), rps=report["summary"]["requestsPerSec"],
                connect=(dial["average"] * 1e3, dial["slowest"] * 1e3) if dial.get("average") is not None else None,
                errors=sum(kinds.values()) + sum(v for k, v in statuses.items() if k != "200"),
                error_kinds=kinds, error_example=f"{example[1]} x {example[0]}" if example else None)


# nodelay* (information, not judged): without the server view, whose start-up (finding the
# process listening on the port) and sampler share the generator's core.
TOOLS = {"nodelay": run_nodelay, "wrk": run_wrk, "oha": run_oha,
         "nodelay*": lambda *a: run_nodelay(*a, flags=("--no-server-view",))}
PEERS = ("wrk", "oha")


# ---- summaries --------------------------------------------------------------------------------

def summarise(runs):
    """Medians over the rounds that produced figures; None when every round failed."""
    good = [r for r in runs if "failed" not in r and r.get("cpu_s") is not None]
    if not good:
        return dict(failed=runs[0].get("failed", "no figures"))
    med = lambda key: statistics.median(r[key] for r in good)
    connects = [r["connect"] for r in good if r["connect"]]
    opened = [r["open_s"] for r in good]
    return dict(
        rps=med("rps"), requests=med("requests"),
        cpu_us=statistics.median(r["cpu_s"] / r["requests"] * 1e6 if r["requests"] else math.inf for r in good),
        rss_mb=med("rss_kb") / 1024,
        connect=(statistics.median(c[0] for c in connects), statistics.median(c[1] for c in connects))
        if connects else None,
        open_s=statistics.median(opened) if None not in opened else None,
        held=min(r["held"] for r in good), errors=med("errors"),
        example=next((r["error_example"] for r in good if r.get("error_example")), None),
        rounds_failed=len(runs) - len(good),
        failed_note=next((r["failed"] for r in runs if "failed" in r), None),
        syn_retry=statistics.median(r["syn_retry"] for r in good) if good[0].get("syn_retry") is not None else None,
        syn_retrans=statistics.median(r["syn_retrans"] for r in good),
        listen_drops=statistics.median(r["listen_drops"] for r in good),
        time_wait=statistics.median(r["time_wait"] for r in good))


def say(text, indent=""):
    """Prints text wrapped to 80 columns."""
    print(textwrap.fill(text, width=80, initial_indent=indent, subsequent_indent=indent + "  "))


def count_label(c):
    return f"{c // 1000}k" if c % 1000 == 0 else str(c)


def print_table(title, summaries, connections, persistent=True):
    """One row per tool; with persistent=False (a connection per request) open all and held
    say nothing, as connections come and go, and are shown as '-'."""
    print(f"\n{title}")
    print(f"{'tool':<8}{'req/s':>9}{'CPU us/req':>11}{'RSS MB':>8}{'connect ms':>15}"
          f"{'open all s':>11}{'held':>7}{'errors':>8}")
    for name, s in summaries.items():
        if "failed" in s:
            print(f"{name:<8}FAILED (below)")
            continue
        connect = f"{s['connect'][0]:.1f} / {s['connect'][1]:.1f}" if s["connect"] else "n/a"
        opened = f"{s['open_s']:.2f}" if s["open_s"] is not None else "n/a"
        held = s["held"] if persistent else "-"
        cpu = f"{s['cpu_us']:.1f}" if math.isfinite(s["cpu_us"]) else "n/a"
        print(f"{name:<8}{s['rps']:>9.0f}{cpu:>11}{s['rss_mb']:>8.1f}{connect:>15}"
              f"{opened if persistent else '-':>11}{held:>7}{s['errors']:>8.0f}")
    waits = [f"{name} {s['time_wait']:.0f}" for name, s in summaries.items() if "failed" not in s]
    if waits:
        say("TIME-WAIT sockets at the start of the runs (median): " + ", ".join(waits), indent="  ")
    for name, s in summaries.items():
        if "failed" in s:
            say(f"{name} FAILED: {s['failed']}", indent="  ")
            continue
        if persistent and s["held"] < connections:
            print(f"  {name}: held at most {s['held']} of {connections} connections"[:80])
        if s["example"]:
            print(f"  {name} errors: {s['example']}"[:80])
        if s["rounds_failed"]:
            print(f"  {name}: {s['rounds_failed']} round(s) failed: {s['failed_note']}"[:80])
        if s.get("syn_retry"):
            say(f"{name}: {s['syn_retry']:.0f} connects_at_syn_retry in its JSON (connects of 0.9-1.4 s...)",
                indent="  ")
        if s["syn_retrans"] or s["listen_drops"] or s.get("syn_retry"):
            say(f"{name}'s runs: the kernel counted {s['syn_retrans']:.0f} SYN retransmits, "
                f"{s['listen_drops']:.0f} listen-queue drops (TcpExt, medians)", indent="  ")


class Verdicts:
    """Target lines: ok, MISSED, or NOT MEASURED when this machine cannot run the case."""

    def __init__(self):
        self.counts = {"ok": 0, "MISSED": 0, "NOT MEASURED": 0}

    def ratio(self, label, ratio, ok, target, note=""):
        mark = "ok" if ok(ratio) else "MISSED"
        self.counts[mark] += 1
        say(f"{label:<38}{ratio:>6.2f}  (target {target}) {mark}{note}")

    def none(self, label, why, mark="MISSED"):
        self.counts[mark] += 1
        say(f"{label}: {mark}: {why}")

    def summary(self):
        parts = [f"{n} {mark}" for mark, n in self.counts.items() if n]
        print("\ntargets: " + ", ".join(parts))


def fails(*summaries):
    return any(not s or "failed" in s for s in summaries)


def print_targets(keepalive, close, close_connections, fd_limit):
    print("\nTargets (ratios of medians)")
    verdicts = Verdicts()
    for c, summaries in keepalive.items():
        label = f"req/s nodelay/best at {count_label(c)}"
        nd = summaries.get("nodelay", {})
        peers = {n: s for n, s in summaries.items() if n in PEERS and not fails(s)}
        if c + SPARE_FDS > fd_limit and fails(nd):
            verdicts.none(label, f"needs {c}+ descriptors, RLIMIT_NOFILE is {fd_limit}; nodelay refuses",
                          "NOT MEASURED")
        elif fails(nd) or not peers:
            verdicts.none(label, "nodelay failed" if fails(nd) else "no peer ran")
        else:
            best = max(peers, key=lambda n: peers[n]["rps"])
            short = [f"{n} held {s['held']}" for n, s in summaries.items()
                     if n in ("nodelay", best) and s["held"] < c]
            note = f" [{', '.join(short)}]" if short else ""
            verdicts.ratio(f"req/s nodelay/{best} (best) at {count_label(c)}", nd["rps"] / peers[best]["rps"],
                           lambda r: r >= 1.0, ">= 1.00", note)
    if 10000 in keepalive:
        nd, wrk = keepalive[10000].get("nodelay"), keepalive[10000].get("wrk")
        if fails(nd, wrk):
            verdicts.none("peak RSS nodelay/wrk at 10k", "a tool failed")
        else:
            verdicts.ratio("peak RSS nodelay/wrk at 10k", nd["rss_mb"] / wrk["rss_mb"], lambda r: r <= 1.5, "<= 1.50")
    if close:
        label = f"connects/s nodelay/wrk (close, {count_label(close_connections)})"
        nd, wrk = close.get("nodelay"), close.get("wrk")
        if fails(nd, wrk):
            verdicts.none(label, "a tool failed")
        else:
            verdicts.ratio(label, nd["rps"] / wrk["rps"], lambda r: r >= 1.0, ">= 1.00")
    print("For information:")
    for c, summaries in keepalive.items():
        nd, wrk = summaries.get("nodelay"), summaries.get("wrk")
        if fails(nd, wrk) or not math.isfinite(wrk["cpu_us"]):
            continue
        print(f"{f'CPU/req nodelay/wrk at {count_label(c)}':<38}{nd['cpu_us'] / wrk['cpu_us']:>6.2f}")
        if nd["open_s"] is not None and wrk["open_s"] is not None:
            print(f"{f'open all nodelay/wrk at {count_label(c)}':<38}{nd['open_s'] / wrk['open_s']:>6.2f}")
    verdicts.summary()


# ---- main -------------------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s (unless given)")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--seconds", type=int)
    parser.add_argument("--connections", default="1000,10000,50000")
    parser.add_argument("--close-connections", type=int, default=1000)
    parser.add_argument("--no-build", action="store_true", help="use target/release/nodelay as it is")
    parser.add_argument("--no-info-row", action="store_true", help="skip nodelay --no-server-view (nodelay*)")
    parser.add_argument("--no-sysctl", action="store_true", help="change no sysctl, even as root")
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.seconds = args.seconds or (3 if args.quick else 5)
    try:
        args.counts = [int(c) for c in args.connections.split(",")]
    except ValueError:
        parser.error("--connections takes counts separated by commas, e.g. 1000,10000")
    if args.rounds < 1 or args.seconds < 1 or args.close_connections < 0 or min(args.counts) < 1:
        parser.error("--rounds, --seconds and the connection counts must be at least 1")
    return args


def measure(label, counts_and_close, args, fd_limit, tools):
    """Runs every tool at each (connections, close) in alternating rounds; returns summaries."""
    results = {}
    for connections, close in counts_and_close:
        workdir = tempfile.mkdtemp(prefix="nodelay-scale-")
        nginx, url, status_port, workers = start_nginx(workdir, connections, fd_limit)
        poller = ActiveConnections(status_port)
        poller.start()
        runs = {name: [] for name in tools}
        try:
            for round_number in range(args.rounds):
                for name in tools:
                    runs[name].append(TOOLS[name](url, connections, args.seconds, close, poller))
                    if not poller.wait_drained():
                        print(f"nginx still holds {poller.latest()} connections 30 s after {name}", file=sys.stderr)
                print(f"{label} c={connections}: round {round_number + 1}/{args.rounds} done "
                      f"(nginx workers: {workers})", file=sys.stderr)
        finally:
            poller.stop()
            nginx.terminate()
            nginx.wait()
            shutil.rmtree(workdir, ignore_errors=True)
        results[connections] = (workers, {name: summarise(r) for name, r in runs.items()})
    return results


def main():
    args = parse_args()
    sysctls = Sysctls()
    # SIGTERM and SIGHUP unwind through the finally below, which restores the sysctls.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    tools = ["nodelay", "wrk"] + (["oha"] if oha_binary() else []) + ([] if args.no_info_row else ["nodelay*"])
    if "oha" not in tools:
        print("oha not found (cargo install oha --locked): its rows are skipped")
    largest = max(args.counts + [args.close_connections])
    fd_limit, fd_note = raise_nofile(largest + SPARE_FDS)
    notes = [fd_note]
    try:
        if os.geteuid() == 0 and not args.no_sysctl:
            notes += tune_sysctls(sysctls, largest)
        elif not args.no_sysctl:
            notes.append("not root: sysctls left as they are")
        load_start = os.getloadavg()
        started = time.monotonic()
        counts = list(args.counts)
        capped = min(fd_limit - SPARE_FDS, nginx_worker_capacity(fd_limit)[1])
        if any(c + SPARE_FDS > fd_limit for c in counts) and capped not in counts and capped > 0:
            counts.append(capped)
            notes.append(f"{max(counts)} connections need more descriptors than RLIMIT_NOFILE allows: "
                         f"also measured at {capped}, the most a generator ({fd_limit} less {SPARE_FDS} "
                         "spare) and one nginx worker (15/16 of its worker_connections) hold here")
            counts.sort()
        keepalive = measure("keep-alive", [(c, False) for c in counts], args, fd_limit, tools)
        close = measure("close", [(args.close_connections, True)], args, fd_limit, tools) \
            if args.close_connections else {}
        took_s = time.monotonic() - started
        load_end = os.getloadavg()
    finally:
        sysctls.restore()

    print(f"\nScale: nginx 13-byte file on core 0, generator (1 thread) on core 1, "
          f"{args.seconds} s x {args.rounds} round(s), medians")
    for note in notes:
        say(note)
    print(f"load average (1 min) {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end; "
          f"{took_s:.0f} s of runs")
    for c, (workers, summaries) in keepalive.items():
        print_table(f"keep-alive, c = {c} (nginx workers: {workers})", summaries, c)
    for c, (workers, summaries) in close.items():
        print_table(f"Connection: close, c = {c} (connects/s = req/s; nginx workers: {workers})",
                    summaries, c, persistent=False)
    print("\nconnect ms: nodelay p50 / p99 of connect_ms; oha avg / max of DNSDialup (no\n"
          "percentiles); wrk reports none. open all s: from the generator's launch to the first\n"
          "10 ms poll of nginx's stub_status that counted every connection; held: the most it\n"
          "counted. CPU us/req: the generator's user+system CPU / requests completed.\n"
          "nodelay*: nodelay --no-server-view, for information (not judged). The server view\n"
          "lists every TCP socket of the namespace, TIME-WAIT ones too: its CPU and RSS grow\n"
          "with them (the count above each table's notes).")
    print_targets({c: s for c, (_, s) in keepalive.items()},
                  next(iter(close.values()))[1] if close else None, args.close_connections, fd_limit)
    sys.exit(0)


if __name__ == "__main__":
    main()
