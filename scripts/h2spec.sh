#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# HTTP/2 conformance of examples/hello with h2spec 2.0.0 (RFC 9113 and
# RFC 7541 cases: generic, http2, hpack).  Builds hello (Debug, asserts on,
# its own tree build/h2spec/hello) and h2spec (from the source in
# shared/conformance/, offline, with Debian's Go: build/h2spec/h2spec), makes
# a self-signed ECDSA P-256 certificate in a temp dir, starts two hellos on
# free loopback ports (--port 0) -- one with --h2c (prior-knowledge
# cleartext h2), one with the certificate (h2 by ALPN) -- and runs h2spec
# against each.  Prints per transport the totals and each failing case (its
# id, such as http2/6.9.2/3, re-runs it alone: h2spec -p PORT http2/6.9.2/3),
# writes one JUnit file per transport, and ends with the line
#   h2spec: P passed, F failed, S skipped
# counting every case of both transports (scripts/test.sh adds it to its
# summary).  When a transport's server does not start, or its h2spec run
# gives no report (it stops at the first case when TLS offers no h2), all
# its cases count as failed; a run that times out or outlives its server
# counts one failed case more.  Exits 0 only when no case
# failed.  Each case is bounded by --case-timeout, each h2spec run by
# --run-timeout; everything it starts is stopped when it exits.
#
# Usage: scripts/h2spec.sh [--transport h2c|tls|both] [--case-timeout S]
#                          [--run-timeout S] [--junit DIR] [--hello FILE]
#                          [--strict] [--verbose]
#   --transport     which listeners to test (default both)
#   --case-timeout  h2spec -o: seconds one case may wait for the server (2)
#   --run-timeout   seconds one h2spec run may take in all (600)
#   --junit DIR     where the JUnit reports go, h2spec-h2c.xml and
#                   h2spec-tls.xml (default build/h2spec)
#   --hello FILE    test this hello executable instead of building one
#   --strict        also the case h2spec runs only with --strict
#   --verbose       print h2spec's own output too
#
# Needs Go and its libraries (scripts/deps.sh --h2spec installs them) unless
# build/h2spec/h2spec is already there, or H2SPEC names an h2spec binary.
# Environment: HROUTE_JOBS (default 2) for the build; H2SPEC_SOURCE_DIR
# (default ../shared/conformance beside the repository) for the source.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir=$root/build/h2spec
transports=(h2c tls)
case_timeout=2
run_timeout=600
junit_dir=$out_dir
hello=
strict=()
verbose=0

die() {
  echo "h2spec.sh: $*" >&2
  exit 2
}

while (($# > 0)); do
  case $1 in
    --transport)
      case ${2:-} in
        h2c | tls) transports=("$2") ;;
        both) transports=(h2c tls) ;;
        *) die "--transport takes h2c, tls or both" ;;
      esac
      shift 2 ;;
    --case-timeout) [[ ${2:-} =~ ^[1-9][0-9]{0,2}$ ]] || die "--case-timeout takes seconds (1-999)"
      case_timeout=$2; shift 2 ;;
    --run-timeout) [[ ${2:-} =~ ^[1-9][0-9]{0,4}$ ]] || die "--run-timeout takes seconds"
      run_timeout=$2; shift 2 ;;
    --junit) [[ -n ${2:-} ]] || die "--junit takes a directory"; junit_dir=$2; shift 2 ;;
    --hello) [[ -x ${2:-} ]] || die "--hello: '${2:-}' is not an executable"; hello=$2; shift 2 ;;
    --strict) strict=(--strict); shift ;;
    --verbose) verbose=1; shift ;;
    -h | --help) sed -n '4,35s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (try --help)" ;;
  esac
done

jobs=${HROUTE_JOBS:-2}
source_dir=${H2SPEC_SOURCE_DIR:-$root/../shared/conformance}
tmp=
pids=()

