# A WSGI application that answers every request with BODY_BYTES bytes (default 25000) as an
# iterable of two parts: a template's first block, then the rest, as frameworks that render
# or stream in pieces hand them to uWSGI. uWSGI writes the head with the first part, then
# the rest; with Nagle on, the rest's last, sub-segment piece waits for the client's ACK of
# the first write (crates/cli/tests/suite/wan_paths.rs). `uwsgi --env BODY_BYTES=N` sets the size.
import os

SIZE = int(os.environ.get("BODY_BYTES", "25000"))
BODY = (b"Hello World\n" * (SIZE // 12 + 1))[:SIZE]
FIRST_PART = 1000


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))])
    return [BODY[:FIRST_PART], BODY[FIRST_PART:]]
