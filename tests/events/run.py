#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""examples/events with a real client: Python's http.client reading the
event stream as it comes, parsed as the HTML standard's EventSource parses
it (field lines, comments, the blank line that dispatches an event).

Starts events (port 0, --interval-ms 100, --heartbeat-ms 10): GET /clock
answers text/event-stream; three "tick" events come one by one with ids 1,
2, 3 and an ISO 8601 UTC time each, with heartbeat comments between them
(the heartbeat's timer is due long before the next tick); a client that
reconnects with Last-Event-ID: 41 gets 42 next; a client that leaves in the
middle does not stop the server.  Then SIGTERM: the process ends the stream
still open and exits 0 (under ASan: without a leak).  Everything on
loopback; every wait is bounded.

Usage: run.py PATH_TO_EVENTS
"""
import http.client
import os
import re
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hellopy  # noqa: E402  (tests/support/hellopy.py: start)

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def fail(msg):
    print("events: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Stream:
    """An EventSource's parser over an http.client response."""

    def __init__(self, port, last_id=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Accept": "text/event-stream"}
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        self.conn.request("GET", "/clock", headers=headers)
        self.resp = self.conn.getresponse()
        self.comments = 0
        self.last_id = ""

    def next_event(self):
        """(event type, data, id) of the next dispatched event."""
        etype, data = "", []
        while True:
            raw = self.resp.readline()
            if not raw:
                fail("the stream ended")
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if data:
                    return etype or "message", "\n".join(data), self.last_id
                etype = ""
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                etype = value
            elif name == "data":
                data.append(value)
            elif name == "id" and "\0" not in value:
                self.last_id = value

    def close(self):
        self.conn.close()


def main():
    if len(sys.argv) != 2:
        fail("usage: run.py PATH_TO_EVENTS")
    proc, port = hellopy.start(sys.argv[1], "--interval-ms", "100", "--heartbeat-ms", "10")
    try:
        status, ctype, page = hellopy.get(port, "/")
        if status != 200 or ctype != "text/html; charset=utf-8" or "EventSource" not in page:
            fail("GET /: %d %r" % (status, ctype))
        s = Stream(port)
        if s.resp.status != 200:
            fail("GET /clock: %d" % s.resp.status)
        if s.resp.getheader("Content-Type") != "text/event-stream":
            fail("Content-Type %r" % s.resp.getheader("Content-Type"))
        if s.resp.getheader("Cache-Control") != "no-cache":
            fail("Cache-Control %r" % s.resp.getheader("Cache-Control"))
        seen = []
        for want in ("1", "2", "3"):
            comments = s.comments
            etype, data, eid = s.next_event()
            if (etype, eid) != ("tick", want) or not TIME.match(data):
                fail("event %r %r %r, want tick %s and a time" % (etype, data, eid, want))
            # Before each tick a heartbeat (10 ms) is due long before the
            # tick (100 ms): at least one comment came since the last one.
            if s.comments <= comments:
                fail("no heartbeat before event %s" % want)
            seen.append(eid)
        s.close()  # a client that leaves in the middle

        again = Stream(port, last_id="41")
        etype, data, eid = again.next_event()
        if (etype, eid) != ("tick", "42"):
            fail("after Last-Event-ID 41: %r %r" % (etype, eid))
        # It stays open while the server shuts down: SIGTERM ends it.
        proc.send_signal(signal.SIGTERM)
        try:
            rest = again.resp.read()
        except http.client.IncompleteRead:
            fail("the stream was cut, not ended")
        again.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=20)
        if code != 0 or "events: stopped" not in err:
            fail("exit %d, stderr %r" % (code, err))
        print("events: ok: ids %s, then 42 after Last-Event-ID 41; %d bytes after SIGTERM"
              % (",".join(seen), len(rest)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
