# SPDX-License-Identifier: MIT
"""permessage-deflate (RFC 7692) between examples/chat and
python3-websockets 10.4, which offers it by default ("permessage-deflate;
client_max_window_bits"): the agreed parameters as the client reads them,
echo of compressible and incompressible text and binary, fragments, many
messages in a row (with context takeover each refers back to the last),
and 1009 for a message that is small on the wire but over the limit once
inflated.  Usage: deflate.py PORT MODE, MODE "on" or "takeover" as chat's
--deflate.  Exits non-zero on the first failure."""

import asyncio
import os
import sys

import websockets
from websockets.extensions.permessage_deflate import PerMessageDeflate

PORT = int(sys.argv[1])
MODE = sys.argv[2]
URL = f"ws://127.0.0.1:{PORT}/echo"
LIMIT = 65536


def check(cond, what):
    if not cond:
        raise SystemExit(f"deflate.py ({MODE}): FAILED: {what}")


async def echo():
    async with websockets.connect(URL, max_size=None) as ws:
        ext = [e for e in ws.protocol.extensions if isinstance(e, PerMessageDeflate)] \
            if hasattr(ws, "protocol") else \
            [e for e in ws.extensions if isinstance(e, PerMessageDeflate)]
        check(len(ext) == 1, f"permessage-deflate agreed: {ws.extensions!r}")
        pmd = ext[0]
        if MODE == "on":
            check(pmd.remote_no_context_takeover and pmd.local_no_context_takeover,
                  "no context takeover either way")
        else:
            check(not pmd.remote_no_context_takeover and not pmd.local_no_context_takeover,
                  "context takeover both ways")
            check(pmd.remote_max_window_bits == 12 and pmd.local_max_window_bits == 12,
                  f"12-bit windows: {pmd.remote_max_window_bits} {pmd.local_max_window_bits}")
        texts = ["", "hi", "h\u00e9llo \u2603 " * 50, "x" * LIMIT,
                 "".join(f"line {i}: the quick brown fox\n" for i in range(1000))[:LIMIT]]
        for msg in texts:
            await ws.send(msg)
            check(await ws.recv() == msg, f"text echo of {len(msg)} chars")
        for msg in [b"", bytes(range(256)) * 4, os.urandom(LIMIT), b"\0" * LIMIT]:
            await ws.send(msg)
            check(await ws.recv() == msg, f"binary echo of {len(msg)} bytes")
        parts = ["frag", "men", "ted" * 1000]
        await ws.send(parts)
        check(await ws.recv() == "".join(parts), "fragmented text")
        # In a row: with takeover each message refers back to the ones before.
        for i in range(200):
            await ws.send(f"message {i} of a long conversation " * 5)
        for i in range(200):
            check(await ws.recv() == f"message {i} of a long conversation " * 5,
                  f"message {i} in a row")
        await ws.close(1000)
        check(ws.close_code == 1000, f"close handshake: {ws.close_code}")


async def over_the_limit():
    async with websockets.connect(URL, max_size=None) as ws:
        await ws.send("y" * (LIMIT + 1))  # a few hundred bytes on the wire
        try:
            await asyncio.wait_for(ws.recv(), 10)
            check(False, "a message instead of close 1009")
        except websockets.ConnectionClosed:
            pass
        check(ws.close_code == 1009, f"close {ws.close_code}, want 1009")


async def main():
    await echo()
    await over_the_limit()
    print(f"deflate.py ({MODE}): passed")


asyncio.run(main())
