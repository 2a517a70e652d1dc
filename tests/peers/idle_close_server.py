#!/usr/bin/env python3
"""An HTTP/1.1 keep-alive server that closes idle connections WITHOUT announcing it: no
Keep-Alive header tells the client the limit. Built on socketserver.ThreadingTCPServer and
http.server.BaseHTTPRequestHandler with protocol_version "HTTP/1.1"; the handler's timeout
(StreamRequestHandler.timeout, the connection's socket timeout) is --idle-s, so a connection
that sends no new request for that long is closed (FIN). A client that reuses the connection
just after that meets the close on its next request.

Answers GET with 200 "Hello, world!" and Content-Length. TCP_NODELAY is on
(disable_nagle_algorithm) so it has no other latency problem. Binds 127.0.0.1 port 0 and
prints "PORT <n>" once listening; runs until killed.

Usage: idle_close_server.py [--idle-s SECONDS (default 2.0)]
"""
import argparse
import http.server
import socketserver

parser = argparse.ArgumentParser()
parser.add_argument("--idle-s", type=float, default=2.0)
args = parser.parse_args()
BODY = b"Hello, world!"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = args.idle_s
    disable_nagle_algorithm = True

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *_):
        pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
