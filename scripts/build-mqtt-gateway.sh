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
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$here/gateway/mqtt"
command -v go >/dev/null || { echo "build-mqtt-gateway: no 'go' on PATH (Go >= 1.25 needed)" >&2; exit 1; }
sum="$(cd "$src" && { printf '%s\n' go.mod go.sum; find . -name '*.go' -type f | sed 's|^\./||' | LC_ALL=C sort; } \
  | while read -r f; do printf '%s\n' "$f"; sha256sum < "$f"; done | sha256sum | cut -c1-16)"
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
dir="$cache/mqtt-gateway-$sum"
bin="$dir/enmasse-mqtt-gateway"
if [ -x "$bin" ] && [ -f "$dir/.complete" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -o "$bin.tmp" .) >&2
mv -f "$bin.tmp" "$bin"
touch "$dir/.complete"
echo "$bin"
