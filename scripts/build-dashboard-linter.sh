#!/usr/bin/env bash
# Installs github.com/grafana/dashboard-linter once into a cached directory
# and prints the binary's path (tests/unit/test_monitoring_dashboards.py):
#
#   bash scripts/build-dashboard-linter.sh    # prints .../dashboard-linter
#
# The version is DASHBOARD_LINTER_VERSION (a module version; go.sum's
# checksum database verifies the download). Exits 1 with a reason when there
# is no 'go' or the module cannot be fetched.
#
# The Go module proxy may refuse the linter's module (it answered 403 here).
# Then build it from its source: DASHBOARD_LINTER_SRC names a directory
# holding it (e.g. `git archive 3a4ff2b` of the linter's repository: the last
# commit whose go.mod needs no AGPL module, Apache-2.0 like the linter; its
# dependencies come from the Go module proxy as usual). The build is kept in
# the cache (dashboard-linter-src) and used when the module is not cached.
set -euo pipefail
version="${DASHBOARD_LINTER_VERSION:-latest}"
command -v go >/dev/null || { echo "build-dashboard-linter: no 'go' on PATH" >&2; exit 1; }
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
dir="$cache/dashboard-linter-$version"
bin="$dir/dashboard-linter"
if [ -x "$bin" ] && [ -f "$dir/.complete" ]; then
  echo "$bin"
  exit 0
fi
src_dir="$cache/dashboard-linter-src"
if [ -n "${DASHBOARD_LINTER_SRC:-}" ]; then
  [ -f "$DASHBOARD_LINTER_SRC/go.mod" ] || { echo "build-dashboard-linter: no go.mod in $DASHBOARD_LINTER_SRC" >&2; exit 1; }
  mkdir -p "$src_dir"
  rm -f "$src_dir/.complete"
  (cd "$DASHBOARD_LINTER_SRC" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$src_dir/dashboard-linter" .) >&2
  touch "$src_dir/.complete"
  echo "$src_dir/dashboard-linter"
  exit 0
fi
if [ -x "$src_dir/dashboard-linter" ] && [ -f "$src_dir/.complete" ]; then
  echo "$src_dir/dashboard-linter"
  exit 0
fi
mkdir -p "$dir"
GOBIN="$dir" CGO_ENABLED=0 go install -trimpath "github.com/grafana/dashboard-linter@$version" >&2
touch "$dir/.complete"
echo "$bin"
