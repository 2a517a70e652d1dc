#!/usr/bin/env python3
"""Python's http.server and `Expect: 100-continue`. BaseHTTPRequestHandler only answers the
expectation (handle_expect_100, "HTTP/1.1 100 Continue") when its protocol_version is
HTTP/1.1 or later; at its default, HTTP/1.0, it ignores the header and waits for the body.
A client that sent `Expect: 100-continue` and holds its body back until `100 Continue`
therefore waits out its own timeout (curl: 1 s) on every such request. curl sends the
header by itself for a body over 1 MiB (older curl: over 1024 bytes), or for any size
with -H 'Expect: 100-continue'. With --protocol HTTP/1.1 the 100 Continue goes out at once;
a client that sends no Expect header (curl -H 'Expect:') is fast against both.

do_POST reads exactly Content-Length bytes of body and answers 200 with a small body and
Content-Length; do_GET answers the same. TCP_NODELAY is on (disable_nagle_algorithm) so
Nagle plays no part. Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening; runs
until killed.

Usage: expect_server.py [--protocol HTTP/1.0|HTTP/1.1]   (default HTTP/1.0, the library's)
"""
import argparse
import http.server

parser = argparse.ArgumentParser()
parser.add_argument("--protocol", choices=["HTTP/1.0", "HTTP/1.1"], default="HTTP/1.0")
args = parser.parse_args()
BODY = b"Hello, world!"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = args.protocol
    disable_nagle_algorithm = True

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(remaining)
            if not chunk:
                return
            remaining -= len(chunk)
        self.do_GET()

    def log_message(self, *_):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
