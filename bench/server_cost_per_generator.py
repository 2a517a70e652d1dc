#!/usr/bin/env python3
"""What one request costs nginx, depending on which load generator sends it (issue 15, target 1).

nginx (13-byte file, keep-alive, one worker) is pinned to core 0 and each generator to core 1;
1 thread, 50 connections, --seconds per run, the tools alternating for --rounds. For each run,
`perf stat -C` counts on both cores, and /proc/stat gives core 0's busy time. Printed per
request (medians over the rounds):
  - req/s, and nginx's CPU per request (core 0's busy time / requests, in µs);
  - core 0 idle (%): nginx waiting for requests;
  - wake-ups sent from core 0: nginx waking a generator that sleeps on core 1, by an
    inter-processor interrupt (a VM exit on a virtual machine) or by flagging a polling idle
    CPU (sched_wake_idle_without_ipi); each one is work nginx does instead of serving;
  - the generator's context switches (each one a sleep it must be woken from);
  - waits per request: nginx's epoll_wait calls, and the generator's epoll_wait or, under
    --io-uring, io_uring_enter calls (how many ready sockets each wait returned).
A generator that sleeps between responses makes the server pay for waking it.

Usage: bench/server_cost_per_generator.py [--rounds 3] [--seconds 5]
Needs perf (scripts/setup.sh --bench installs linux-perf) and root (or perf_event_paranoid -1).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from vs_wrk import oha_binary, setup_and_build, start_nginx  # noqa: E402

EVENTS = ["ipi:ipi_send_cpu", "sched:sched_wake_idle_without_ipi", "context-switches",
          "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_io_uring_enter"]


def core0_ticks():
    """(busy, total) clock ticks of core 0 so far."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("cpu0 "):
                values = [int(v) for v in line.split()[1:]]
                idle = values[3] + values[4]  # idle + iowait
                return sum(values) - idle, sum(values)
    sys.exit("no cpu0 line in /proc/stat")


def perf_counts(path):
    counts = {}
    with open(path) as output:
        for line in output:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0].replace(".", "", 1).isdigit():
                counts[fields[2]] = float(fields[0])
    return counts


def generator_commands(url, seconds):
    commands = {
        "nodelay": [NODELAY, "bench", "-t", "1", "-c", "50", "-d", f"{seconds}s", "-q", "--json", "--no-server-view", url],
        "wrk": ["wrk", "-t1", "-c50", f"-d{seconds}s", url],
    }
    if oha_binary():
        commands["oha"] = [oha_binary(), "--no-tui", "--output-format", "json", "-c", "50", "-z", f"{seconds}s", url]
    commands["nodelay --io-uring"] = commands["nodelay"][:2] + ["--io-uring"] + commands["nodelay"][2:]
    commands["nodelay --busy-poll"] = commands["nodelay"][:2] + ["--busy-poll"] + commands["nodelay"][2:]
    return commands


def requests_of(name, stdout):
    if name.startswith("nodelay"):
        return json.loads(stdout)["requests_completed"]
    if name == "wrk":
        return int(re.search(r"(\d+) requests in", stdout).group(1))
    return sum(json.loads(stdout)["statusCodeDistribution"].values())


def measure(name, command, seconds):
    """One run with perf counting on both cores; the figures per request."""
    counters = []
    for core in (0, 1):
        output = tempfile.NamedTemporaryFile(suffix=".perf", delete=False).name
        perf = subprocess.Popen(["perf", "stat", "-x,", "-o", output, "-C", str(core), "-e", ",".join(EVENTS),
                                 "--", "sleep", str(seconds + 0.5)])
        counters.append((perf, output))
    busy_before, total_before = core0_ticks()
    run = subprocess.run(["taskset", "-c", "1"] + command, capture_output=True, text=True, timeout=seconds + 60)
    busy_after, total_after = core0_ticks()
    if run.returncode != 0:
        sys.exit(f"{name} failed:\n{run.stdout}\n{run.stderr}")
    (perf0, out0), (perf1, out1) = counters
    perf0.wait()
    perf1.wait()
    nginx_core, generator_core = perf_counts(out0), perf_counts(out1)
    os.unlink(out0)
    os.unlink(out1)
    requests = requests_of(name, run.stdout)
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    busy_s = (busy_after - busy_before) / ticks_per_second
    return {
        "rps": requests / seconds,
        "nginx_us": busy_s * 1e6 / requests,
        "idle": 1 - (busy_after - busy_before) / max(1, total_after - total_before),
        "wakeups": (nginx_core.get("ipi:ipi_send_cpu", 0)
                    + nginx_core.get("sched:sched_wake_idle_without_ipi", 0)) / requests,
        "switches": generator_core.get("context-switches", 0) / requests,
        "nginx_epoll": nginx_core.get("syscalls:sys_enter_epoll_wait", 0) / requests,
        "generator_waits": (generator_core.get("syscalls:sys_enter_epoll_wait", 0)
                            + generator_core.get("syscalls:sys_enter_io_uring_enter", 0)) / requests,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1:
        parser.error("--rounds and --seconds must be at least 1")
    if not shutil.which("perf"):
        sys.exit("perf not found: scripts/setup.sh --bench installs linux-perf")
    setup_and_build()
    workdir = tempfile.mkdtemp(prefix="nodelay-bench-")
    nginx, url = start_nginx(workdir)
    commands = generator_commands(url, args.seconds)
    runs = {name: [] for name in commands}
    try:
        for round_number in range(args.rounds):
            for name, command in commands.items():
                runs[name].append(measure(name, command, args.seconds))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    med = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items()}
    print(f"\nnginx 13-byte file on core 0, each generator on core 1 (1 thread, 50 connections), "
          f"{args.seconds} s x {args.rounds} rounds, medians; per request:")
    print(f"{'generator':<21}{'req/s':>8}{'nginx CPU':>11}{'core 0':>8}{'wake-ups':>10}{'generator':>11}{'waits':>12}")
    print(f"{'':<21}{'':>8}{'(µs/req)':>11}{'idle':>8}{'sent':>10}{'sleeps':>11}{'nginx/gen':>12}")
    for name, m in med.items():
        print(f"{name:<21}{m['rps']:>8.0f}{m['nginx_us']:>11.2f}{m['idle'] * 100:>7.1f}%{m['wakeups']:>10.3f}"
              f"{m['switches']:>11.3f}{m['nginx_epoll']:>7.3f}/{m['generator_waits']:<5.2f}")
    wrk = med["wrk"]
    print()
    for name, m in med.items():
        if name != "wrk":
            print(f"{name + '/wrk':<26} req/s {m['rps'] / wrk['rps']:.2f}x, nginx CPU per request "
                  f"{m['nginx_us'] / wrk['nginx_us']:.2f}x, wake-ups per request {m['wakeups'] / max(wrk['wakeups'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
