#!/usr/bin/env bash
# Finds or builds what the Kubernetes tests need and prints the directory of
# the binaries: etcd (Debian's etcd-server package), kube-apiserver and
# kube-controller-manager v1.33.13 built with Go from the Go module proxy
# (docs/kubernetes.md, "Test API server").
#
#   bash scripts/build-kubernetes.sh        # prints <cache>/kubernetes-v1.33.13/bin
#
# Cached under ${ENMASSE_CACHE_DIR:-~/.cache/enmasse-messaging}/kubernetes-v1.33.13/:
# a warm run only checks that the binaries are there (seconds). A cold build
# takes 5-10 minutes on 2 cores and keeps Go's module and build caches (about
# 3 GB) where Go keeps them (GOMODCACHE, GOCACHE), outside the wrapper module.
#
# Why a wrapper module: `go install k8s.io/kubernetes/cmd/...@v1.33.13` fails
# on the replace directives (./staging/...) of k8s.io/kubernetes' go.mod. The
# wrapper requires k8s.io/kubernetes and replaces every staging module by its
# published version (k8s.io/<x> v0.33.13), then builds the two commands with
# the version stamped (without it /version reports v0.0.0).
#
# Go: scripts/go-toolchain.sh (the first of $GO, `go` on PATH,
# /usr/local/go/bin/go that is >= 1.24; without one, the Go toolchain itself
# is fetched as the module golang.org/toolchain from the module proxy, with
# Debian's golang-go, which apt installs when there is no Go at all).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
K8S_VERSION=v1.33.13
STAGING_VERSION=v0.${K8S_VERSION#v1.}
GO_TOOLCHAIN=${ENMASSE_GO_TOOLCHAIN:-go1.24.6}
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}/kubernetes-$K8S_VERSION"
bin="$cache/bin"
# one build at a time (scripts/test.sh starts one in the background; a test
# that needs the binaries runs this script and waits here until it is done).
# flock -o: the lock is not inherited by what the script starts
if [ -z "${ENMASSE_KUBERNETES_BUILD_LOCKED:-}" ]; then
  mkdir -p "$(dirname "$cache")"
  ENMASSE_KUBERNETES_BUILD_LOCKED=1 exec flock -o "$cache.lock" bash "$0" "$@"
fi

log() { printf 'build-kubernetes: %s\n' "$*" >&2; }

as_root_apt() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    log "install $* (Debian packages) first"
    exit 1
  fi
}

# etcd: Debian's etcd-server (not started as a service; the tests start it)
if ! command -v etcd >/dev/null && [ ! -x /usr/bin/etcd ]; then
  log "apt: installing etcd-server"
  # policy-rc.d may refuse to start the service; the binary is all we need
  as_root_apt etcd-server || true
  [ -x /usr/bin/etcd ] || { log "etcd-server did not install /usr/bin/etcd"; exit 1; }
fi
mkdir -p "$bin"
ln -sf "$(command -v etcd || echo /usr/bin/etcd)" "$bin/etcd"

if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -f "$cache/.complete" ]; then
  echo "$bin"
  exit 0
fi

GO_BIN="$(bash "$here/go-toolchain.sh" 1.24 "$GO_TOOLCHAIN")"
log "Go: $GO_BIN ($("$GO_BIN" env GOVERSION))"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
# the wrapper module: small, and away from Go's caches (go mod tidy scans
# everything below the module's directory)
src="$cache/src"
mkdir -p "$src"
cd "$src"
if [ ! -f go.sum ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod 2>/dev/null; then
  log "resolving k8s.io/kubernetes@$K8S_VERSION"
  rm -f go.mod go.sum
  modfile="$(cd /tmp && GOFLAGS=-mod=mod "$GO_BIN" mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$modfile" ] || { log "no go.mod of k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
  {
    echo "module enmasse.messaging/kubernetes-test-binaries"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    # k8s.io/<x> => ./staging/src/k8s.io/<x>  ->  k8s.io/<x> => k8s.io/<x> v0.33.13
    sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._/-]*\) => \./staging/.*#replace \1 => \1 '"$STAGING_VERSION"'#p' "$modfile"
  } > go.mod
  log "$(grep -c '^replace' go.mod) staging modules replaced by their $STAGING_VERSION releases"
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  "$GO_BIN" mod tidy >&2
fi

ver=k8s.io/component-base/version
minor="${K8S_VERSION#v1.}"
minor="${minor%%.*}"
ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=$minor"
ldflags="$ldflags -X $ver.gitTreeState=clean -X $ver.buildDate=1970-01-01T00:00:00Z"
log "building kube-apiserver and kube-controller-manager $K8S_VERSION (cold: 5-10 minutes)"
"$GO_BIN" build -trimpath -ldflags "$ldflags" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager >&2
"$bin/kube-apiserver" --version >&2
touch "$cache/.complete"
echo "$bin"
