#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hroute behind a real HAProxy: drains and restarts under load lose nothing.

HAProxy 2.6 (haproxy.cfg.in) balances wrk's keep-alive load over three
examples/hello instances, with a PROXY v2 header on every connection and an
HTTP health check on /readyz. The harness owns the three listening sockets
and passes each to its instance as systemd would (LISTEN_PID, LISTEN_FDS,
descriptor 3), so a restarted instance serves the very same socket and
connections that arrive in between wait in its backlog.

Under load, s1 (two worker threads) and then s2 (one thread) each get
SIGTERM: hello answers /readyz with 503 at once, HAProxy's check takes it
out, the instance drains for --drain-grace and exits 0; the harness starts it
again on the same socket and waits until HAProxy has it UP again. s3 is never
touched. At the end it asserts:

  - wrk: requests were made, and none failed (no connect, read, write or
    timeout error, no status other than 200, no wrong body);
  - every instance, before and after its restart, served wrk's requests, and
    each of those lines in its access log names the true client (127.0.0.1,
    from the PROXY header), never the balancer (127.0.0.2) it came from;
  - readiness flipped: /readyz, probed directly, went 200 -> 503 on SIGTERM
    and 200 again after the restart; HAProxy saw the instance DOWN (its
    check got the 503) and then UP again;
  - each instance exited 0 after its drain and at the end (under ASan: no
    leaks).

It prints the figures: requests, failures, each drain's time from SIGTERM to
exit, requests per instance, HAProxy's retries and redispatches. Every wait
has a deadline; every process it starts is killed and every file removed on
the way out, also on failure. The exit status is 0 when everything held, 1
with the reasons on stderr when not, 2 for a bad command line.

Addresses, all loopback: wrk -> HAProxy on 127.0.0.1; HAProxy -> hello from
127.0.0.2 (the one address hello trusts for the PROXY header); the harness's
own probes from 127.0.0.3 (served as themselves, outside that network).

Usage: run.py --hello PATH [--haproxy PATH] [--wrk PATH] [--drain-grace MS]
              [--connections N] [--retry-on LIST] [--keep]
"""

import argparse
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = "127.0.0.1"   # wrk's address, as HAProxy sees it
BALANCER = "127.0.0.2"  # HAProxy's source address towards the servers
PROBE = "127.0.0.3"    # the harness's direct probes
BACKEND = "hello"      # the backend's name in haproxy.cfg.in
PATH = "/hello/wrk"
# One instance drained is threaded, the other runs on one loop, so that both
# of hello's drain paths (hr_server_drain on workers and attached) are seen.
THREADS = {"s1": 2, "s2": 1, "s3": 1}
DRAINED = ("s1", "s2")
LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Failure(Exception):
    """A failed check or a wait that ran out; the message says which."""


def log(msg):
    print("haproxy_drain: " + msg, flush=True)


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return "(%s)\n" % e


# ---- HTTP probes, straight to an instance ---------------------------------

def probe(port, path="/readyz", timeout=1.0):
    """GET path from PROBE; returns (status, body). Raises OSError."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.bind((PROBE, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                   % path).encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = head.split(b" ", 2)
    if len(fields) < 2 or not fields[1].isdigit():
        raise OSError("not an HTTP response: %r" % data[:80])
    return int(fields[1]), body.decode(errors="replace")


# ---- HAProxy's stats socket ------------------------------------------------

