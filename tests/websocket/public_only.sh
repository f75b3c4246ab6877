#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# src/websocket/ is built on the public API alone: its files include the
# public headers (hroute/...), src/util and their own ws.h, never the
# server's internals, so an application's own protocol over an upgraded
# stream (include/hroute/upgrade.h) has every call the WebSocket module
# uses.  Lists any other quoted include and fails when there is one.  A
# second argument checks another folder of src/ the same way (upload: the
# file sink of include/hroute/filesink.h).
#
# Usage: tests/websocket/public_only.sh SOURCE_DIR [FOLDER]

set -euo pipefail

folder=${2:-websocket}
src=${1:?usage: public_only.sh SOURCE_DIR [FOLDER]}/src/$folder
[[ -d $src ]] || { echo "public_only.sh: no folder $src" >&2; exit 1; }
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src"/*.[ch] 2>/dev/null |
      grep -vE "\"(hroute|util|$folder)/[^\"]+\"|\"hroute\\.h\"" || true)
if [[ -n $bad ]]; then
  echo "src/$folder includes headers that are not public:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "src/$folder: public headers only"
