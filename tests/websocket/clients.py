# SPDX-License-Identifier: MIT
"""examples/chat through python3-websockets 10.4 (asyncio): echo of text
and binary up to the limit (chat --max-message 65536), fragmented
messages, pings, the close handshake, and the server failing the
connection with 1007 (invalid UTF-8), 1009 (over the limit) and 1002 (an
unmasked frame, sent over a raw socket); and a slow peer in the chat room
(a raw client with a 4 KiB receive buffer that reads nothing).  Exits non-zero on the first
failure."""

import asyncio
import base64
import os
import socket
import sys

import websockets
from websockets.frames import OP_TEXT

PORT = int(sys.argv[1])
URL = f"ws://127.0.0.1:{PORT}"
LIMIT = 65536


def check(cond, what):
    if not cond:
        raise SystemExit(f"clients.py: FAILED: {what}")


async def expect_close(ws, code, what):
    try:
        await asyncio.wait_for(ws.recv(), 10)
        check(False, f"{what}: a message instead of close {code}")
    except websockets.ConnectionClosed:
        pass
    check(ws.close_code == code, f"{what}: close code {ws.close_code}, want {code}")


async def echo():
    async with websockets.connect(URL + "/echo", max_size=None) as ws:
        for msg in ["", "hello", "h\u00e9llo \u2603 \U0001f600", "x" * LIMIT]:
            await ws.send(msg)
            check(await ws.recv() == msg, f"text echo of {len(msg)} chars")
        for msg in [b"", bytes(range(256)), os.urandom(LIMIT)]:
            await ws.send(msg)
            check(await ws.recv() == msg, f"binary echo of {len(msg)} bytes")
        # Fragmented: reassembled up to the limit.
        parts = ["frag", "men", "ted" * 1000]
        await ws.send(parts)
        check(await ws.recv() == "".join(parts), "fragmented text")
        await ws.send([b"a" * 30000, b"b" * 35536])
        check(await ws.recv() == b"a" * 30000 + b"b" * 35536, "fragmented binary at the limit")
        # Pings, answered with their payload.
        for payload in [b"", b"p1", b"x" * 125]:
            pong = await ws.ping(payload)
            await asyncio.wait_for(pong, 10)
        # 100 messages in flight at once come back in order.
        for i in range(100):
            await ws.send(f"m{i}")
        for i in range(100):
            check(await ws.recv() == f"m{i}", f"pipelined message {i}")
        await ws.close(4000, "bye")
        check(ws.close_code == 4000 and ws.close_reason == "bye",
              f"close handshake: {ws.close_code} {ws.close_reason!r}")


async def failures():
    async with websockets.connect(URL + "/echo", max_size=None) as ws:
        await ws.write_frame(True, OP_TEXT, b"ok \xc3\x28")
        await expect_close(ws, 1007, "invalid UTF-8")
    async with websockets.connect(URL + "/echo", max_size=None) as ws:
        await ws.send("y" * (LIMIT + 1))
        await expect_close(ws, 1009, "one byte over the limit")
    async with websockets.connect(URL + "/echo", max_size=None) as ws:
        await ws.send(["z" * LIMIT, "z"])
        await expect_close(ws, 1009, "over the limit in fragments")


