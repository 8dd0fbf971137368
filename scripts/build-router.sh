#!/usr/bin/env bash
# Builds Qpid Dispatch Router (qdrouterd) 1.19.0 from a source archive against
# the operating system's proton (Debian 12: libqpid-proton11-dev) into a cached
# install prefix, for the tests and the all-in-one deployment. The router role
# does the same on a router host (roles/router/tasks/build.yml).
#
#   bash scripts/build-router.sh [archive]   # prints the install prefix
#
# archive: default ../shared/vendor/qpid-dispatch-1.19.0.tar.gz (or
# $ENMASSE_ROUTER_ARCHIVE). The prefix is keyed by the archive's sha256, so a
# new archive builds anew and an unchanged one is reused.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
archive="${1:-${ENMASSE_ROUTER_ARCHIVE:-$here/../shared/vendor/qpid-dispatch-1.19.0.tar.gz}}"
[ -f "$archive" ] || { echo "build-router: no source archive at $archive" >&2; exit 1; }
sum="$(sha256sum "$archive" | cut -c1-12)"
cache="${ENMASSE_CACHE_DIR:-$HOME/.cache/enmasse-messaging}"
prefix="$cache/qdrouterd-1.19.0-$sum"
if [ -f "$prefix/.complete" ]; then
  echo "$prefix"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  for pkg in cmake make gcc libqpid-proton11-dev python3-qpid-proton python3-dev libpython3-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$archive" -C "$work"
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)"
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$work/proton-cmake"
cat > "$work/proton-cmake/ProtonConfig.cmake" <<CFG
set(Proton_VERSION 0.37.0)
set(Proton_FOUND TRUE)
set(Proton_Core_FOUND TRUE)
set(Proton_Proactor_FOUND TRUE)
set(Proton_INCLUDE_DIRS /usr/include)
set(Proton_Core_INCLUDE_DIRS /usr/include)
set(Proton_Proactor_INCLUDE_DIRS /usr/include)
set(Proton_Core_LIBRARIES $libdir/libqpid-proton-core.so.10)
set(Proton_Proactor_LIBRARIES $libdir/libqpid-proton-proactor.so.1)
set(Proton_LIBRARIES $libdir/libqpid-proton.so.11)
CFG
cat > "$work/proton-cmake/ProtonConfigVersion.cmake" <<'CFG'
set(PACKAGE_VERSION 0.37.0)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
CFG
rm -rf "$prefix"
mkdir -p "$work/build"
# the router's management agent runs in the system Python: build against it
(
  cd "$work/build"
  PATH="/usr/bin:$PATH" cmake "$src" -DCMAKE_INSTALL_PREFIX="$prefix" -DProton_DIR="$work/proton-cmake" \
    -DPython_EXECUTABLE=/usr/bin/python3 -DUSE_LIBWEBSOCKETS=OFF -DCONSOLE_INSTALL=OFF -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 || { tail -40 "$work/cmake.log" >&2; exit 1; }
  PATH="/usr/bin:$PATH" make -j"$(nproc)" qdrouterd >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
  PATH="/usr/bin:$PATH" make install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
)
touch "$prefix/.complete"
echo "$prefix"
