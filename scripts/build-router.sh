#!/usr/bin/env bash
# Builds Qpid Dispatch Router (qdrouterd) 1.19.0 from a source archive against
# the operating system's proton (Debian 12: libqpid-proton11-dev) into a cached
# install prefix, for the tests and the all-in-one deployment. The build
# itself is roles/router/files/build-qdrouterd.sh, the same recipe the router
# role runs on a router host (roles/router/tasks/build.yml).
#
#   bash scripts/build-router.sh [archive]   # prints the install prefix
#
# archive: default ../shared/vendor/qpid-dispatch-1.19.0.tar.gz (or
# $ENMASSE_ROUTER_ARCHIVE). The prefix is keyed by the archive's sha256 and
# the sha256 of the patches the recipe applies
# (roles/router/files/patches/qdrouterd-1.19.0-*.patch), so a new archive or a
# changed patch builds anew and an unchanged pair is reused. The prefix's
# share/enmasse-messaging/pythonpath holds the PYTHONPATH qdrouterd needs.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
archive="${1:-${ENMASSE_ROUTER_ARCHIVE:-$here/../shared/vendor/qpid-dispatch-1.19.0.tar.gz}}"
[ -f "$archive" ] || { echo "build-router: no source archive at $archive" >&2; exit 1; }
sum="$(sha256sum "$archive" | cut -c1-12)"
# the patches the recipe applies to 1.19.0 (name and content) are part of the key
patches=("$here"/roles/router/files/patches/qdrouterd-1.19.0-*.patch)
if [ -f "${patches[0]}" ]; then
  psum="$(cd "$here/roles/router/files/patches" && sha256sum "${patches[@]##*/}" | sha256sum | cut -c1-12)"
  sum="$sum-p$psum"
fi
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
prefix="$cache/qdrouterd-1.19.0-$sum"
if [ -f "$prefix/.complete" ]; then
  echo "$prefix"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # the Debian list of roles/router/vars/Debian.yml (__router_build_packages)
  need=()
  for pkg in cmake patch make gcc g++ libqpid-proton11-dev python3-qpid-proton python3-dev libpython3-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
# the router's management agent runs in the system Python: build against it
QDR_PYTHON=/usr/bin/python3 bash "$here/roles/router/files/build-qdrouterd.sh" "$archive" "$prefix" >/dev/null
touch "$prefix/.complete"
echo "$prefix"
