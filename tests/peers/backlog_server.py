#!/usr/bin/env python3
"""A one-at-a-time HTTP server with a small listen backlog, as `listen(2)` or a framework's
default gives: under a burst of new connections its accept queue overflows, the kernel drops
SYNs (or the handshake's last ACK), and clients retry after the 1 s initial RTO, then 3 s.

Each connection gets one response (Connection: close) after --work-ms of work. --backlog
sets the listen() argument (default 2). Prints "PORT <n>" once listening.
"""
import argparse
import socket
import time

parser = argparse.ArgumentParser()
parser.add_argument("--backlog", type=int, default=2)
parser.add_argument("--work-ms", type=float, default=2.0)
args = parser.parse_args()

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(args.backlog)
print(f"PORT {listener.getsockname()[1]}", flush=True)
BODY = b"Hello, world!"
while True:
    connection, _ = listener.accept()
    try:
        connection.recv(65536)
        time.sleep(args.work_ms / 1000)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\n" + BODY)
    except OSError:
        pass
    finally:
        connection.close()