cleanup() {
  local status=$? p
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    # hello drains for at most its shutdown deadline (5 s); then kill it.
    timeout 7 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  [[ -z $tmp ]] || rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hroute-h2spec.XXXXXX")
mkdir -p "$out_dir" "$junit_dir"

# ---- what runs ------------------------------------------------------------

# h2spec: $H2SPEC, else build/h2spec/h2spec, built when missing or older
# than its source.
h2spec=${H2SPEC:-$out_dir/h2spec}
if [[ -z ${H2SPEC:-} ]]; then
  build_script=$source_dir/build_h2spec.sh
  if [[ ! -x $h2spec || $build_script -nt $h2spec ]] ||
     [[ -n $(find "$source_dir" -maxdepth 1 -name 'h2spec-*.tar.gz' -newer "$h2spec" 2>/dev/null) ]]; then
    [[ -f $build_script ]] || die "no $build_script (set H2SPEC_SOURCE_DIR or H2SPEC)"
    command -v go >/dev/null 2>&1 || die "no Go: run scripts/deps.sh --h2spec"
    echo "h2spec.sh: building h2spec into ${h2spec#"$root"/}"
    nice -n 19 bash "$build_script" "$h2spec" >"$tmp/h2spec-build.log" 2>&1 || {
      tail -n 20 "$tmp/h2spec-build.log" >&2
      die "building h2spec failed"
    }
  fi
fi
[[ -x $h2spec ]] || die "no h2spec executable at $h2spec"

if [[ -z $hello ]]; then
  echo "h2spec.sh: building hello (Debug) in build/h2spec/hello"
  { cmake -S "$root" -B "$out_dir/hello" -DCMAKE_BUILD_TYPE=Debug -DHROUTE_BUILD_TESTS=OFF \
      -DHROUTE_BUILD_BENCH=OFF -DHROUTE_BUILD_TOOLS=OFF &&
    nice -n 19 cmake --build "$out_dir/hello" -j "$jobs" --target hello; } >"$tmp/build.log" 2>&1 || {
    tail -n 30 "$tmp/build.log" >&2
    die "building hello failed"
  }
  hello=$out_dir/hello/hello
fi

# The certificate of the TLS listener (CN localhost, SAN localhost and
# 127.0.0.1; h2spec -k does not check it).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >"$tmp/openssl.log" 2>&1 ||
  die "openssl could not make the certificate: $(tail -n 3 "$tmp/openssl.log")"

# ---- one transport --------------------------------------------------------

# Starts hello for transport $1 (log $tmp/hello-$1.log) and sets hello_port
# to its port once it listens (10 s at most), or to nothing when it does not
# start.  (Not for $(...): hello would hold its pipe open.)
start_hello() {
  local transport=$1 log=$tmp/hello-$1.log args=(--host 127.0.0.1 --port 0) pid i port
  if [[ $transport == tls ]]; then
    args+=(--tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem")
  elif "$hello" --help 2>&1 | grep -q -- '--h2c'; then
    args+=(--h2c)
  else
    echo "h2spec.sh: warning: hello has no --h2c; its plain listener speaks HTTP/1.1 only" >&2
  fi
  hello_port=
  "$hello" "${args[@]}" </dev/null >/dev/null 2>"$log" &
  pid=$!
  pids+=("$pid")
  for ((i = 0; i < 100; i++)); do
    port=$(sed -n 's/^hello: listening on [^ ]*:\([0-9][0-9]*\) .*/\1/p' "$log" | head -n 1)
    if [[ -n $port ]]; then
      hello_port=$port
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "h2spec.sh: hello ($transport) did not start: $(tail -n 5 "$log" | tr '\n' ' ')" >&2
}

# Reads JUnit file $1 and prints "P F S", then one line per failing case:
# "  id  title  (what came instead)".  Case ids are h2spec's: the suite's
# package and the case's number in it.
junit_summary() {
  python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
lines = []
for suite in ET.parse(sys.argv[1]).getroot().iter("testsuite"):
    for n, case in enumerate(suite.iter("testcase"), 1):
        bad = case.find("error")
        if bad is None:
            bad = case.find("failure")
        if case.find("skipped") is not None:
            skipped += 1
        elif bad is not None:
            failed += 1
            got = (bad.text or "").strip().splitlines()
            lines.append("  %s/%d  %s  (got: %s)" % (case.get("package"), n, case.get("classname"),
                                                     got[-1] if got else "?"))
        else:
            passed += 1
print(passed, failed, skipped)
print("\n".join(lines))
PY
}

# Stops the hello started last (SIGTERM: a graceful shutdown, 5 s at most).
stop_last_hello() {
  local pid=${pids[-1]}
  kill -TERM "$pid" 2>/dev/null || true
  timeout 7 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset 'pids[-1]'
}

# How many cases a run has (h2spec --dryrun lists them, "  N: title").
ncases=$("$h2spec" --dryrun "${strict[@]}" | grep -cE '^ +[0-9]+: ' || true)
((ncases > 0)) || die "h2spec --dryrun lists no case"

total_passed=0
total_failed=0
total_skipped=0

# Tests transport $1 and adds its cases to the totals.
run_transport() {
  local transport=$1 port junit=$junit_dir/h2spec-$1.xml args rc=0 p f s start=$SECONDS
  echo
  echo "==== h2spec $transport ===="
  start_hello "$transport"
  port=$hello_port
  if [[ -z $port ]]; then
    total_failed=$((total_failed + ncases))
    echo "h2spec $transport: server did not start: its $ncases cases counted as failed"
    return 0
  fi
  args=(-h 127.0.0.1 -p "$port" -o "$case_timeout" -j "$junit" "${strict[@]}")
  [[ $transport == tls ]] && args+=(-t -k)
  rm -f "$junit"
  timeout --kill-after=5 "$run_timeout" "$h2spec" "${args[@]}" >"$tmp/h2spec-$transport.out" 2>&1 ||
    rc=$?
  if ((verbose)); then cat "$tmp/h2spec-$transport.out"; fi
  if ! kill -0 "${pids[-1]}" 2>/dev/null; then
    total_failed=$((total_failed + 1))
    echo "h2spec $transport: hello exited during the run: counted as 1 more failed case"
    tail -n 10 "$tmp/hello-$transport.log" | sed 's/^/  | /'
  fi
  stop_last_hello
  if [[ ! -s $junit ]] || ! junit_summary "$junit" >"$tmp/summary"; then
    total_failed=$((total_failed + ncases))
    echo "h2spec $transport: no report (h2spec exit status $rc): its $ncases cases counted as failed"
    tail -n 10 "$tmp/h2spec-$transport.out" | sed 's/^/  | /'
    return 0
  fi
  read -r p f s <"$tmp/summary"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  total_skipped=$((total_skipped + s))
  if ((f > 0)); then
    echo "failing cases ($transport):"
    tail -n +2 "$tmp/summary"
  fi
  if ((rc == 124 || rc == 137)); then
    total_failed=$((total_failed + 1))
    echo "h2spec $transport: timed out after $run_timeout s (report incomplete): counted as 1 more failed case"
  fi
  echo "h2spec $transport: $p passed, $f failed, $s skipped ($((SECONDS - start)) s; JUnit: ${junit#"$root"/})"
}

for t in "${transports[@]}"; do
  run_transport "$t"
done
echo
echo "h2spec: $total_passed passed, $total_failed failed, $total_skipped skipped"
((total_failed == 0))
