#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""examples/hello's signals while it drains (SIGTERM, --drain-grace).

For --threads 1 (attached) and 2 (worker threads): after SIGTERM /readyz
answers 503 and the process keeps serving for the grace period; a SIGHUP
meanwhile (a certificate renewal hook: hello reloads its TLS files on
SIGHUP) must not end it, and once the grace period is over it exits with
status 0.  Everything on loopback; every wait is bounded.

Usage: signals.py PATH_TO_HELLO
"""
import http.client
import re
import signal
import subprocess
import sys
import time

GRACE_MS = 1500
DEADLINE_S = 20


def fail(msg):
    print("hello signals: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def start(hello, threads):
    p = subprocess.Popen([hello, "--host", "127.0.0.1", "--port", "0", "--threads",
                          str(threads), "--drain-grace", str(GRACE_MS)],
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on [^:]+:(\d+)", line)
    if not m:
        p.kill()
        fail("hello did not start: " + line)
    return p, int(m.group(1))


def status(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def sighup_while_draining(hello, threads):
    p, port = start(hello, threads)
    try:
        p.send_signal(signal.SIGTERM)
        end = time.monotonic() + DEADLINE_S
        while status(port, "/readyz") != 503:
            if time.monotonic() > end:
                fail("threads %d: /readyz never answered 503" % threads)
            time.sleep(0.02)
        p.send_signal(signal.SIGHUP)
        time.sleep(0.2)
        if p.poll() is not None:
            fail("threads %d: SIGHUP during the drain ended hello (status %d)" %
                 (threads, p.returncode))
        if status(port, "/readyz") != 503:
            fail("threads %d: not serving after SIGHUP" % threads)
        try:
            rc = p.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            fail("threads %d: hello did not exit after the grace period" % threads)
        if rc != 0:
            fail("threads %d: exit status %d" % (threads, rc))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=DEADLINE_S)


def main():
    for threads in (1, 2):
        sighup_while_draining(sys.argv[1], threads)
    print("hello signals: SIGHUP during the drain, threads 1 and 2: served, exit 0")


main()
