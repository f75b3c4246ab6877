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
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hellopy  # noqa: E402  (tests/support/hellopy.py)

GRACE_MS = 1500
DEADLINE_S = 20


def fail(msg):
    print("hello signals: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)




def status(port, path):
    return hellopy.get(port, path)[0]


def sighup_while_draining(hello, threads):
    p, port = hellopy.start(hello, "--threads", str(threads), "--drain-grace", str(GRACE_MS))
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
