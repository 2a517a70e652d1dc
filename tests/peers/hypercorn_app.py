"""An ASGI app served by hypercorn (pip `hypercorn`, its HTTP/2 from the `h2` package):
h2c by prior knowledge on plain TCP, beside HTTP/1.1.

hypercorn cannot listen on port 0 and say which port it got, so this script binds
127.0.0.1:0 itself, listens, and hands the socket to hypercorn as `fd://N` (connections
made before hypercorn's loop runs wait in the backlog). TCP_NODELAY is set on that socket
as hypercorn sets it on the sockets it binds itself (accepted sockets inherit it).

Every path answers --body-bytes bytes of 'x' after --delay-ms (an asyncio sleep);
--max-streams is hypercorn's h2_max_concurrent_streams, the SETTINGS_MAX_CONCURRENT_STREAMS
it advertises. Prints "PORT <n>" once listening and serves until killed.
"""

import argparse
import asyncio
import socket

from hypercorn.asyncio import serve
from hypercorn.config import Config


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body-bytes", type=int, default=13, help="response body size in bytes")
    parser.add_argument("--max-streams", type=int, default=None, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    parser.add_argument("--delay-ms", type=int, default=0, help="wait before each answer, milliseconds")
    return parser.parse_args()


def make_app(body, delay_s):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        # A request body (a POST) is read whole first, as a real handler would.
        while (await receive()).get("more_body"):
            pass
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def main():
    args = parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None
    if args.max_streams is not None:
        config.h2_max_concurrent_streams = args.max_streams
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    asyncio.run(serve(make_app(b"x" * args.body_bytes, args.delay_ms / 1000), config))


if __name__ == "__main__":
    main()
