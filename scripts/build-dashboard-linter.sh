#!/usr/bin/env bash
# Installs github.com/grafana/dashboard-linter once into a cached directory
# and prints the binary's path (tests/unit/test_monitoring_dashboards.py):
#
#   bash scripts/build-dashboard-linter.sh    # prints .../dashboard-linter
#
# The version is DASHBOARD_LINTER_VERSION (a module version; go.sum's
# checksum database verifies the download). Exits 1 with a reason when there
# is no 'go' or the module cannot be fetched.
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
mkdir -p "$dir"
GOBIN="$dir" CGO_ENABLED=0 go install -trimpath "github.com/grafana/dashboard-linter@$version" >&2
touch "$dir/.complete"
echo "$bin"
