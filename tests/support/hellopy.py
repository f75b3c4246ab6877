# SPDX-License-Identifier: MIT
"""What the Python harnesses that drive examples/hello share
(tests/metrics/run.py, tests/hello/signals.py): starting it on a free
loopback port, and one HTTP request."""
import http.client
import re
import subprocess


def start(hello, *args):
    """Starts hello on 127.0.0.1, port 0, with `args`; returns (process,
    port) once it listens, or raises RuntimeError with its first line."""
    p = subprocess.Popen([hello, "--host", "127.0.0.1", "--port", "0", *args],
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on [^:]+:(\d+)", line)
    if not m:
        p.kill()
        p.wait()
        raise RuntimeError("hello did not start: " + line)
    return p, int(m.group(1))


def get(port, path, method="GET"):
    """One request on a connection of its own: (status, Content-Type, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), body.decode()
