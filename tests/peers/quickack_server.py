#!/usr/bin/env python3
"""A keep-alive HTTP/1.1 server that ACKs every segment at once (TCP_QUICKACK after each
recv) and answers in one write with TCP_NODELAY: across a path, a client that writes its
request head and body in two sends with Nagle on waits exactly one round trip for this
server's ACK of the head, never a delayed-ACK timer. Prints "PORT <n>" once bound.
"""
import argparse
import socket
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--bind", default="127.0.0.1")
args = parser.parse_args()
BODY = b"Hello, world!"


def quickack(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


def serve(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = b""
    try:
        while True:
            quickack(sock)
            chunk = sock.recv(65536)
            if not chunk:
                return
            buffer += chunk
            while b"\r\n\r\n" in buffer:
                head, rest = buffer.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                    if name.strip().lower() == b"expect" and value.strip().lower() == b"100-continue":
                        sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                while len(rest) < length:
                    quickack(sock)
                    more = sock.recv(65536)
                    if not more:
                        return
                    rest += more
                buffer = rest[length:]
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))
    except OSError:
        return
    finally:
        sock.close()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((args.bind, 0))
listener.listen(64)
print(f"PORT {listener.getsockname()[1]}", flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
