"""Runs Debian's nghttpd (package nghttp2-server, nghttp2's own HTTP/2 server) as a test
peer: h2c by prior knowledge (--no-tls) on 127.0.0.1, a port the kernel chose, serving a
docroot whose index.html is --body-bytes bytes of 'x' (so `/` and `/index.html` answer
200; any other path is nghttpd's 404).

How it learns the port without a race: nghttpd accepts port 0 but never says which port it
got. The script forks; the parent *becomes* nghttpd (exec, so the peer's pid is nghttpd's
own and a kill reaches it directly, leaving nothing behind), and the child reads the
listening socket of that pid from /proc (its fds' inodes matched against /proc/net/tcp's
LISTEN rows), prints "PORT <n>" (a listening socket accepts into its backlog from then on),
then waits for nghttpd to exit to remove the docroot.

Flags: --body-bytes N (13), --max-streams N (nghttpd -m, its
SETTINGS_MAX_CONCURRENT_STREAMS), --window-bits N (-w: the stream window it advertises,
2**N-1 bytes), --connection-window-bits N (-W); arguments after `--` go to nghttpd as they
are.
"""

import argparse
import os
import select
import shutil
import sys
import tempfile
import time

READY_WITHIN_S = 10


def parse_args():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body-bytes", type=int, default=13, help="size of index.html in bytes")
    parser.add_argument("--max-streams", type=int, help="SETTINGS_MAX_CONCURRENT_STREAMS (nghttpd -m)")
    parser.add_argument("--window-bits", type=int, help="stream window 2**N-1 bytes (nghttpd -w)")
    parser.add_argument("--connection-window-bits", type=int, help="connection window (nghttpd -W)")
    return parser.parse_args(argv), extra


def nghttpd_command(args, extra, docroot):
    command = ["nghttpd", "--no-tls", "-a", "127.0.0.1", "-d", docroot]
    if args.max_streams is not None:
        command.append(f"--max-concurrent-streams={args.max_streams}")
    if args.window_bits is not None:
        command.append(f"--window-bits={args.window_bits}")
    if args.connection_window_bits is not None:
        command.append(f"--connection-window-bits={args.connection_window_bits}")
    return command + extra + ["0"]


def listening_port(pid):
    """The port of a socket of `pid` listening on TCP/IPv4, or None (yet)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
        with open(f"/proc/{pid}/net/tcp") as table:
            rows = table.read().splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        fields = row.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and inode in inodes:
            return int(local.split(":")[1], 16)
    return None


def announce_port(server_pid, docroot):
    """The child: prints nghttpd's port once it listens, then cleans up after it."""
    exited = os.pidfd_open(server_pid)
    deadline = time.monotonic() + READY_WITHIN_S
    port = None
    while port is None:
        if select.select([exited], [], [], 0)[0] or time.monotonic() > deadline:
            print("nghttpd_peer: nghttpd did not listen", file=sys.stderr)
            shutil.rmtree(docroot, ignore_errors=True)
            os._exit(1)
        port = listening_port(server_pid)
        if port is None:
            time.sleep(0.01)
    print(f"PORT {port}", flush=True)
    # The pipe is nghttpd's alone from now on.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    select.select([exited], [], [])
    shutil.rmtree(docroot, ignore_errors=True)
    os._exit(0)


def main():
    args, extra = parse_args()
    if shutil.which("nghttpd") is None:
        print("nghttpd_peer: nghttpd not found (apt-get install nghttp2-server)", file=sys.stderr)
        sys.exit(2)
    docroot = tempfile.mkdtemp(prefix="nghttpd-peer-")
    with open(os.path.join(docroot, "index.html"), "wb") as index:
        index.write(b"x" * args.body_bytes)
    command = nghttpd_command(args, extra, docroot)
    server_pid = os.getpid()
    if os.fork() == 0:
        announce_port(server_pid, docroot)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
