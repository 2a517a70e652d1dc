"""bench/canned_peer.c, compiled and started for a benchmark or script: the trivial peer (one
epoll thread answering canned bytes) that leaves the generator's own costs to measure."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(workdir):
    """Compiles the peer into `workdir`; returns the binary's path."""
    binary = os.path.join(workdir, "canned_peer")
    subprocess.run(["cc", "-O2", "-o", binary, os.path.join(ROOT, "bench", "canned_peer.c")], check=True)
    return binary


def start(binary, mode="http", prefix=()):
    """Starts the peer in `mode` (http, line, ...), after `prefix` (`taskset -c 0`); returns
    (process, port), or raises RuntimeError with what it printed instead of its port."""
    peer = subprocess.Popen([*prefix, binary, mode], stdout=subprocess.PIPE, text=True)
    line = peer.stdout.readline()
    if not line.startswith("PORT "):
        peer.kill()
        peer.wait()
        raise RuntimeError(f"canned_peer {mode} printed {line!r}")
    return peer, int(line.split()[1])
