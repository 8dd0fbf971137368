#!/usr/bin/env bash
# Build Qpid Dispatch Router (qdrouterd) from a source archive against the
# operating system's Qpid Proton and install it into PREFIX. One recipe, two
# users: the router role copies this file to a router host
# (roles/router/tasks/build.yml) and scripts/build-router.sh runs it for the
# tests and the all-in-one deployment.
#
#   build-qdrouterd.sh ARCHIVE PREFIX [EXTRA_CMAKE_OPTION ...]
#
# - The OS ships proton's C library and headers but no CMake package config:
#   a ProtonConfig.cmake is generated from /usr/include/proton/version.h and
#   the libraries found in the system library directory.
# - Always: -DUSE_LIBWEBSOCKETS=OFF (no websockets dependency),
#   -DCONSOLE_INSTALL=OFF (the web console needs Node and fails under Node 20),
#   -DBUILD_TESTING=OFF, -DCMAKE_BUILD_TYPE=RelWithDebInfo; extra options follow.
# - The router embeds the Python it is built with: QDR_PYTHON (default
#   /usr/bin/python3) must be the Python the router host runs.
# - Patches: every patches/qdrouterd-<version>-*.patch next to this script
#   (<version> from the source directory's name, qpid-dispatch-<version>) is
#   applied with `patch -p1` in name order before configuring; a patch that
#   does not apply stops the build. Today: qdrouterd-1.19.0-ssl-domain-cache
#   (one TLS domain per listener instead of one per connection),
#   qdrouterd-1.19.0-policy-routed-form (the policy checks the form the router
#   routes too), qdrouterd-1.19.0-policy-dynamic-address (and the address
#   of a dynamic terminus) and qdrouterd-1.19.0-discriminator-getrandom (the
#   names it makes up from the kernel's random bytes); see docs/router-role.md.
# - PREFIX is replaced as a whole; the previous tree is put back when the
#   install fails.
# - Writes PREFIX/share/enmasse-messaging/pythonpath: the PYTHONPATH the
#   router needs at run time (the installed qpid_dispatch package or egg, and
#   <prefix>/lib/qpid-dispatch/python).
#
# Environment: QDR_PYTHON, QDR_JOBS (default: nproc), QDR_WORKDIR (default: a
# new temporary directory, removed afterwards).
# Prints the prefix on stdout; on failure the end of the failing log on stderr.
set -euo pipefail
patch_dir="$(cd "$(dirname "$0")" && pwd)/patches"

