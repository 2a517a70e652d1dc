"""A keep-alive HTTP/1.1 proxy that holds each request --delay-ms before passing it on to the
upstream at --upstream PORT (on 127.0.0.1), one upstream connection per client connection:
a server made slower by a known amount, for the regression gate's tests (nginx-light has no
echo_sleep). GETs only, responses framed by Content-Length, TCP_NODELAY both ways. Prints
"PORT n" once it listens."""

import argparse
import asyncio
import socket

parser = argparse.ArgumentParser()
parser.add_argument("--upstream", type=int, required=True)
parser.add_argument("--delay-ms", type=float, default=2.0)
args = parser.parse_args()


def no_delay(writer):
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def relay(client_reader, client_writer):
    no_delay(client_writer)
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", args.upstream)
    no_delay(upstream_writer)
    try:
        while True:
            request = await client_reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(args.delay_ms / 1000)
            upstream_writer.write(request)
            head = await upstream_reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await upstream_reader.readexactly(length)
            client_writer.write(head + body)
            await client_writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        client_writer.close()
        upstream_writer.close()


async def main():
    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


asyncio.run(main())
