#!/usr/bin/env python3
"""A small CI-dashboard web app, the kind timed with hyperfine around wget: a main page, a page
per build, a form page, and a form POST that adds a job. Standard library only; HTTP/1.1 with
keep-alive and TCP_NODELAY, so it answers in well under a millisecond. Prints "PORT <n>".

GET /jobs.count returns the number of jobs added, so tests can check what the server received.
"""
import html
import http.server
import threading
import urllib.parse

BUILDS = {n: f"build {n}: {'passed' if n % 3 else 'failed'}" for n in range(1, 51)}
JOBS = []
LOCK = threading.Lock()


class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def reply(self, status, body, content_type="text/html; charset=utf-8"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/":
            with LOCK:
                jobs = len(JOBS)
            items = "".join(f'<li><a href="/build/{n}">{html.escape(t)}</a></li>' for n, t in BUILDS.items())
            self.reply(200, f"<h1>Builds</h1><p>{jobs} jobs queued</p><ul>{items}</ul>")
        elif path.startswith("/build/") and path[7:].isdigit() and int(path[7:]) in BUILDS:
            self.reply(200, f"<h1>{html.escape(BUILDS[int(path[7:])])}</h1><pre>log...</pre>")
        elif path == "/form":
            self.reply(200, '<form method="post" action="/jobs"><input name="name"><input name="branch"></form>')
        elif path == "/jobs.count":
            with LOCK:
                self.reply(200, str(len(JOBS)), "text/plain")
        else:
            self.reply(404, "not found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        if urllib.parse.urlsplit(self.path).path != "/jobs" or "name" not in form:
            self.reply(400, "bad request")
            return
        with LOCK:
            JOBS.append((form["name"][0], form.get("branch", ["main"])[0]))
        self.send_response(303)
        self.send_header("Location", "/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), App)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
