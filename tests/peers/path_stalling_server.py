#!/usr/bin/env python3
"""An HTTP/1.1 keep-alive server (Nagle on) that freezes the network path on one response.

Each response leaves in two sends, head then body, so Nagle holds the body until the head is
acknowledged. On response --stall-on (counted from 1 over the whole run), right after the
head's send, it stops the path's forwarder (SIGSTOP to --path-pid) and resumes it --stall-ms
later: the head and its acknowledgement wait in the frozen path, the kernel sends a loss
probe (the body, or the head again) or resends the head on its retransmission timeout (200 ms
or more), and the body's hold lasts the stall. That is a hold as long as a delayed ACK's that
no ACK timer made, at a moment the test does not have to guess. Prints "PORT <n>" once listening.
"""
import argparse
import os
import signal
import socket
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--bind", default="127.0.0.1")
parser.add_argument("--path-pid", type=int, required=True, help="the path forwarder to freeze")
parser.add_argument("--stall-on", type=int, default=5, help="the response whose body waits")
parser.add_argument("--stall-ms", type=int, default=400)
args = parser.parse_args()

BODY = b"x" * 100
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(BODY)
answered = 0
lock = threading.Lock()


def serve(connection):
    global answered
    pending = b""
    with connection:
        while True:
            while b"\r\n\r\n" not in pending:
                data = connection.recv(65536)
                if not data:
                    return
                pending += data
            _, pending = pending.split(b"\r\n\r\n", 1)
            with lock:
                answered += 1
                stall = answered == args.stall_on
            connection.sendall(HEAD)
            if stall:
                os.kill(args.path_pid, signal.SIGSTOP)
                threading.Timer(args.stall_ms / 1000, os.kill, (args.path_pid, signal.SIGCONT)).start()
            connection.sendall(BODY)


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((args.bind, 0))
listener.listen(16)
print(f"PORT {listener.getsockname()[1]}", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
