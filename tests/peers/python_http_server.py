#!/usr/bin/env python3
"""Python's http.server speaking HTTP/1.1 with keep-alive, as shipped (Nagle on).

send_response/end_headers writes the head in one send and the handler writes the body in
another: the classic server-side Nagle x delayed-ACK stall. --disable-nagle applies the
documented fix (StreamRequestHandler.disable_nagle_algorithm). Prints "PORT <n>" once bound.
"""
import argparse
import http.server
import random
import socket
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--disable-nagle", action="store_true")
parser.add_argument("--body-bytes", type=int, default=13)
parser.add_argument("--bind", default="127.0.0.1")
parser.add_argument("--delay-ms", type=float, default=0, help="think this long before answering")
parser.add_argument("--random-delay-ms", type=float, default=0, help="think a uniform random 0..N ms")
parser.add_argument("--http10", action="store_true", help="HTTP/1.0: close after each response, no Content-Length")
parser.add_argument("--accept-on-sigusr1", action="store_true",
                    help="listen, but accept nothing until SIGUSR1 (a server that accepts late)")
args = parser.parse_args()
BODY = (b"Hello, world!" * (args.body_bytes // 13 + 1))[: args.body_bytes]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0" if args.http10 else "HTTP/1.1"
    disable_nagle_algorithm = args.disable_nagle

    def do_GET(self):
        think_ms = args.delay_ms + random.uniform(0, args.random_delay_ms)
        if think_ms:
            time.sleep(think_ms / 1000)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if not args.http10:
            self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.do_GET()

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()

    def log_message(self, *_):
        pass


class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in args.bind else socket.AF_INET


if args.accept_on_sigusr1:
    # Blocked before the port is printed, so a signal sent as soon as it is read waits here.
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
server = Server((args.bind, 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
if args.accept_on_sigusr1:
    # Connections complete their handshake meanwhile and wait in the listener's queue,
    # owned by no process until they are accepted.
    signal.sigwait({signal.SIGUSR1})
server.serve_forever()
