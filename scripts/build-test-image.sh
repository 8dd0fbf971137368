#!/usr/bin/env bash
# Build the systemd test image used by molecule and scripts/aio.sh.
#
#   scripts/build-test-image.sh            # build if missing or out of date
#   scripts/build-test-image.sh --force    # rebuild both layers
#   scripts/build-test-image.sh --print    # print the image name and exit
#
# There is no image registry: the base image is a Debian bookworm rootfs made
# with debootstrap from the apt mirror this machine is configured with (read
# from /etc/apt/sources.list*), imported with `podman import`. The systemd
# image is built on top of it with podman build (packages from the same
# mirror) and runs /sbin/init as PID 1.
#
# Cached: each image carries a label with a hash of its recipe; when the tag
# exists with the same hash the step is skipped (CI runs this on every clean
# clone). Change a package list below and the image is rebuilt.
#
# Environment:
#   ENMASSE_TEST_IMAGE   systemd image tag (default localhost/enmasse-messaging-systemd:bookworm)
#   ENMASSE_BASE_IMAGE   base image tag    (default localhost/enmasse-messaging-base:bookworm)
#   DEBIAN_MIRROR        override the mirror read from the apt sources
#   CONTAINERS_CONF      defaults to scripts/containers.conf next to this script
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"

SUITE=bookworm
BASE_IMAGE="${ENMASSE_BASE_IMAGE:-localhost/enmasse-messaging-base:$SUITE}"
TEST_IMAGE="${ENMASSE_TEST_IMAGE:-localhost/enmasse-messaging-systemd:$SUITE}"

# Packages of the systemd image. libxml2-utils: the broker role validates
# broker.xml with xmllint; curl: Jolokia checks in tests.
SYSTEMD_PACKAGES="systemd systemd-sysv dbus python3 openjdk-17-jre-headless python3-qpid-proton procps iproute2 ca-certificates sudo tar gzip libxml2-utils curl"
BASE_INCLUDE="ca-certificates"

force=0
case "${1:-}" in
  --force) force=1 ;;
  --print) echo "$TEST_IMAGE"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--force|--print]" >&2; exit 2 ;;
esac

log() { printf '[build-test-image] %s\n' "$*" >&2; }
# one build at a time (scripts/test.sh starts one in the background; a
# Molecule scenario that needs the image runs this script and waits here)
if [ -z "${ENMASSE_TEST_IMAGE_LOCKED:-}" ] && [ "$(id -u)" -eq 0 ]; then
  ENMASSE_TEST_IMAGE_LOCKED=1 exec flock -o /var/tmp/enmasse-test-image.lock bash "$0" "$@"
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "build-test-image.sh must run as root (debootstrap, rootful podman)" >&2
  exit 1
fi

# --- the Debian mirror, from this machine's apt configuration ----------------
find_mirror() {
  local f uri
  # deb822 (.sources): a stanza with URIs and Suites containing the suite
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri="$(awk -v suite="$SUITE" '
      BEGIN { RS=""; FS="\n" }
      {
        u=""; s=""; en=1
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/)    { sub(/^URIs:[ \t]*/, "", $i); split($i, a, /[ \t]+/); u=a[1] }
          if ($i ~ /^Suites:/)  { s=" " $i " " }
          if ($i ~ /^Enabled:[ \t]*no/) { en=0 }
        }
        if (en && u != "" && s ~ (" " suite " ") && u !~ /security/) { print u; exit }
      }' "$f")"
    if [ -n "$uri" ]; then echo "$uri"; return 0; fi
  done
  # one-line format
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri="$(awk -v suite="$SUITE" '
      $1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i+1) == suite && $i !~ /security/) { print $i; exit }
      }' "$f")"
    if [ -n "$uri" ]; then echo "$uri"; return 0; fi
  done
  return 1
}

# --- cache helpers --------------------------------------------------------------
recipe_hash() { printf '%s' "$*" | sha256sum | cut -c1-16; }
image_hash() {
  podman image inspect --format '{{ index .Labels "enmasse.recipe" }}' "$1" 2>/dev/null || true
}

base_recipe="$(recipe_hash "v1 $SUITE minbase $BASE_INCLUDE")"
# the sed program is meant literally: it prints this script's Containerfile section
# shellcheck disable=SC2016
test_recipe="$(recipe_hash "v1 $base_recipe $SYSTEMD_PACKAGES $(sed -n '/^cat > "\$ctx\/Containerfile"/,/^EOF$/p' "$0")")"

start=$(date +%s)

# --- 1. base image: debootstrap + podman import ------------------------------------
if [ "$force" -eq 0 ] && [ "$(image_hash "$BASE_IMAGE")" = "$base_recipe" ]; then
  log "base image $BASE_IMAGE is up to date (recipe $base_recipe), skipping"
else
  command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
  mirror="${DEBIAN_MIRROR:-$(find_mirror || true)}"
  [ -n "$mirror" ] || { echo "no $SUITE mirror found in /etc/apt/sources.list*; set DEBIAN_MIRROR" >&2; exit 1; }
  log "debootstrap $SUITE from $mirror"
  work="$(mktemp -d /var/tmp/enmasse-rootfs.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase --include="${BASE_INCLUDE// /,}" "$SUITE" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  # apt sources inside the image: same mirror, plus updates
  printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$SUITE" "$mirror" "$SUITE" >"$work/rootfs/etc/apt/sources.list"
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* 2>/dev/null || true
  log "podman import -> $BASE_IMAGE (debootstrap took $(( $(date +%s) - start ))s)"
  tar -C "$work/rootfs" --numeric-owner -cf - . | podman import \
      --change "LABEL enmasse.recipe=$base_recipe" \
      --change 'CMD ["/bin/bash"]' \
      - "$BASE_IMAGE" >/dev/null
  rm -rf "$work"; trap - EXIT
fi

# --- 2. systemd image ------------------------------------------------------------------
if [ "$force" -eq 0 ] && [ "$(image_hash "$TEST_IMAGE")" = "$test_recipe" ]; then
  log "systemd image $TEST_IMAGE is up to date (recipe $test_recipe), skipping"
else
  ctx="$(mktemp -d /var/tmp/enmasse-ctx.XXXXXX)"
  trap 'rm -rf "$ctx"' EXIT
cat > "$ctx/Containerfile" <<EOF
FROM $BASE_IMAGE
ENV container=podman DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \\
 && apt-get install -y --no-install-recommends $SYSTEMD_PACKAGES \\
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
# Units that make no sense (or hang) in a container.
RUN systemctl mask systemd-udevd.service systemd-udevd-kernel.socket systemd-udevd-control.socket \\
      systemd-udev-trigger.service systemd-modules-load.service sys-kernel-config.mount \\
      sys-kernel-debug.mount sys-kernel-tracing.mount sys-fs-fuse-connections.mount \\
      getty.target console-getty.service systemd-logind.service systemd-remount-fs.service \\
      systemd-firstboot.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer \\
 && systemctl set-default multi-user.target \\
 && : > /etc/machine-id
LABEL enmasse.recipe=$test_recipe
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
EOF
  log "podman build -> $TEST_IMAGE"
  t_build=$(date +%s)
  podman build --network=host --layers=false -t "$TEST_IMAGE" -f "$ctx/Containerfile" "$ctx" >&2
  rm -rf "$ctx"; trap - EXIT
  log "systemd layer built in $(( $(date +%s) - t_build ))s"
fi

log "done in $(( $(date +%s) - start ))s: $TEST_IMAGE"
echo "$TEST_IMAGE"
