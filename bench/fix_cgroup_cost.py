#!/usr/bin/env python3
"""What `nodelay fix --cgroup` costs new connections (issue 42): connects/s of a
`Connection: close` load against a server in a cgroup of its own, with nodelay's eBPF programs
attached to that cgroup and without, in alternating rounds of the same run.

The server is bench/canned_peer.c (one epoll thread, TCP_NODELAY set on each connection, so
the setsockopt program runs on every accept too) on core 0; the load is
`nodelay bench --no-keepalive -t 1 -c 8` on core 1: every request a new connection, which the
sock_ops program sees as it is accepted. The ratio is the Hodges-Lehmann estimate (the median
of every attached round over every bare round), each round's own ratio printed beside it.
Target: connects/s with the programs at least 0.99 of without.
Usage: bench/fix_cgroup_cost.py [--rounds 5] [--seconds 4]   (root: it makes a cgroup)
Exit status 0 when the target is met."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")


def cgroup2_root():
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            before, _, after = line.partition(" - ")
            if after.split()[0] == "cgroup2":
                return before.split()[4]
    sys.exit("no cgroup2 hierarchy is mounted: mount -t cgroup2 none /sys/fs/cgroup/unified")


def connects_per_second(url, seconds):
    out = subprocess.run(["taskset", "-c", "1", NODELAY, "bench", "--no-keepalive", "-t", "1", "-c", "8",
                          "-d", f"{seconds}s", "-q", "--json", url], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"nodelay bench failed ({out.returncode}): {out.stderr}")
    report = json.loads(out.stdout)
    if sum(report["errors"].values()):
        sys.exit(f"errors: {report['errors']}")
    return report["requests_per_second"]


def attached(cgroup):
    """nodelay fix --cgroup, running once it has said so."""
    fix = subprocess.Popen([NODELAY, "fix", "--cgroup", cgroup, "-d", "600s"], stdout=subprocess.PIPE, text=True)
    text = ""
    while "open sockets" not in text:
        line = fix.stdout.readline()
        if not line:
            sys.exit(f"nodelay fix ended before attaching: {text}")
        text += line
    return fix


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=4)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1:
        parser.error("--rounds and --seconds must be at least 1")
    subprocess.run([os.path.join(ROOT, "scripts", "setup.sh"), "--bench"], check=True)
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    workdir = tempfile.mkdtemp(prefix="nodelay-fix-cgroup-")
    peer_binary = os.path.join(workdir, "canned_peer")
    subprocess.run(["cc", "-O2", "-o", peer_binary, os.path.join(ROOT, "bench", "canned_peer.c")], check=True)
    cgroup = os.path.join(cgroup2_root(), f"nodelay-bench-{os.getpid()}")
    os.mkdir(cgroup)
    peer = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$1" http',
                             cgroup, peer_binary], stdout=subprocess.PIPE, text=True)
    results = {"bare": [], "attached": []}
    fix = None
    try:
        url = f"http://127.0.0.1:{int(peer.stdout.readline().split()[1])}/"
        for round_number in range(args.rounds):
            # The order alternates, so that drift favours neither.
            order = ("bare", "attached") if round_number % 2 == 0 else ("attached", "bare")
            for mode in order:
                fix = attached(cgroup) if mode == "attached" else None
                results[mode].append(connects_per_second(url, args.seconds))
                if fix:
                    fix.send_signal(signal.SIGINT)
                    detached = fix.stdout.read()
                    fix.wait()
                    fix = None
                    if round_number == 0:
                        print(" ".join(detached.split()), file=sys.stderr)
            ratio = results["attached"][-1] / results["bare"][-1]
            print(f"round {round_number + 1}/{args.rounds}: attached/bare {ratio:.3f} connects/s", file=sys.stderr)
    finally:
        if fix:
            fix.kill()
            fix.wait()
        peer.kill()
        peer.wait()
        os.rmdir(cgroup)
    print(f"\ncanned peer (1 epoll thread) in its own cgroup on core 0; nodelay bench --no-keepalive -t 1 -c 8 "
          f"on core 1; {args.seconds} s x {args.rounds} rounds each")
    print(f"{'programs':<12}{'connects/s (median)':>22}")
    for mode, runs in results.items():
        print(f"{mode:<12}{statistics.median(runs):>22.0f}")
    pairs = [a / b for a in results["attached"] for b in results["bare"]]
    ratio = statistics.median(pairs)
    rounds = [a / b for a, b in zip(results["attached"], results["bare"])]
    print(f"each round's attached/bare: {' '.join(f'{x:.3f}' for x in rounds)}")
    ok = ratio >= 0.99
    print(f"\nconnects/s attached/bare {ratio:.3f} (Hodges-Lehmann over {args.rounds}+{args.rounds} runs)  "
          f"(target >= 0.99) {'ok' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
