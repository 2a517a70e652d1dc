#!/usr/bin/env python3
"""A server that misbehaves in one chosen way, for nodelay's bad-input tests.

Modes: garbage (answers bytes that are not HTTP), close-mid-response (promises 100 bytes,
sends 10, closes), huge-header (a 10 MB header), silent (reads requests, never answers),
extra-bytes (a valid response followed by bytes nobody asked for); for raw protocols,
huge-length (a 4-byte length prefix of 4 GB) and no-delimiter (2 MB without a newline).
Prints "PORT <n>" once bound."""
import socket
import sys
import threading

MODE = sys.argv[1]


def serve(conn):
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                if MODE == "garbage":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
                elif MODE == "close-mid-response":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    return
                elif MODE == "huge-header":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Huge: " + b"a" * (10 * 1024 * 1024) + b"\r\n\r\n")
                elif MODE == "extra-bytes":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")
                elif MODE == "silent":
                    pass
                elif MODE == "huge-length":  # a length prefix announcing 4 GB
                    conn.sendall(b"\xff\xff\xff\xffpartial")
                elif MODE == "no-delimiter":  # 2 MB without the newline a line protocol needs
                    conn.sendall(b"x" * (2 * 1024 * 1024))
            except OSError:
                return


listener = socket.create_server(("127.0.0.1", 0))
print(f"PORT {listener.getsockname()[1]}", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
