#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The PROXY protocol before TLS behind a real HAProxy (ctest haproxy_tls).

HAProxy passes TLS through (mode tcp) to one examples/hello that serves
HTTPS with --proxy-from 127.0.0.2/32, sending a PROXY v2 header from
127.0.0.2 before each connection's ClientHello.  Clients connect to HAProxy
from 127.0.0.1 and 127.0.0.5 over TLS, verifying hello's certificate (made
here with the openssl CLI); every response must be right, and hello's
access log must name each client, never the balancer.  Everything on
loopback; every wait is bounded.

Usage: tls.py --hello PATH [--haproxy PATH]
"""
import argparse
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

CLIENTS = ("127.0.0.1", "127.0.0.5")
BALANCER = "127.0.0.2"
REQUESTS = 20  # per client


def fail(msg):
    print("haproxy_tls: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if proc.poll() is not None:
            fail("%s exited with %d" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    fail("%s does not listen on %d" % (what, port))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hello", required=True)
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hroute-haproxy-tls.")
    procs = []
    try:
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
        backend, front = free_port(), free_port()
        log = os.path.join(work, "access.log")
        hello = subprocess.Popen([args.hello, "--host", "127.0.0.1", "--port", str(backend),
                                  "--tls-cert", cert, "--tls-key", key, "--proxy-from",
                                  BALANCER + "/32", "--access-log", log],
                                 stderr=subprocess.DEVNULL)
        procs.append(hello)
        cfg = os.path.join(work, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write("global\n    maxconn 200\n"
                    "defaults\n    mode tcp\n    timeout connect 2s\n"
                    "    timeout client 10s\n    timeout server 10s\n"
                    "frontend tls\n    bind 127.0.0.1:%d\n    default_backend hello\n"
                    "backend hello\n    server h 127.0.0.1:%d send-proxy-v2 source %s\n"
                    % (front, backend, BALANCER))
        haproxy = subprocess.Popen([args.haproxy, "-f", cfg, "-db"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(haproxy)
        wait_listening(backend, hello, "hello")
        wait_listening(front, haproxy, "haproxy")
        ctx = ssl.create_default_context(cafile=cert)
        for client in CLIENTS:
            for i in range(REQUESTS):
                c = http.client.HTTPSConnection("127.0.0.1", front, timeout=5, context=ctx,
                                                source_address=(client, 0))
                c.request("GET", "/hello/%s-%d" % (client, i))
                r = c.getresponse()
                body = r.read().decode()
                c.close()
                if r.status != 200 or body != "Hello, %s-%d" % (client, i):
                    fail("%s request %d: %d %r" % (client, i, r.status, body))
        hello.terminate()
        hello.wait(timeout=15)
        seen = {}
        with open(log) as f:
            for line in f:
                peer, target = line.split(" ")[0], line.split('"')[1].split(" ")[1]
                if not target.startswith("/hello/" + peer + "-"):
                    fail("access log names %s for %s (the balancer is %s)"
                         % (peer, target, BALANCER))
                seen[peer] = seen.get(peer, 0) + 1
        if seen != {c: REQUESTS for c in CLIENTS}:
            fail("access log lines per client: %r" % seen)
        print("haproxy_tls: %d TLS connections through HAProxy (mode tcp, send-proxy-v2); "
              "hello's access log named each client: %r" % (len(CLIENTS) * REQUESTS, seen))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


main()
