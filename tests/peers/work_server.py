#!/usr/bin/env python3
"""A server whose handler costs time in one of two ways: --mode burn spends --ms of CPU
(a loop on time.thread_time(), the thread's own CPU clock), --mode sleep waits --ms without
using the CPU. Both look alike from the client (p50 ~ --ms); only the server's CPU time tells
a CPU-bound server from a waiting one.

HTTP/1.1 with keep-alive and TCP_NODELAY on (disable_nagle_algorithm), and the head and body
leave in one send (a buffered wfile, flushed once per request by http.server), so Nagle and
delayed ACKs play no part. Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening.
"""
import argparse
import http.server
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["burn", "sleep"], required=True)
parser.add_argument("--ms", type=float, default=2.0, help="CPU to burn or time to sleep per request")
args = parser.parse_args()
BODY = b'{"ok":true}\n'


def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


WORK = burn if args.mode == "burn" else time.sleep


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    # Buffered: the head and the body go out in one send when handle_one_request flushes.
    wbufsize = 64 * 1024

    def do_GET(self):
        WORK(args.ms / 1000)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *_):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
