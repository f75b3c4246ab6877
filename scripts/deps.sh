#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Installs the Debian 12 packages that hroute needs to build and test, and
# only those that are missing. With everything present it installs nothing
# and prints nothing, so scripts/test.sh can run it every time.
#
# Usage: scripts/deps.sh [--bench] [--fuzz] [--h2spec]
#   --bench   also nginx-light, curl and gnuplot-nox (bench/; gnuplot draws
#             the charts of bench/run.sh --plot; wrk is always installed:
#             the haproxy_drain test loads HAProxy with it)
#   --fuzz    also clang and its runtime libraries (HROUTE_FUZZ=ON)
#   --h2spec  also Go and the Go libraries that h2spec 2.0.0 builds
#             against offline (scripts/h2spec.sh; the build script and
#             source are in shared/conformance/)
#
# Runs apt-get as root, or through sudo for another user.

set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev node-llhttp libcmocka-dev liburcu-dev libssl-dev openssl
          libjansson-dev libdeflate-dev zlib1g-dev libbrotli-dev libzstd-dev
          libwslay-dev python3-websockets node-ws python3-prometheus-client doxygen
          haproxy wrk spin libnghttp2-dev nghttp2-client python3-h2)

for arg in "$@"; do
  case $arg in
    --bench) packages+=(nginx-light curl gnuplot-nox) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --h2spec) packages+=(golang-go golang-github-fatih-color-dev golang-github-spf13-cobra-dev
                         golang-golang-x-net-dev golang-github-mattn-go-colorable-dev
                         golang-github-mattn-go-isatty-dev golang-github-spf13-pflag-dev
                         golang-golang-x-sys-dev golang-github-inconshreveable-mousetrap-dev) ;;
    -h|--help) sed -n '4,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "deps.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps.sh: dpkg-query and apt-get not found; this script knows Debian 12 only." >&2
  echo "deps.sh: install by hand: ${packages[*]}" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ $status != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "deps.sh: missing packages: ${missing[*]}" >&2
  echo "deps.sh: not root and sudo not found; install them as root." >&2
  exit 1
fi

echo "deps.sh: installing ${missing[*]}"

# Installing nginx would start the distribution's nginx service on port 80
# (and a failed start fails the install), and installing haproxy its
# haproxy service. The benchmarks start their own nginx on a loopback port
# and the haproxy_drain test its own HAProxy, so while apt runs, a
# policy-rc.d that denies every service start is put in place, unless one
# already is (Debian's container images ship one).
policy=/usr/sbin/policy-rc.d
remove_policy=0
cleanup() {
  if [[ $remove_policy -eq 1 ]]; then
    "${as_root[@]}" rm -f "$policy"
  fi
}
trap cleanup EXIT
starts_service=0
for pkg in nginx-light haproxy; do
  if [[ " ${missing[*]} " == *" $pkg "* ]]; then starts_service=1; fi
done
if [[ $starts_service -eq 1 && ! -e $policy ]]; then
  printf '#!/bin/sh\n# Temporary, from hroute scripts/deps.sh\nexit 101\n' |
    "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod 755 "$policy"
  remove_policy=1
fi

apt_env=(env DEBIAN_FRONTEND=noninteractive)
"${as_root[@]}" "${apt_env[@]}" apt-get update -q
"${as_root[@]}" "${apt_env[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
