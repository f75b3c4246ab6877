#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# src/websocket/ is built on the public API alone: its files include the
# public headers (hroute/...), src/util and their own ws.h, never the
# server's internals, so an application's own protocol over an upgraded
# stream (include/hroute/upgrade.h) has every call the WebSocket module
# uses.  Lists any other quoted include and fails when there is one.
#
# Usage: tests/websocket/public_only.sh SOURCE_DIR

set -euo pipefail

src=${1:?usage: public_only.sh SOURCE_DIR}/src/websocket
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src"/*.c "$src"/*.h |
      grep -vE '"(hroute|util|websocket)/[^"]+"|"hroute\.h"' || true)
if [[ -n $bad ]]; then
  echo "src/websocket includes headers that are not public:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "src/websocket: public headers only"
