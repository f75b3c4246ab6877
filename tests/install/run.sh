#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install test. Installs a configured and built hroute tree into a temporary
# prefix, then builds tests/install/consumer.c against that prefix the ways a
# user would (CMake's find_package with the shared and the static library,
# pkg-config with the shared and the static library), runs each program and
# checks that it prints exactly "hroute <version> HR_ENOMEM". It also checks
# that the shared library exports nothing but hr_ names and that the static
# one defines no global symbol outside hroute's and llhttp's namespaces.
#
# Usage: tests/install/run.sh <source-dir> <build-dir>
# Environment: CC (default cc), HROUTE_VERSION (default: the build's
# CMAKE_PROJECT_VERSION). CTest runs it as the test `install_consumer`.

set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <source-dir> <build-dir>" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cc=${CC:-cc}

version=${HROUTE_VERSION:-}
if [[ -z $version ]]; then
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt")
fi
expected="hroute $version HR_ENOMEM"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hroute-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Runs a command quietly; on failure shows its output and returns 1.
quiet() {
  local log=$tmp/step.log
  if ! "$@" >"$log" 2>&1; then
    echo "command failed: $*"
    cat "$log"
    return 1
  fi
}

quiet cmake --install "$build" --prefix "$prefix" || { fail "cmake --install"; exit 1; }

pc=$(find "$prefix" -name hroute.pc -path '*/pkgconfig/*' | head -n 1)
if [[ -z $pc ]]; then
  fail "no hroute.pc installed under $prefix"
  exit 1
fi
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
shared=$(find "$libdir" -maxdepth 1 -name 'libhroute.so' | head -n 1)
static=$(find "$libdir" -maxdepth 1 -name 'libhroute.a' | head -n 1)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

check_output() {
  local what=$1 program=$2 out
  if ! out=$("$program" 2>&1); then
    fail "$what: $program exited with an error: $out"
  elif [[ $out != "$expected" ]]; then
    fail "$what: printed '$out', expected '$expected'"
  else
    echo "ok: $what"
  fi
}

# 1. CMake: find_package(hroute) and hroute::hroute (+ hroute::hroute_static).
if quiet cmake -S "$src/tests/install" -B "$tmp/cmake-build" \
     -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_PREFIX_PATH="$prefix" \
     -DHROUTE_EXPECTED_VERSION="$version" &&
   quiet cmake --build "$tmp/cmake-build"; then
  check_output "cmake hroute::hroute" "$tmp/cmake-build/consumer"
  if [[ -n $shared && -n $static ]]; then
    if [[ -x $tmp/cmake-build/consumer_static ]]; then
      check_output "cmake hroute::hroute_static" "$tmp/cmake-build/consumer_static"
    else
      fail "hroute::hroute_static missing from the CMake package"
    fi
  fi
else
  fail "cmake consumer build"
fi

# 2. pkg-config, shared (or static when only the static library exists).
pkgconf() {
  PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config "$@" hroute
}
if [[ -n $shared ]]; then
  read -r -a flags <<<"$(pkgconf --cflags --libs)"
else
  read -r -a flags <<<"$(pkgconf --cflags --libs --static)"
fi
if quiet "$cc" -o "$tmp/consumer_pc" "$src/tests/install/consumer.c" "${flags[@]}"; then
  check_output "pkg-config" "$tmp/consumer_pc"
else
  fail "pkg-config consumer build"
fi

# 2b. The public headers from C++, pedantic, with pkg-config's -I (not
# CMake's -isystem, which would hide warnings in them).
if command -v c++ >/dev/null 2>&1; then
  read -r -a cflags <<<"$(pkgconf --cflags)"
  printf '#include <hroute.h>\nint main() { hr_span_t s = HR_SPAN_LIT("abc"); return s.len == 3 ? 0 : 1; }\n' \
    >"$tmp/consumer.cpp"
  if quiet c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -c -o "$tmp/consumer_cpp.o" \
      "$tmp/consumer.cpp" "${cflags[@]}"; then
    echo "ok: the headers compile as C++11 with -Wpedantic -Werror"
  else
    fail "the headers from C++"
  fi
fi

# 3. pkg-config --static against libhroute.a: checks Libs.private.
if [[ -n $static && -n $shared ]]; then
  read -r -a flags <<<"$(pkgconf --cflags --libs --static)"
  for i in "${!flags[@]}"; do
    [[ ${flags[i]} == -lhroute ]] && flags[i]=$static
  done
  if quiet "$cc" -o "$tmp/consumer_pc_static" "$src/tests/install/consumer.c" "${flags[@]}"; then
    check_output "pkg-config --static" "$tmp/consumer_pc_static"
  else
    fail "pkg-config --static consumer build"
  fi
fi

# 4. Symbols. Hidden visibility must keep everything but the public API
# (hr_*) out of the shared library's dynamic symbol table, and everything
# that is not static must carry a prefix (hr_, hr__, llhttp's).
if [[ -n $shared ]]; then
  leaked=$(nm -D --defined-only "$shared" | awk '{print $3}' |
           grep -v -E '^(hr_|HR_)' | tr '\n' ' ' || true)
  if [[ -n $leaked ]]; then
    fail "libhroute.so exports names outside hr_: $leaked"
  else
    echo "ok: libhroute.so exports only hr_ names"
  fi
fi
if [[ -n $static ]]; then
  unprefixed=$(nm -g --defined-only "$static" 2>/dev/null | awk 'NF == 3 {print $3}' |
               grep -v -E '^(hr_|HR_|llhttp_)' | sort -u | tr '\n' ' ' || true)
  if [[ -n $unprefixed ]]; then
    fail "libhroute.a defines global names without the hr_ prefix: $unprefixed"
  else
    echo "ok: libhroute.a defines only prefixed global names"
  fi
fi

if [[ $failures -ne 0 ]]; then
  echo "install test: $failures check(s) failed"
  exit 1
fi
echo "install test: all checks passed ($expected)"
