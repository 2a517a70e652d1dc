# A WSGI application as uWSGI's quickstart serves it (`uwsgi --http :PORT --wsgi-file
# app.py`), with a Content-Length as Flask and Django set one. uWSGI's HTTP router then
# closes the connection after every response without a `Connection: close`: a keep-alive
# client's next request on it fails (crates/cli/tests/suite/uwsgi.rs).
BODY = b"Hello World\n"


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))])
    return [BODY]
