#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# WebSocket with real clients from Debian against examples/chat:
# python3-websockets (clients.py: echo, fragments, pings, the close
# handshake, 1007, 1009, 1002; deflate.py: permessage-deflate) and node-ws (broadcast.cjs: 1,000 clients
# broadcasting, and a slow peer).  Everything on loopback; each part is
# bounded by `timeout`.
#
# Usage: tests/websocket/run.sh CHAT_BINARY

set -euo pipefail

chat=${1:?usage: run.sh CHAT_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Debian's interpreter, which has python3-websockets (a python3 earlier on
# PATH may not), and Debian's node modules.
python=/usr/bin/python3
# 1,000 clients and as many server connections in one process each.
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

# Starts chat with the given options on a free port; sets pid and port.
start() {
  : >"$work/err"
  "$chat" --port 0 "$@" 2>"$work/err" &
  pid=$!
  for _ in $(seq 1 200); do
    port=$(sed -n 's/^chat: listening on [^:]*:\([0-9]*\) .*/\1/p' "$work/err")
    [[ -n $port ]] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/err" >&2; return 1; }
    sleep 0.05
  done
  echo "run.sh: chat did not start" >&2
  return 1
}

# Stops chat with SIGTERM; it must exit 0 (leak-free under ASan).
stop() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=
  if [[ $rc -ne 0 ]]; then
    cat "$work/err" >&2
    echo "run.sh: chat exited with $rc" >&2
    return 1
  fi
}

start --max-message 65536
timeout 60 "$python" "$here/clients.py" "$port"
stop

# permessage-deflate both ways, without and with context takeover.
for mode in on takeover; do
  start --max-message 65536 --deflate "$mode"
  timeout 60 "$python" "$here/deflate.py" "$port" "$mode"
  stop
done

start --threads 2 --high-water 65536 --close-timeout 200
timeout 120 node "$here/broadcast.cjs" "$port"
stop
echo "run.sh: all passed"
