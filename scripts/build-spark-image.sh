#!/usr/bin/env bash
# Build the image of the Spark cluster scenario (molecule/spark-cluster): the
# systemd test image (scripts/build-test-image.sh, unchanged) plus
# python3-venv and the two roles' virtual environments, installed from a
# wheelhouse made on this machine with pip wheel (pip's cache: no download
# when the pins are cached). With the pins already installed, the roles'
# venv tasks find nothing missing and install nothing, so the scenario does
# not copy and unpack 500 MB of wheels into four containers on every run.
#
#   scripts/build-spark-image.sh            # build if missing or out of date
#   scripts/build-spark-image.sh --force    # rebuild this layer
#   scripts/build-spark-image.sh --print    # print the image name and exit
#
# The pins are read from the roles' defaults (capacity_planner_pip_packages,
# spark_standalone_pip_packages): change one and the image is rebuilt.
# Environment: ENMASSE_SPARK_IMAGE (default localhost/enmasse-messaging-spark:bookworm),
# ENMASSE_TEST_IMAGE, CONTAINERS_CONF, ENMASSE_PYTHON (the python with pip; default python3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
SPARK_IMAGE="${ENMASSE_SPARK_IMAGE:-localhost/enmasse-messaging-spark:bookworm}"
PY="${ENMASSE_PYTHON:-python3}"

case "${1:-}" in
  --force) force=1 ;;
  --print) echo "$SPARK_IMAGE"; exit 0 ;;
  "") force=0 ;;
  *) echo "usage: $0 [--force|--print]" >&2; exit 2 ;;
esac
log() { printf '[build-spark-image] %s\n' "$*" >&2; }
# one build at a time (scripts/test.sh starts one in the background)
if [ -z "${ENMASSE_SPARK_IMAGE_LOCKED:-}" ] && [ "$(id -u)" -eq 0 ]; then
  ENMASSE_SPARK_IMAGE_LOCKED=1 exec flock -o /var/tmp/enmasse-spark-image.lock bash "$0" "$@"
fi

base="$("$here/build-test-image.sh")"
pins() {  # the pinned packages of a role's defaults
  "$PY" -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))[sys.argv[2]]))' \
    "$repo/roles/$1/defaults/main.yml" "$2"
}
planner_pins="$(pins capacity_planner capacity_planner_pip_packages)"
spark_pins="$(pins spark_standalone spark_standalone_pip_packages)"
base_id="$(podman image inspect --format '{{ .Id }}' "$base")"
# the sed program is meant literally: it prints this script's Containerfile section
# shellcheck disable=SC2016
recipe="$(printf '%s' "v1 $base_id $planner_pins | $spark_pins $(sed -n '/^cat > "\$ctx\/Containerfile"/,/^EOF$/p' "$0")" | sha256sum | cut -c1-16)"
have="$(podman image inspect --format '{{ index .Labels "enmasse.recipe" }}' "$SPARK_IMAGE" 2>/dev/null || true)"
if [ "$force" -eq 0 ] && [ "$have" = "$recipe" ]; then
  log "$SPARK_IMAGE is up to date (recipe $recipe), skipping"
  echo "$SPARK_IMAGE"; exit 0
fi

start=$(date +%s)
ctx="$(mktemp -d /var/tmp/enmasse-spark-ctx.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
log "pip wheel $planner_pins $spark_pins"
# shellcheck disable=SC2086
"$PY" -m pip wheel -q --disable-pip-version-check -w "$ctx/wheels" $planner_pins $spark_pins >&2
cat > "$ctx/Containerfile" <<EOF
FROM $base
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3-venv \\
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/enmasse-capacity/venv \\
 && /opt/enmasse-capacity/venv/bin/pip install -q --no-index --find-links /tmp/wheels $planner_pins \\
 && python3 -m venv /opt/enmasse-spark/venv \\
 && /opt/enmasse-spark/venv/bin/pip install -q --no-index --find-links /tmp/wheels $spark_pins \\
 && rm -rf /tmp/wheels /root/.cache/pip
LABEL enmasse.recipe=$recipe
EOF
log "podman build -> $SPARK_IMAGE"
podman build --network=host --layers=false -t "$SPARK_IMAGE" -f "$ctx/Containerfile" "$ctx" >&2
log "done in $(( $(date +%s) - start ))s"
echo "$SPARK_IMAGE"
