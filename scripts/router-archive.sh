#!/usr/bin/env bash
# Prints the path of the qdrouterd 1.19.0 source archive (no package registry
# serves it): $ENMASSE_ROUTER_ARCHIVE, else the vendor copy beside the
# repository (../shared/vendor), else the copy kept in the cache by an earlier
# run (~/.cache/enmasse-messaging/vendor), else this machine's shared vendor
# directory (/work/shared/vendor). A copy found is kept in the cache, so that a
# clone anywhere finds it. Exit 1 with the places looked at when none exists.
set -euo pipefail
name=qpid-dispatch-1.19.0.tar.gz
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}/vendor"
candidates=("${ENMASSE_ROUTER_ARCHIVE:-}" "$here/../shared/vendor/$name" "$cache/$name" "/work/shared/vendor/$name")
for c in "${candidates[@]}"; do
  if [ -z "$c" ] || [ ! -f "$c" ]; then
    continue
  fi
  path="$(cd "$(dirname "$c")" && pwd)/$(basename "$c")"
  if [ "$path" != "$cache/$name" ]; then
    mkdir -p "$cache"
    if ! cmp -s "$path" "$cache/$name" 2>/dev/null; then
      cp "$path" "$cache/$name.tmp" && mv -f "$cache/$name.tmp" "$cache/$name"
    fi
  fi
  echo "$path"
  exit 0
done
echo "router-archive: no $name (looked at: ${candidates[*]}); set ENMASSE_ROUTER_ARCHIVE" >&2
exit 1
