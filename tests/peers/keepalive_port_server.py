"""A service as a CI job starts one: Python's http.server speaking HTTP/1.1 with keep-alive
and TCP_NODELAY (each response in one write), on the port given by --port, on 127.0.0.1.
Stands for "your service" in docs/ci.md's jobs (crates/cli/tests/suite/ci_jobs.rs)."""

import argparse
import http.server

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
BODY = b"Hello, world!"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(BODY)
        self.wfile.write(head + BODY)

    def log_message(self, *_):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