def haproxy_command(path, command, timeout=2.0):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall((command + "\n").encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def show_stat(path):
    """`show stat` as {(proxy, server): {field: value}}."""
    lines = haproxy_command(path, "show stat").splitlines()
    if not lines or not lines[0].startswith("# "):
        raise OSError("unexpected 'show stat' answer: %r" % lines[:1])
    names = lines[0][2:].split(",")
    rows = {}
    for line in lines[1:]:
        if line:
            values = dict(zip(names, line.split(",")))
            rows[(values["pxname"], values["svname"])] = values
    return rows


class Monitor:
    """Samples the servers' states through the stats socket about every
    50 ms, from whichever wait loop is running, and keeps the changes."""

    def __init__(self, stats_path, origin):
        self.path = stats_path
        self.origin = origin
        self.next = 0.0
        self.changes = {name: [] for name in THREADS}  # (s, status, check, code)
        self.rows = {}

    def tick(self, force=False):
        now = time.monotonic()
        if not force and now < self.next:
            return
        self.next = now + 0.05
        try:
            rows = show_stat(self.path)
        except OSError:
            return
        self.rows = rows
        for name, changes in self.changes.items():
            row = rows.get((BACKEND, name))
            if row is None:
                continue
            state = (row["status"], row["check_status"].lstrip("* "), row["check_code"])
            if not changes or changes[-1][1:] != state:
                changes.append((now - self.origin,) + state)

    def status(self, name):
        changes = self.changes[name]
        return changes[-1][1] if changes else None

    def since(self, name, t):
        """The changes of `name` at or after monotonic time t."""
        return [c for c in self.changes[name] if c[0] >= t - self.origin]


def pause(seconds, monitor):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        monitor.tick()
        time.sleep(0.01)


def wait_for(what, timeout, condition, monitor=None):
    """Polls condition() until it is true, for at most `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        if monitor is not None:
            monitor.tick()
        if condition():
            return
        if time.monotonic() >= end:
            raise Failure("timed out after %g s waiting for %s" % (timeout, what))
        time.sleep(0.02)


# ---- processes -----------------------------------------------------------

class Processes:
    """Every child, each in its own process group, for the cleanup."""

    def __init__(self):
        self.all = []

    def start(self, argv, out_path, preexec=None, **kw):
        def child():
            # Between fork and exec (the harness has no threads): should the
            # harness itself be killed (a ctest timeout), the kernel kills
            # this child too (PR_SET_PDEATHSIG, kept across exec).
            LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if preexec is not None:
                preexec()
        out = open(out_path, "wb")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=child, **kw)
        finally:
            out.close()
        self.all.append(proc)
        return proc

    def kill_all(self):
        for proc in self.all:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
        for proc in self.all:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


class Run:
    """One hello process of an instance."""

    def __init__(self, proc, tag, access_log, output):
        self.proc = proc
        self.tag = tag
        self.access_log = access_log
        self.output = output
        self.lines = None  # the access log, parsed, once it exited


class Instance:
    """A backend server: a listening socket the harness owns, and the hello
    processes that serve it one after another."""

    def __init__(self, name, args, work, procs):
        self.name = name
        self.args = args
        self.work = work
        self.procs = procs
        self.threads = THREADS[name]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.runs = []

    @property
    def current(self):
        return self.runs[-1]

    def start(self, monitor=None):
        tag = "%s#%d" % (self.name, len(self.runs))
        base = os.path.join(self.work, tag.replace("#", "."))
        access_log = base + ".access"
        output = base + ".stderr"
        argv = ["/bin/sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh",
                self.args.hello, "--threads", str(self.threads),
                "--proxy-from", BALANCER + "/32", "--access-log", access_log,
                "--drain-grace", str(self.args.drain_grace)]
        fd = self.sock.fileno()

        def as_descriptor_3():
            # Runs in the child between fork and exec (the harness has no
            # threads): the socket becomes descriptor 3, inheritable.
            if fd == 3:
                os.set_inheritable(3, True)
            else:
                os.dup2(fd, 3)

        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")}
        # close_fds=False keeps descriptor 3; every descriptor Python opened
        # is close-on-exec anyway (PEP 446).
        proc = self.procs.start(argv, output, env=env, close_fds=False,
                                preexec=as_descriptor_3)
        run = Run(proc, tag, access_log, output)
        self.runs.append(run)

        def listening():
            if proc.poll() is not None:
                raise Failure("%s exited with %s at start:\n%s"
                              % (tag, proc.returncode, tail(output)))
            with open(output, errors="replace") as f:
                return "hello: listening on" in f.read()
        wait_for(tag + " to listen", 20, listening, monitor)
        with open(output, errors="replace") as f:
            if "serving 1 socket(s) passed in LISTEN_FDS" not in f.read():
                raise Failure("%s did not take the passed socket:\n%s" % (tag, tail(output)))
        ready = []

        def answers_ready():
            try:
                ready[:] = [probe(self.port, timeout=1.0)]
            except OSError:
                return False
            return ready[0] == (200, "ready\n")
        wait_for(tag + " to answer /readyz with 200", 20, answers_ready, monitor)
        return run


def stop(run, sig, timeout):
    """Signals a hello and waits for it; returns its exit status."""
    run.proc.send_signal(sig)
    try:
        return run.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure("%s still running %g s after signal %d:\n%s"
                      % (run.tag, timeout, sig, tail(run.output)))


# ---- one drain -----------------------------------------------------------

def drain_and_restart(inst, args, monitor):
    """SIGTERM to `inst`, readiness watched directly and through HAProxy,
    exit, restart on the same socket, until HAProxy has it UP again.
    Returns the figures of this drain."""
    run = inst.current
    grace = args.drain_grace / 1000.0
    readiness = []     # (seconds after SIGTERM, status) as the probes saw it
    t0 = time.monotonic()
    wall = time.time()
    run.proc.send_signal(signal.SIGTERM)
    exit_at = None
    seen_503 = False
    end = t0 + grace + 15
    while time.monotonic() < end:
        monitor.tick()
        if run.proc.poll() is not None:
            exit_at = time.monotonic()
            break
        if not seen_503:
            try:
                status, body = probe(inst.port, timeout=0.3)
            except OSError:
                status, body = None, ""
            if status is not None:
                readiness.append((time.monotonic() - t0, status))
            if status == 503:
                if body != "draining\n":
                    raise Failure("%s: /readyz 503 with body %r" % (run.tag, body))
                seen_503 = True
            elif status not in (None, 200):
                raise Failure("%s: /readyz answered %s while draining" % (run.tag, status))
        time.sleep(0.005)
    if exit_at is None:
        raise Failure("%s: still running %g s after SIGTERM:\n%s"
                      % (run.tag, end - t0, tail(run.output)))
    drain_ms = (exit_at - t0) * 1000
    if run.proc.returncode != 0:
        raise Failure("%s exited with %s after SIGTERM:\n%s"
                      % (run.tag, run.proc.returncode, tail(run.output)))
    if not seen_503:
        raise Failure("%s: /readyz never answered 503 while draining (saw %s)"
                      % (run.tag, readiness))
    with open(run.output, errors="replace") as f:
        text = f.read()
    expected = ["hello: SIGTERM, draining for %d ms" % args.drain_grace,
                "hello: drained and stopped" if inst.threads > 1 else "hello: stopped"]
    for line in expected:
        if line not in text:
            raise Failure("%s: no %r on stderr:\n%s" % (run.tag, line, tail(run.output)))

    restarted = inst.start(monitor)
    t_ready = time.monotonic()
    wait_for("HAProxy to see %s UP again" % inst.name, 20,
             lambda: monitor.status(inst.name) == "UP"
             and any(c[1].startswith("DOWN") for c in monitor.since(inst.name, t0)),
             monitor)
    changes = monitor.since(inst.name, t0)
    down = next(c for c in changes if c[1].startswith("DOWN"))
    up = [c for c in changes if c[1] == "UP" and c[0] > down[0]][0]
    first_503 = next(t for t, s in readiness if s == 503)
    return {
        "name": inst.name, "tag": run.tag, "next": restarted.tag,
        "at": time.strftime("%H:%M:%S", time.localtime(wall)) + ".%03d" % (wall % 1 * 1000),
        "drain_ms": drain_ms, "first_503_ms": first_503 * 1000,
        "down_ms": (down[0] - (t0 - monitor.origin)) * 1000, "down": down,
        "up_ms": (up[0] - (t0 - monitor.origin)) * 1000,
        "ready_after_restart_ms": (t_ready - t0) * 1000,
    }


# ---- access logs ---------------------------------------------------------

CLF = re.compile(r'^(\S+) \S+ \S+ \[[^\]]*\] "(\S+) (\S+) [^"]*" (\d{3}) \S+$')


def check_access_log(run, failures):
    """Sorts each line of run's access log by who sent it; returns counts."""
    counts = {"wrk": 0, "checks": 0, "probes": 0}
    odd = []
    with open(run.access_log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = CLF.match(line)
            if m is None:
                odd.append(line)
                continue
            client, _, target, status = m.groups()
            if target == PATH and client == CLIENT and status == "200":
                counts["wrk"] += 1
            elif target == "/readyz" and client == BALANCER:
                counts["checks"] += 1    # HAProxy's checks: PROXY v2 LOCAL
            elif target == "/readyz" and client == PROBE:
                counts["probes"] += 1
            else:
                odd.append(line)
    if odd:
        failures.append("%s: %d access log line(s) not from wrk with client %s, "
                        "HAProxy's checks or the probes, e.g. %r"
                        % (run.tag, len(odd), CLIENT, odd[:3]))
    if counts["wrk"] == 0:
        failures.append("%s served none of wrk's requests" % run.tag)
    return counts


# ---- the test ------------------------------------------------------------

def write_config(path, stats_path, frontend_fd, instances, retry_on):
    with open(os.path.join(HERE, "haproxy.cfg.in")) as f:
        text = f.read()
    fields = {"STATS_SOCKET": stats_path, "FRONTEND_FD": str(frontend_fd),
              "RETRY_ON": retry_on}
    for inst in instances:
        fields["PORT_" + inst.name.upper()] = str(inst.port)
    text = re.sub(r"@([A-Z0-9_]+)@", lambda m: fields[m.group(1)], text)
    with open(path, "w") as f:
        f.write(text)


def parse_wrk(path):
    with open(path, errors="replace") as f:
        text = f.read()
    m = re.search(r"^wrk-check (.*)$", text, re.M)
    if m is None:
        raise Failure("wrk printed no summary:\n" + text[-2000:])
    return {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def test(args, work, procs, diagnostics):
    instances = [Instance(name, args, work, procs) for name in THREADS]
    for inst in instances:
        diagnostics.append(lambda inst=inst: [(r.tag, r.output) for r in inst.runs])
        inst.start()

    frontend = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    frontend.bind(("127.0.0.1", 0))
    frontend.listen(128)
    front_port = frontend.getsockname()[1]
    stats_path = os.path.join(work, "haproxy.sock")
    cfg = os.path.join(work, "haproxy.cfg")
    write_config(cfg, stats_path, frontend.fileno(), instances, args.retry_on)
    haproxy_log = os.path.join(work, "haproxy.log")
    diagnostics.append(lambda: [("haproxy", haproxy_log)])
    haproxy = procs.start([args.haproxy, "-db", "-f", cfg], haproxy_log,
                          pass_fds=(frontend.fileno(),))
    frontend.close()  # HAProxy has its own descriptor of it now

    origin = time.monotonic()
    monitor = Monitor(stats_path, origin)

    def all_checked_up():
        if haproxy.poll() is not None:
            raise Failure("haproxy exited with %s:\n%s" % (haproxy.returncode, tail(haproxy_log)))
        monitor.tick(force=True)
        return all(monitor.changes[n] and monitor.changes[n][-1][1:3] == ("UP", "L7OK")
                   for n in THREADS)
    wait_for("HAProxy to check s1, s2 and s3 UP", 20, all_checked_up)

    wrk_out = os.path.join(work, "wrk.out")
    diagnostics.append(lambda: [("wrk", wrk_out)])
    # -d is only an upper bound: the harness stops wrk with SIGINT (it then
    # prints its report) once the drains are done.
    wrk = procs.start([args.wrk, "-t1", "-c%d" % args.connections, "-d60s", "--timeout", "5s",
                       "-s", os.path.join(HERE, "check.lua"),
                       "http://127.0.0.1:%d%s" % (front_port, PATH)], wrk_out)
    t_wrk = time.monotonic()
    pause(2.0, monitor)
    drains = []
    for name in DRAINED:
        if wrk.poll() is not None:
            raise Failure("wrk exited early:\n" + tail(wrk_out))
        inst = next(i for i in instances if i.name == name)
        drains.append(drain_and_restart(inst, args, monitor))
        pause(1.0, monitor)
    pause(1.0, monitor)  # all three UP, under load, a while longer
    wrk.send_signal(signal.SIGINT)
    try:
        wrk.wait(timeout=15)
    except subprocess.TimeoutExpired:
        raise Failure("wrk did not stop within 15 s of SIGINT")
    load_s = time.monotonic() - t_wrk
    monitor.tick(force=True)
    stats = monitor.rows

    # HAProxy first, so that its idle server connections close; then every
    # hello with SIGINT (a graceful shutdown): each must exit 0.
    haproxy.send_signal(signal.SIGUSR1)
    try:
        haproxy.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise Failure("haproxy did not stop within 10 s of SIGUSR1")
    failures = []
    for inst in instances:
        rc = stop(inst.current, signal.SIGINT, 15)
        if rc != 0:
            failures.append("%s exited with %d after SIGINT:\n%s"
                            % (inst.current.tag, rc, tail(inst.current.output)))
    verify(instances, drains, stats, wrk_out, haproxy_log, load_s, failures)
    return failures


def verify(instances, drains, stats, wrk_out, haproxy_log, load_s, failures):
    """The checks on what the run left (wrk's summary, the access logs,
    HAProxy's counters), and the figures; appends to failures."""
    w = parse_wrk(wrk_out)
    failed = w["connect"] + w["read"] + w["write"] + w["timeout"] + w["status"] + w["wrong"]
    if w["requests"] == 0:
        failures.append("wrk completed no request")
    if failed != 0:
        failures.append("wrk saw failures: %s" % w)

    per_run = []
    served = 0
    for inst in instances:
        for run in inst.runs:
            counts = check_access_log(run, failures)
            served += counts["wrk"]
            per_run.append((run.tag, counts))
    # Each response wrk counted was logged by the instance that sent it (a
    # few more were logged whose responses wrk dropped when it stopped).
    if served < w["requests"]:
        failures.append("the access logs hold %d of wrk's requests, wrk completed %d"
                        % (served, w["requests"]))

    log("wrk: %d requests in %.1f s through HAProxy, %d failed (connect %d, read %d, "
        "write %d, timeout %d, status %d, wrong body %d)"
        % (w["requests"], load_s, failed, w["connect"], w["read"], w["write"], w["timeout"],
           w["status"], w["wrong"]))
    for d in drains:
        log("%s (%d thread(s)): SIGTERM at %s; drained and exited 0 in %.0f ms; /readyz "
            "200 -> 503 after %.0f ms, 200 again from %s at %.0f ms; HAProxy: %s on check "
            "%s %s at %.0f ms, UP at %.0f ms"
            % (d["tag"], THREADS[d["name"]], d["at"], d["drain_ms"], d["first_503_ms"],
               d["next"], d["ready_after_restart_ms"], d["down"][1], d["down"][2],
               d["down"][3], d["down_ms"], d["up_ms"]))
        if d["down"][3] != "503":
            failures.append("%s: HAProxy took it out on check %s %s, not on /readyz's 503"
                            % (d["tag"], d["down"][2], d["down"][3]))
    log("requests per instance (access log; client %s on every one): %s"
        % (CLIENT, ", ".join("%s %d" % (tag, c["wrk"]) for tag, c in per_run)))
    log("health checks per instance (PROXY v2 LOCAL, logged as %s): %s"
        % (BALANCER, ", ".join("%s %d" % (tag, c["checks"]) for tag, c in per_run)))
    fields = ("lbtot", "hrsp_2xx", "hrsp_5xx", "econ", "eresp", "wretr", "wredis", "chkdown",
              "cli_abrt", "srv_abrt")
    for name in list(THREADS) + ["BACKEND"]:
        row = stats.get((BACKEND, name), {})
        log("haproxy %-7s %s" % (name, " ".join("%s=%s" % (f, row.get(f, "") or 0)
                                                for f in fields)))
    for name in THREADS:
        row = stats.get((BACKEND, name), {})
        if name in DRAINED and int(row.get("chkdown") or 0) < 1:
            failures.append("HAProxy counted no UP->DOWN transition of %s" % name)
    with open(haproxy_log, errors="replace") as f:
        abnormal = [l.rstrip("\n") for l in f if " web " in l and PATH in l]
    if abnormal:
        log("HAProxy logged %d abnormal request(s) (errors, retries, redispatches), e.g.:"
            % len(abnormal))
        for line in abnormal[:5]:
            log("  " + line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hello", required=True, help="the examples/hello binary")
    parser.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    parser.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    # HAProxy needs two checks 200 ms apart to see the 503; the rest of the
    # grace is margin for a loaded machine, so that the instance is taken
    # out on its readiness before its listener closes.
    parser.add_argument("--drain-grace", type=int, default=2000, metavar="MS",
                        help="hello's --drain-grace; longer than HAProxy's fall time")
    parser.add_argument("--connections", type=int, default=16, help="wrk's -c")
    parser.add_argument("--retry-on", default="conn-failure empty-response response-timeout",
                        help="HAProxy's retry-on list (ctest passes HAProxy's own default, "
                             "'conn-failure': no request that reached a server is resent)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (its path is printed)")
    args = parser.parse_args()

    def terminated(signum, frame):
        raise Failure("terminated by signal %d" % signum)
    signal.signal(signal.SIGTERM, terminated)

    work = tempfile.mkdtemp(prefix="hroute-haproxy.")
    procs = Processes()
    diagnostics = []
    failures = []
    try:
        failures = test(args, work, procs, diagnostics)
    except Failure as e:
        failures = [str(e)]
    except KeyboardInterrupt:
        failures = ["interrupted"]
    finally:
        procs.kill_all()
        if failures:
            for f in failures:
                print("haproxy_drain: FAILED: " + f, file=sys.stderr)
            for source in diagnostics:
                for name, path in source():
                    print("---- %s (%s), last lines:\n%s" % (name, path, tail(path, 20)),
                          file=sys.stderr)
        if args.keep:
            log("work directory kept: " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        return 1
    log("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
