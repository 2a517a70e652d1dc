#!/usr/bin/env python3
"""Writes crates/cli/link/symbol-order.txt: the functions of the release `nodelay` binary that
typical bench runs execute, which crates/cli/build.rs has the linker place together (issue 48:
the kernel maps 64 KB of the binary around each page a run touches, so scattered code costs
RSS). The functions are what valgrind's callgrind saw executed in the binary over the runs
below against bench/canned_peer.c, in the order they first appear in its output.

Regenerate after large changes to the engine, the report or the CLI: names that no longer exist
are skipped by the linker, and new code lands outside the ordered block. `--check` only counts
how many of the file's names the current release binary has.

Usage: scripts/symbol_order.py [--check]   (needs valgrind: apt-get install valgrind)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODELAY = os.path.join(ROOT, "target", "release", "nodelay")
ORDER_FILE = os.path.join(ROOT, "crates", "cli", "link", "symbol-order.txt")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import canned  # noqa: E402  (bench/canned_peer.c, built and started)
# What a bench run does, in the ways people run it: JSON and text, the default loop and epoll,
# by duration and by count.
RUNS = [
    ["bench", "-t", "1", "-c", "50", "-d", "1s", "-q", "--json"],
    ["bench", "-t", "1", "-c", "50", "-d", "1s", "-q"],
    ["bench", "-t", "1", "-c", "50", "-d", "1s", "--epoll", "-q", "--json"],
    ["bench", "-n", "200", "-c", "1"],
]


def executed_functions(callgrind_out, binary):
    """The mangled names of the functions callgrind saw run in `binary`, in the order they first
    appear in its output.
    Callgrind's format names an object (`ob=`, `cob=`) and a function (`fn=`, `cfn=`) once in
    full and by its number after that."""
    objects, names, owner = {}, {}, {}
    order = []
    current_object = called_object = None
    pattern = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_out) as lines:
        for line in lines:
            match = pattern.match(line.rstrip("\n"))
            if not match:
                continue
            called, kind, number, name = match.groups()
            if kind == "ob":
                if name:
                    objects[number] = name
                if called:
                    called_object = objects.get(number)
                else:
                    current_object, called_object = objects.get(number), None
                continue
            if name:
                names[number] = name
            if number not in owner:
                owner[number] = called_object if called and called_object else current_object
                order.append(number)
            if called:
                called_object = None
    binary = os.path.realpath(binary)
    return [names[n] for n in order
            if owner[n] and os.path.realpath(owner[n]) == binary
            and not names[n].startswith("0x") and not names[n].startswith("(")]


def binary_symbols(binary):
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {parts[-1] for parts in (line.split() for line in out.splitlines()) if len(parts) >= 2}


def check():
    with open(ORDER_FILE) as f:
        wanted = [line.strip() for line in f if line.strip()]
    present = binary_symbols(NODELAY)
    found = sum(name in present for name in wanted)
    print(f"{found} of {len(wanted)} names in {os.path.relpath(ORDER_FILE, ROOT)} are in the release binary "
          f"({100 * found / max(len(wanted), 1):.0f} %)")
    return 0 if found >= 0.9 * len(wanted) else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="count the file's names the binary has")
    args = parser.parse_args()
    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "nodelay"], cwd=ROOT, check=True)
    if args.check:
        sys.exit(check())
    if not shutil.which("valgrind"):
        sys.exit("valgrind is missing: apt-get install valgrind")
    with tempfile.TemporaryDirectory() as workdir:
        try:
            peer, port = canned.start(canned.build(workdir))
        except RuntimeError as e:
            sys.exit(str(e))
        try:
            url = f"http://127.0.0.1:{port}/"
            functions = []
            for number, run in enumerate(RUNS):
                out = os.path.join(workdir, f"callgrind.{number}")
                subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                                NODELAY, *run, url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               check=True, timeout=300)
                functions += executed_functions(out, NODELAY)
        finally:
            peer.kill()
    unique = list(dict.fromkeys(functions))
    os.makedirs(os.path.dirname(ORDER_FILE), exist_ok=True)
    with open(ORDER_FILE, "w") as f:
        f.write("".join(name + "\n" for name in unique))
    print(f"{len(unique)} functions written to {os.path.relpath(ORDER_FILE, ROOT)}")


if __name__ == "__main__":
    main()