def raw_handshake(path, rcvbuf=None):
    """A WebSocket client by hand: a socket that has done the handshake,
    and the bytes that came after the 101."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", PORT))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
               f"Upgrade: websocket\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        check(chunk, "handshake answered")
        head += chunk
    check(head.startswith(b"HTTP/1.1 101 "), f"101, got {head[:40]!r}")
    return s, head.split(b"\r\n\r\n", 1)[1]


def read_all(s, rest, reset_ok=False):
    """Reads until EOF (or, with reset_ok, a reset: returns what came)."""
    while True:
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            if not reset_ok:
                raise
            return rest
        if not chunk:
            return rest
        rest += chunk


def frames(data, partial_ok=False):
    """Splits what a server sent into (opcode, payload) frames; with
    partial_ok a cut last frame is left out."""
    out, i = [], 0
    while i < len(data):
        start = i
        if len(data) - i < 2:
            check(partial_ok, "a whole frame header")
            break
        op, n = data[i] & 0x0F, data[i + 1] & 0x7F
        i += 2
        if n == 126:
            n, i = int.from_bytes(data[i:i + 2], "big"), i + 2
        elif n == 127:
            n, i = int.from_bytes(data[i:i + 8], "big"), i + 8
        if len(data) - i < n:
            check(partial_ok, "a whole frame payload")
            i = start
            break
        out.append((op, data[i:i + n]))
        i += n
    return out


def read_until_close(s, rest):
    """Reads frames until the server's close frame, answers it (so the
    server ends the connection at once), then reads to the end; a reset
    ends it too.  Returns (frames, whether the close frame came)."""
    while True:
        got = frames(rest, partial_ok=True)
        if got and got[-1][0] == 8:
            s.sendall(masked(8, got[-1][1][:2]))
            read_all(s, b"", reset_ok=True)
            return got, True
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            return got, False
        if not chunk:
            return got, False
        rest += chunk


async def slow_peer():
    """A member that reads nothing while another sends 16 MiB through the
    room: the server closes it with 1008 rather than buffer, and the sender
    gets every message back.  The slow one, once it reads, finds a prefix
    of the messages in order, then the close frame, unless it took longer
    than chat's close timeout to start reading: then the server dropped it
    (a reset, which may discard what the kernel held for it)."""
    slow, early = raw_handshake("/chat", rcvbuf=4096)
    count, size = 1000, 16384
    async with websockets.connect(URL + "/chat", max_size=None) as fast:
        for i in range(count):
            msg = f"s{i}:".ljust(size, ".")
            await fast.send(msg)
            check(await fast.recv() == msg, f"the sender's own message {i}")
        got, closed = read_until_close(slow, early)
    msgs = got[:-1] if closed else got
    if closed:
        check(got[-1][1] == b"\x03\xf0too slow", f"close 1008, got {got[-1]!r}")
    check(len(msgs) < count, f"a prefix, got {len(msgs)} of {count}")
    for i, (op, payload) in enumerate(msgs):
        check(op == 1 and payload == f"s{i}:".ljust(size, ".").encode(), f"slow message {i}")
    slow.close()
    how = "then 1008" if closed else "then a reset"
    print(f"clients.py: the slow peer got {len(msgs)} of {count} messages, {how}")


def masked(op, payload, fin=True):
    key = os.urandom(4)
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([0x80 | n])
    else:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def close_reason_split():
    """A close frame whose reason is not UTF-8, cut at every byte: always
    1007; a valid one, cut anywhere: always echoed."""
    for reason, want in ((b"ab\xff\xfe", b"\x03\xef"), ("ok \u20ac\u00e9".encode(), None)):
        frame = masked(8, b"\x03\xe8" + reason)
        for cut in range(1, len(frame)):
            s, rest = raw_handshake("/echo")
            # Two sends; the server may still read them at once, which the
            # answer does not depend on (fuzz_websocket splits at random).
            s.sendall(frame[:cut])
            s.sendall(frame[cut:])
            got = frames(read_all(s, rest))
            s.close()
            expect = want if want is not None else b"\x03\xe8" + reason
            check(got == [(8, expect)], f"close reason {reason!r} cut at {cut}: got {got!r}")


async def empty_messages():
    """Empty text and binary messages, through /echo and the room."""
    async with websockets.connect(URL + "/echo") as ws:
        for msg in ["", b""]:
            await ws.send(msg)
            check(await ws.recv() == msg, f"empty {type(msg).__name__} echoed")
    async with websockets.connect(URL + "/chat") as a, websockets.connect(URL + "/chat") as b:
        await a.send("")
        check(await a.recv() == "" and await b.recv() == "", "an empty message in the room")


def unmasked():
    """A frame the client did not mask: 1002, then the server closes."""
    s, rest = raw_handshake("/echo")
    s.sendall(b"\x81\x02hi")
    rest = read_all(s, rest)
    check(rest == b"\x88\x02\x03\xea", f"close 1002 then FIN, got {rest!r}")
    s.close()


async def main():
    await echo()
    await failures()
    unmasked()
    close_reason_split()
    await empty_messages()
    await slow_peer()
    print("clients.py: passed")


asyncio.run(main())
