#!/usr/bin/env bash
# Prints the path of a Go toolchain of at least the version asked for, for
# the builds of this repository that need Go (scripts/build-kubernetes.sh,
# scripts/build-mqtt-gateway.sh, scripts/aio.sh through the latter):
#
#   bash scripts/go-toolchain.sh 1.25 go1.25.5   # min version, toolchain to fetch
#
# The first of $GO, `go` on PATH, /usr/local/go/bin/go and the toolchain
# fetched earlier into the cache that is new enough is used. Without one, the
# Go toolchain itself is fetched as the module golang.org/toolchain from the
# Go module proxy (GOPROXY, Go's default), verified by Go against the checksum
# database (GOSUMDB) like every module, with a Go that is already there or
# Debian's golang-go (Debian 12: Go 1.19, too old to build ours; apt installs
# it when there is no Go at all, only to fetch the module). The toolchain is
# copied into ~/.cache/enmasse-messaging/<toolchain> (the module cache keeps
# files without their exec bits).
set -euo pipefail
min="${1:?usage: go-toolchain.sh <min version, e.g. 1.25> <toolchain to fetch, e.g. go1.25.5>}"
toolchain="${2:?usage: go-toolchain.sh <min version> <toolchain to fetch>}"
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
fetched="$cache/$toolchain"

log() { printf 'go-toolchain: %s\n' "$*" >&2; }

go_ok() {  # $1: a go binary; true when it is Go >= $min
  local v want_minor="${min#1.}"
  v="$("$1" env GOVERSION 2>/dev/null)" || return 1
  v="${v#go}"
  [ "${v%%.*}" -gt 1 ] 2>/dev/null && return 0
  v="${v#1.}"
  [ "${v%%[.a-z]*}" -ge "${want_minor%%.*}" ] 2>/dev/null
}

for cand in "${GO:-}" "$(command -v go || true)" /usr/local/go/bin/go "$fetched/bin/go"; do
  if [ -n "$cand" ] && [ -x "$cand" ] && go_ok "$cand"; then
    echo "$cand"
    exit 0
  fi
done

boot="$(command -v go || true)"
if [ -z "$boot" ] && [ -x /usr/local/go/bin/go ]; then boot=/usr/local/go/bin/go; fi
if [ -z "$boot" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "apt: installing golang-go (only to fetch the Go toolchain module)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go ca-certificates >/dev/null
    boot="$(command -v go)"
  else
    log "no Go >= $min and no Go to fetch one with: install Debian's golang-go (or Go >= $min) first"
    exit 1
  fi
fi
arch="$(uname -m)"; case "$arch" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
module="golang.org/toolchain@v0.0.1-$toolchain.linux-$arch"
log "fetching the Go toolchain $toolchain as the module $module (with $("$boot" env GOVERSION))"
tmpmod="$(mktemp -d)"
trap 'rm -rf "$tmpmod"' EXIT
(cd "$tmpmod" && "$boot" mod init fetch-toolchain >/dev/null 2>&1)
dir="$(cd "$tmpmod" && GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local "$boot" mod download -json "$module" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -d "$dir" ]; then log "cannot fetch $module"; exit 1; fi
mkdir -p "$cache"
rm -rf "$fetched.tmp"
cp -r "$dir" "$fetched.tmp"
chmod -R u+w "$fetched.tmp"
chmod +x "$fetched.tmp/bin/"* "$fetched.tmp/pkg/tool/"*/*
rm -rf "$fetched"
mv "$fetched.tmp" "$fetched"
go_ok "$fetched/bin/go" || { log "$fetched/bin/go is not Go >= $min"; exit 1; }
echo "$fetched/bin/go"
