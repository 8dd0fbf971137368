#!/usr/bin/env bash
# Builds the MQTT gateway of a standard space (gateway/mqtt, issue 21) once
# into a cached directory and prints the binary's path:
#
#   bash scripts/build-mqtt-gateway.sh    # prints .../enmasse-mqtt-gateway
#
# The directory is keyed by the sha256 of the gateway's Go sources (every
# *.go under gateway/mqtt), go.mod and go.sum: changed sources build anew,
# unchanged ones are reused. A static binary (CGO_ENABLED=0, -trimpath);
# GOFLAGS=-mod=readonly: the module versions are the ones pinned in go.mod /
# go.sum (go.sum verifies every module); on a clean machine the modules come
# from the Go module proxy (GOPROXY, Go's default) into Go's module cache.
# Go itself: scripts/go-toolchain.sh (no Go >= go.mod's version on the
# machine: the toolchain is fetched as a module, with Debian's golang-go).
# go-amqp is built with one fix of ours (gateway/mqtt/patches/README.md): a
# copy of the module, patched with git apply, replaces it in a copy of go.mod
# (`go build -modfile`, scripts/go-amqp-patched.sh); the module cache, go.mod
# and go.sum stay as they are.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$here/gateway/mqtt"
sum="$(cd "$src" && { printf '%s\n' go.mod go.sum; find . \( -name '*.go' -o -name '*.patch' \) -type f | sed 's|^\./||' | LC_ALL=C sort; } \
  | while read -r f; do printf '%s\n' "$f"; sha256sum < "$f"; done | sha256sum | cut -c1-16)"
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
dir="$cache/mqtt-gateway-$sum"
bin="$dir/enmasse-mqtt-gateway"
if [ -x "$bin" ] && [ -f "$dir/.complete" ]; then
  echo "$bin"
  exit 0
fi
# Go >= the go line of go.mod: scripts/go-toolchain.sh (a Go already there,
# else the toolchain fetched as a module, see there)
min="$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$src/go.mod" | cut -d. -f1,2)"
go_bin="$(bash "$here/scripts/go-toolchain.sh" "$min" "${ENMASSE_GATEWAY_GO_TOOLCHAIN:-go1.25.5}")"
mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
modfile="$(bash "$here/scripts/go-amqp-patched.sh" "$go_bin" "$src" "$work")"
(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local "$go_bin" build -trimpath -modfile="$modfile" \
  -o "$bin.tmp" .) >&2
mv -f "$bin.tmp" "$bin"
touch "$dir/.complete"
echo "$bin"
