#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Parses hello's GET /metrics with Debian's python3-prometheus-client.

Starts examples/hello (--stats --threads 2, port 0, --drain-grace), makes
known requests, then checks the exposition as Prometheus reads it: every
family has one type, the hello route's counters and histogram have exactly
the values the traffic gives (cumulative buckets, +Inf == _count == the
2xx count), server counters agree, and after SIGTERM hroute_draining is 1
and /readyz answers 503.  Everything on loopback; every wait is bounded.

Usage: run.py PATH_TO_HELLO
"""
import os
import signal
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hellopy  # noqa: E402  (tests/support/hellopy.py)

DEADLINE_S = 20


def fail(msg):
    print("metrics: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)






def scrape(port):
    status, ctype, text = hellopy.get(port, "/metrics")
    if status != 200 or ctype != "text/plain; version=0.0.4; charset=utf-8":
        fail("GET /metrics: %d %s" % (status, ctype))
    families = {}
    for fam in text_string_to_metric_families(text):
        if fam.name in families:
            fail("family %s twice" % fam.name)
        families[fam.name] = fam
    return families


def samples(families, name, **labels):
    out = []
    for fam in families.values():
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                out.append(s)
    return out


def one(families, name, **labels):
    found = samples(families, name, **labels)
    if len(found) != 1:
        fail("%s%r: %d samples" % (name, labels, len(found)))
    return found[0].value


def main():
    hello = sys.argv[1]
    p, port = hellopy.start(hello, "--threads", "2", "--stats", "--drain-grace", "10000")
    try:
        for _ in range(7):
            if hellopy.get(port, "/hello/x")[0] != 200:
                fail("GET /hello/x")
        for _ in range(3):
            if hellopy.get(port, "/nowhere")[0] != 404:
                fail("GET /nowhere")
        for _ in range(2):
            if hellopy.get(port, "/healthz")[:1] != (200,):
                fail("GET /healthz")
        route = {"host": "", "route": "/hello/:name", "method": "GET"}
        # The counters of a response are updated as it completes, which
        # may be just after the client read it: scrape until they are in.
        end = time.monotonic() + DEADLINE_S
        while True:
            fams = scrape(port)
            if one(fams, "hroute_route_duration_seconds_count", **route) == 7 and \
               one(fams, "hroute_route_requests_total", host="", route="/healthz",
                   method="GET") == 2 and one(fams, "hroute_bad_requests_total") == 3:
                break
            if time.monotonic() > end:
                fail("counters never reached the traffic's figures")
            time.sleep(0.05)
        types = {f.name: f.type for f in fams.values()}
        for name, want in [("hroute_requests", "counter"), ("hroute_connections_active", "gauge"),
                           ("hroute_route_requests", "counter"),
                           ("hroute_route_responses", "counter"),
                           ("hroute_route_duration_seconds", "histogram"),
                           ("hroute_draining", "gauge")]:
            if types.get(name) != want:
                fail("family %s: type %s, want %s" % (name, types.get(name), want))
        if one(fams, "hroute_route_requests_total", **route) != 7:
            fail("route requests")
        for cls, want in [("2xx", 7), ("4xx", 0), ("5xx", 0), ("none", 0)]:
            if one(fams, "hroute_route_responses_total", status=cls, **route) != want:
                fail("route responses %s" % cls)
        buckets = samples(fams, "hroute_route_duration_seconds_bucket", **route)
        if len(buckets) != 24 or buckets[-1].labels["le"] != "+Inf":
            fail("%d buckets" % len(buckets))
        values = [b.value for b in buckets]
        bounds = [float(b.labels["le"]) for b in buckets[:-1]]
        if values != sorted(values) or values[-1] != 7:
            fail("buckets not cumulative up to 7: %r" % values)
        if bounds != [2 ** i / 1e6 for i in range(23)]:
            fail("bucket bounds: %r" % bounds)
        total = one(fams, "hroute_route_duration_seconds_sum", **route)
        if not 0 < total < 7 * 5:
            fail("duration sum %r" % total)
        # Every request above was answered: 7 + 3 + 2 and the scrapes
        # before the last one (the last one is still under way).
        scrapes = len(samples(fams, "hroute_route_requests_total", route="/metrics"))
        if scrapes != 1:
            fail("the metrics route is listed %d times" % scrapes)
        metrics_served = one(fams, "hroute_route_requests_total", host="", route="/metrics",
                             method="GET")
        if one(fams, "hroute_requests_total") != 12 + metrics_served - 1:
            fail("hroute_requests_total %r, /metrics served %r" %
                 (one(fams, "hroute_requests_total"), metrics_served))
        if one(fams, "hroute_draining") != 0 or hellopy.get(port, "/readyz")[0] != 200:
            fail("ready before the drain")
        p.send_signal(signal.SIGTERM)
        end = time.monotonic() + DEADLINE_S
        while hellopy.get(port, "/readyz")[0] != 503:
            if time.monotonic() > end:
                fail("/readyz never answered 503 while draining")
            time.sleep(0.02)
        if one(scrape(port), "hroute_draining") != 1:
            fail("hroute_draining is not 1 while draining")
        print("metrics: %d families parsed, hello route 7 requests, %.6f s in all" %
              (len(fams), total))
    finally:
        p.kill()
        p.wait(timeout=DEADLINE_S)


main()
