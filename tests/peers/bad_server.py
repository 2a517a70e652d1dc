#!/usr/bin/env python3
"""A server that misbehaves in one chosen way, for nodelay's bad-input tests.

Modes: garbage (answers bytes that are not HTTP), close-mid-response (promises 100 bytes,
sends 10, closes), huge-header (a 10 MB header), silent (reads requests, never answers),
extra-bytes (a valid response followed by bytes nobody asked for), double-response (from
the second request on a connection, each answer comes after a complete response nobody
asked for), never-accept (a full accept queue: connects hang in SYN-SENT); for raw
protocols, huge-length (a 4-byte length prefix of 4 GB) and no-delimiter (2 MB without a
newline).
Prints "PORT <n>" once bound (never-accept: once further connections hang)."""
import socket
import sys
import threading

MODE = sys.argv[1]


OK_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def serve(conn):
    answered = False
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
                elif MODE == "double-response":
                    # The unsolicited copy goes out with the next answer, in one write, so the
                    # client always reads both at once: every second request on a connection
                    # fails, whatever the timing (sent on its own a few ms later, the copy is
                    # taken for the next answer and only sometimes detected).
                    conn.sendall(OK_RESPONSE * (2 if answered else 1))
                    answered = True
                elif MODE == "silent":
                    pass
                elif MODE == "huge-length":  # a length prefix announcing 4 GB
                    conn.sendall(b"\xff\xff\xff\xffpartial")
                elif MODE == "no-delimiter":  # 2 MB without the newline a line protocol needs
                    conn.sendall(b"x" * (2 * 1024 * 1024))
            except OSError:
                return


def never_accept():
    """Backlog 0 and nobody accepts: once one handshake waits in the accept queue, the kernel
    drops further SYNs, so connects hang (retrying SYNs) until the client gives up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address = listener.getsockname()
    held = []
    while True:  # fill the queue; done when a connect gets no answer
        probe = socket.socket()
        probe.settimeout(0.3)  # a loopback handshake takes microseconds; a dropped SYN retries after 1 s
        try:
            probe.connect(address)
        except socket.timeout:
            probe.close()
            break
        held.append(probe)
    print(f"PORT {address[1]}", flush=True)
    threading.Event().wait()


if MODE == "never-accept":
    never_accept()
listener = socket.create_server(("127.0.0.1", 0))
print(f"PORT {listener.getsockname()[1]}", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
