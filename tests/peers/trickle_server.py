#!/usr/bin/env python3
"""A server that sends each response body in --pieces writes with --pause-ms between them,
TCP_NODELAY on: no Nagle, no delayed ACK, only short pauses of its own that add up (four
10 ms pauses make a 42 ms response whose every pause is under a stall's 25 ms).

HTTP/1.1 with keep-alive. --status answers with that status; --error-every K makes every
K-th response a --status one and the others 200. Binds 127.0.0.1 port 0 and prints
"PORT <n>" once listening.
"""
import argparse
import http.server
import itertools
import time

parser = argparse.ArgumentParser()
parser.add_argument("--pieces", type=int, default=1, help="writes per body")
parser.add_argument("--pause-ms", type=float, default=0.0, help="pause before each piece after the first")
parser.add_argument("--status", type=int, default=200)
parser.add_argument("--error-every", type=int, default=0, help="only every K-th response gets --status")
args = parser.parse_args()
PIECE = b"0123456789abcdef"
counter = itertools.count(1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        n = next(counter)
        status = args.status if args.error_every == 0 or n % args.error_every == 0 else 200
        body = PIECE * args.pieces
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(args.pieces):
            if i:
                time.sleep(args.pause_ms / 1000)
            self.wfile.write(PIECE)
            self.wfile.flush()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.do_GET()

    do_PUT = do_POST

    def log_message(self, *_):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
