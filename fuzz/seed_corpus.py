#!/usr/bin/env python3
"""Writes the committed seed inputs, fuzz/corpus/<target>/seed-*, from the wire, scenario and
host unit tests, with each target's header bytes (limits, framing, piece sizes) in front.
Run from anywhere: python3 fuzz/seed_corpus.py"""

import struct
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
PIECES = bytes([0, 2, 6, 12])  # piece sizes 1, 3, 7, 13

HTTP = {
    "content-length": b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!",
    "chunked-then-next": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    b"HTTP/1.1 204 No Content\r\n\r\n",
    "interim": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    "not-modified": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
    "http10-close": b"HTTP/1.0 200 OK\r\n\r\nsome body",
    "early-close": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
    "keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    "garbage": b"SSH-2.0-OpenSSH\r\n\r\n",
    "conflicting-length": b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    "status-999": b"HTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n",
    "chunked-ext-trailer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
    b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n",
    # The same head again (recalled, not parsed, when a read begins with it), then one that
    # differs in a byte and one that begins like it and goes on.
    "repeated-heads": b"HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 2\r\n\r\nhi" * 2
    + b"HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\n\r\nhey"
    + b"HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\nConnection: close\r\n\r\nhey",
}
# [0] HEAD bit, [1] head limit / 2, [2..4] response limit (0xffff: none), [4..8] pieces.
HTTP_HEADERS = [bytes([0, 255, 0xFF, 0xFF]), bytes([0, 20, 0, 90]), bytes([1, 255, 0, 60])]

RAW = {  # name: (framing byte, argument bytes [1..6], stream)
    "line": (0, b"\0" * 5, b"+PONG\n+PONG\n"),
    "crlf": (1, b"\0" * 5, b"+OK\r\n-ERR x\r\n"),
    "delim": (2, b"\x03ND\r\n", b"VALUE x 0 1\r\nEENEND\r\nEND\r\n"),
    "fixed": (3, b"\x00\x04\0\0\0", b"abcdeabcde"),
    "len16be": (4, b"\0" * 5, b"\x00\x03abc\x00\x00"),
    "len32be": (5, b"\0" * 5, b"\x00\x00\x00\x04abcd"),
    "len32le": (6, b"\0" * 5, b"\x04\x00\x00\x00abcd"),
    "len32be-inclusive": (5 | 0x80, b"\0" * 5, b"\x00\x00\x00\x06ab"),
    "issue-split": (5, b"\0" * 5, bytes.fromhex("0000000347 4b0d4b0d0a")),
}
RAW_LIMITS = [b"\xff\xff", b"\x00\x08"]

CHUNKED = {
    "ext-trailer": b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n",
    "extra": b"0\r\n\r\nEXTRA",
    "bad-size": b"zz\r\n",
    "overflow": b"11111111111111111\r\n",
    "missing-crlf": b"1\r\nab",
    "leading-zeros": b"00000000000000002\r\nab\r\n0\r\n\r\n",
}

SCENARIO = {
    "site": b"""[[request]]
name = "main page"
path = "/"
weight = 3

[[request]]
name = "add job"
path = "/jobs"
form = { name = "nightly build", branch = "main" }

[[request]]
name = "api"
method = "put"
path = "/api/x?y=1"
json = { n = 1, tags = ["a"] }
headers = { X-Trace = "1" }
""",
    "sequence": b'mode = "sequence"\n[[request]]\nname = "a"\npath = "/"\nbody = "x"\n',
    "errors": b'[[request]]\nname = "a"\npath = "x"\nbody = "@missing"\nbogus = 1\n',
}

# nodelay inspect / fix arguments, as the host crate's unit test spells them.
# --fail-if thresholds, each kind once, and mistakes.
THRESHOLD = {
    "p99": b"p99 > 50ms",
    "first-byte": b"first_byte.p99.9 >= 250us",
    "errors-share": b"errors > 1%",
    "rps": b"rps < 2000/s",
    "slower": b"slower.rps > 5%",
    "stall": b"stall",
    "finding": b"slow-first-byte",
    "no-unit": b"p99 > 50",
    "no-metric": b"> 5ms",
}
SOCKET_TARGET = {"pid": b"4242", "port": b":8080", "port-zero": b":0", "too-big": b":65536", "word": b"abc"}


# Streams of requests for the request framer (nodelay proxy): bodies by length and chunked,
# HEAD and CONNECT, pipelined.
REQUESTS = {
    "get-pipelined": b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
    "post-length": b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n",
    "post-chunked": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "head-connect": b"HEAD / HTTP/1.1\r\n\r\nCONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
}



