#!/usr/bin/env python3
"""HTTP/1.1 server answering with Transfer-Encoding: chunked (three chunks and a trailer),
sent in one write with TCP_NODELAY so it is fast. Prints "PORT <n>" once bound and
"CONNECTED" at its first connection."""
import socket
import threading

RESPONSE = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
    b"5\r\nHello\r\n2;ext=1\r\n, \r\n6\r\nworld!\r\n0\r\nX-Trailer: yes\r\n\r\n"
)


def serve(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = b""
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buffer += data
            while b"\r\n\r\n" in buffer:
                _, buffer = buffer.split(b"\r\n\r\n", 1)
                conn.sendall(RESPONSE)


listener = socket.create_server(("127.0.0.1", 0))
print(f"PORT {listener.getsockname()[1]}", flush=True)
announced = False
while True:
    connection, _ = listener.accept()
    if not announced:  # lets a test act once load is flowing, without sleeping
        print("CONNECTED", flush=True)
        announced = True
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
