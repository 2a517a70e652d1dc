#!/usr/bin/env python3
"""Python's http.server behind the standard ssl module, HTTP/1.1 with keep-alive (Nagle on).

As in python_http_server.py, the head and the body go out in two writes, so two SSL_write
calls and two TLS records: a server-side Nagle x delayed-ACK stall seen through TLS.
--disable-nagle applies the documented fix (disable_nagle_algorithm). Prints "PORT <n>".
"""
import argparse
import http.server
import ssl
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--cert", required=True, help="PEM certificate chain")
parser.add_argument("--key", required=True, help="PEM private key")
parser.add_argument("--disable-nagle", action="store_true")
parser.add_argument("--body-bytes", type=int, default=13)
parser.add_argument("--bind", default="127.0.0.1")
args = parser.parse_args()
BODY = (b"Hello, world!" * (args.body_bytes // 13 + 1))[: args.body_bytes]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = args.disable_nagle

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.do_GET()

    def log_message(self, *_):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that gives up on the handshake (an untrusted certificate) is expected.
        pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(args.cert, args.key)
server = Server((args.bind, 0), Handler)
# Handshakes happen in each connection's thread, not in accept().
server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
print(f"PORT {server.server_address[1]}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