def sock_diag_receive():
    """One receive of a dump answering request 1: a listener on 127.0.0.1:8080 (inode 12345),
    a TIME-WAIT socket with 59 s left, then NLMSG_DONE (linux/inet_diag.h, native order)."""
    def socket(state, timer, sport, dport, expires_ms, inode):
        body = struct.pack("=BBBB", 2, state, timer, 0) + struct.pack(">HH", sport, dport)
        body += bytes([127, 0, 0, 1]) + bytes(12) + (bytes([127, 0, 0, 1]) if dport else bytes(4)) + bytes(12)
        body += struct.pack("=I", 0) + bytes(8) + struct.pack("=IIIII", expires_ms, 0, 0, 0, inode)
        return struct.pack("=IHHII", 16 + len(body), 20, 2, 1, 0) + body
    done = struct.pack("=IHHII", 20, 3, 2, 1, 0) + struct.pack("=i", 0)
    return socket(10, 0, 8080, 0, 0, 12345) + socket(6, 3, 40000, 8080, 59000, 0) + done


SOCKET_TABLE = {  # the fuzz input is (sequence: u32 little-endian, bytes)
    "sock-diag-dump": struct.pack("<I", 1) + sock_diag_receive(),
    "proc-line": struct.pack("<I", 1)
    + b"   3: 0100007F:46A1 0100007F:C944 06 00000000:00000000 03:0000175B 00000000     0        0 0 3 0\n",
    "snmp": struct.pack("<I", 1)
    + b"Ip: Forwarding DefaultTTL\nIp: 1 64\n"
    + b"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails\n"
    + b"Tcp: 1 200 120000 -1 3158 3114 5\nUdp: InDatagrams NoPorts\nUdp: 5 6\n",
}

def h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


# What nodelay sends (preface, SETTINGS, requests) and what a server answers, as in the engine's
# tap tests: a window used up and reopened, the connection window, a reset, a GOAWAY.
H2_SENT = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, struct.pack(">HI", 4, 1_000_000))
           + h2_frame(1, 5, 1, b"hpack") + h2_frame(1, 5, 3, b"hpack") + h2_frame(8, 0, 1, struct.pack(">I", 65535)))
H2_RECEIVED = {
    "window": h2_frame(4, 0, 0, struct.pack(">HIHI", 3, 8, 4, 65535)) + h2_frame(1, 4, 1, b"head")
    + h2_frame(0, 0, 1, bytes(35535)) + h2_frame(0, 0, 3, bytes(30000)) + h2_frame(0, 1, 3, b"x" * 10)
    + h2_frame(0, 1, 1, b"y" * 10),
    "reset-goaway": h2_frame(3, 0, 1, struct.pack(">I", 7)) + h2_frame(7, 0, 0, struct.pack(">II", 3, 0))
    + h2_frame(1, 5, 3, b"trailers-only"),
}

# What a server answers the fuzzed session (two POSTs on streams 1 and 3), with real HPACK:
# 0x88 is `:status: 200`; the literal is `grpc-status: 0`.
GRPC_STATUS = bytes([0x00, 11]) + b"grpc-status" + bytes([1]) + b"0"
H2_SESSION = {
    "answers": h2_frame(4, 0, 0, struct.pack(">HI", 3, 100)) + h2_frame(4, 1, 0, b"")
    + h2_frame(1, 4, 1, b"\x88") + h2_frame(0, 1, 1, b"ok") + h2_frame(8, 0, 0, struct.pack(">I", 1000))
    + h2_frame(1, 5, 3, b"\x88" + GRPC_STATUS),
    "goaway-refused": h2_frame(4, 0, 0, struct.pack(">HI", 3, 100)) + h2_frame(7, 0, 0, struct.pack(">II", 1, 0))
    + h2_frame(1, 5, 1, b"\x88") + h2_frame(3, 0, 3, struct.pack(">I", 7)),
}


def write(target: str, name: str, data: bytes) -> None:
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"seed-{name}").write_bytes(data)


def main() -> None:
    for name, stream in HTTP.items():
        for i, header in enumerate(HTTP_HEADERS):
            write("http_response", f"{name}-{i}", header + PIECES + stream)
    for name, (kind, argument, stream) in RAW.items():
        for i, limit in enumerate(RAW_LIMITS):
            write("raw_response", f"{name}-{i}", bytes([kind]) + argument + limit + PIECES + stream)
    for name, stream in CHUNKED.items():
        write("chunked", name, PIECES + stream)
    for name, text in SCENARIO.items():
        write("scenario", name, text)
    for name, text in SOCKET_TARGET.items():
        write("socket_target", name, text)
    for name, text in THRESHOLD.items():
        write("threshold", name, text)
    for name, stream in REQUESTS.items():
        write("request_framer", name, PIECES + stream)
    for name, data in SOCKET_TABLE.items():
        write("socket_table", name, data)
    for name, received in H2_RECEIVED.items():
        write("h2_frames", name, struct.pack(">H", len(H2_SENT)) + PIECES + H2_SENT + received)
    for name, received in H2_SESSION.items():
        write("h2_session", name, PIECES + received)


if __name__ == "__main__":
    main()