[ $# -ge 2 ] || { echo "usage: $0 ARCHIVE PREFIX [EXTRA_CMAKE_OPTION ...]" >&2; exit 2; }
archive="$1"
prefix="$2"
shift 2
python="${QDR_PYTHON:-/usr/bin/python3}"
jobs="${QDR_JOBS:-$(nproc)}"
[ -f "$archive" ] || { echo "build-qdrouterd: no source archive at $archive" >&2; exit 1; }
[ -x "$python" ] || { echo "build-qdrouterd: no Python at $python" >&2; exit 1; }
case "$prefix" in /*) ;; *) echo "build-qdrouterd: PREFIX must be absolute: $prefix" >&2; exit 1 ;; esac

if [ -n "${QDR_WORKDIR:-}" ]; then
  work="$QDR_WORKDIR"
  rm -rf "$work"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
fi
trap 'rm -rf "$work"' EXIT

fail() {  # fail LOG: show the end of a log and stop
  tail -n 40 "$1" >&2
  exit 1
}

# --- proton: version and libraries of the OS packages -------------------------
header=/usr/include/proton/version.h
[ -f "$header" ] || { echo "build-qdrouterd: $header missing (proton C headers: libqpid-proton11-dev / qpid-proton-c-devel)" >&2; exit 1; }
pn() { awk -v k="PN_VERSION_$1" '$1 == "#define" && $2 == k {print $3}' "$header"; }
proton_version="$(pn MAJOR).$(pn MINOR).$(pn POINT)"

libdir=""
for d in "/usr/lib/$(gcc -print-multiarch 2>/dev/null || true)" /usr/lib64 /usr/lib; do
  if compgen -G "$d/libqpid-proton-core.so*" >/dev/null; then libdir="$d"; break; fi
done
[ -n "$libdir" ] || { echo "build-qdrouterd: libqpid-proton-core.so not found in the system library directories" >&2; exit 1; }
# the development link when there is one, else the shortest versioned name (the soname)
lib() {
  if [ -e "$libdir/$1.so" ]; then echo "$libdir/$1.so"; return; fi
  local found
  found="$(find "$libdir" -maxdepth 1 -name "$1.so.*" -printf '%f\n' | awk '{print length, $0}' | sort -n | head -1 | cut -d' ' -f2)"
  [ -n "$found" ] || { echo "build-qdrouterd: $1.so not found in $libdir" >&2; exit 1; }
  echo "$libdir/$found"
}
core="$(lib libqpid-proton-core)"
proactor="$(lib libqpid-proton-proactor)"
full="$(lib libqpid-proton)"

mkdir -p "$work/proton-cmake" "$work/build"
cat > "$work/proton-cmake/ProtonConfig.cmake" <<CFG
set(Proton_VERSION $proton_version)
set(Proton_FOUND TRUE)
set(Proton_Core_FOUND TRUE)
set(Proton_Proactor_FOUND TRUE)
set(Proton_INCLUDE_DIRS /usr/include)
set(Proton_Core_INCLUDE_DIRS /usr/include)
set(Proton_Proactor_INCLUDE_DIRS /usr/include)
set(Proton_Core_LIBRARIES $core)
set(Proton_Proactor_LIBRARIES $proactor)
set(Proton_LIBRARIES $full)
CFG
cat > "$work/proton-cmake/ProtonConfigVersion.cmake" <<CFG
set(PACKAGE_VERSION $proton_version)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
CFG

# --- configure, build, install ------------------------------------------------------
tar -xzf "$archive" -C "$work"
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qpid-dispatch*' | head -1)"
[ -n "$src" ] || { echo "build-qdrouterd: $archive holds no qpid-dispatch* directory" >&2; exit 1; }
version="${src##*/qpid-dispatch-}"
for p in "$patch_dir/qdrouterd-$version-"*.patch; do
  [ -f "$p" ] || continue
  command -v patch >/dev/null || { echo "build-qdrouterd: 'patch' is needed to apply $p" >&2; exit 1; }
  patch -p1 --batch --forward -d "$src" -i "$p" >"$work/patch.log" 2>&1 || fail "$work/patch.log"
done

# the Python to embed comes first on PATH (CMake's FindPython takes the first)
PATH="$(dirname "$python"):$PATH"
export PATH
cd "$work/build"
cmake "$src" -DCMAKE_INSTALL_PREFIX="$prefix" -DProton_DIR="$work/proton-cmake" \
  -DPython_EXECUTABLE="$python" -DUSE_LIBWEBSOCKETS=OFF -DCONSOLE_INSTALL=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$work/cmake.log" 2>&1 || fail "$work/cmake.log"
make -j"$jobs" qdrouterd >"$work/make.log" 2>&1 || fail "$work/make.log"

old=""
if [ -e "$prefix" ]; then
  old="$prefix.old.$$"
  mv "$prefix" "$old"
fi
if ! make install >"$work/install.log" 2>&1; then
  rm -rf "$prefix"
  [ -z "$old" ] || mv "$old" "$prefix"
  fail "$work/install.log"
fi
[ -z "$old" ] || rm -rf "$old"

# --- the run-time PYTHONPATH ----------------------------------------------------------
# setup.py installs qpid_dispatch as an egg (setuptools present) or as a
# package directory (plain distutils), under a scheme that differs per OS
egg="$(find "$prefix" -name 'qpid_dispatch-*.egg' -prune -print | head -1)"
if [ -z "$egg" ]; then
  pkg="$(find "$prefix" -type d -name qpid_dispatch -path '*-packages/qpid_dispatch' -prune -print | head -1)"
  [ -n "$pkg" ] || { echo "build-qdrouterd: the qpid_dispatch Python package was not installed under $prefix" >&2; exit 1; }
  egg="$(dirname "$pkg")"
fi
internal="$(find "$prefix" -type d -name qpid_dispatch_internal -prune -print | head -1)"
[ -n "$internal" ] || { echo "build-qdrouterd: qpid_dispatch_internal was not installed under $prefix" >&2; exit 1; }
mkdir -p "$prefix/share/enmasse-messaging"
echo "$egg:$(dirname "$internal")" > "$prefix/share/enmasse-messaging/pythonpath"
echo "$prefix"
