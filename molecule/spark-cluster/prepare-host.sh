#!/usr/bin/env bash
# Molecule dependency step of the spark-cluster scenario: build (or reuse) the
# Spark test image (scripts/build-spark-image.sh, on top of the systemd test
# image), make the checkout importable as enmasse.messaging under $1, and
# generate the metrics store the cluster reads ($2, bind-mounted into every
# container at the same path: the shared filesystem of docs/spark-cluster.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/scripts/containers.conf}"
"$repo/scripts/build-spark-image.sh" >/dev/null
ENMASSE_COLLECTIONS_DIR="$1" "$repo/scripts/collection-path.sh" >/dev/null
store="$2"
if [ ! -f "$store/model.json" ]; then
  rm -rf "$store"
  PYTHONPATH="$1${PYTHONPATH:+:$PYTHONPATH}" python3 "$repo/spark_jobs/generate_metrics.py" \
    --out "$store" --target-samples "${ENMASSE_SPARK_SCENARIO_SAMPLES:-1000000}" >/dev/null
fi
chmod -R a+rX "$store"
echo "spark image, collection path and metrics store ready ($store)"
