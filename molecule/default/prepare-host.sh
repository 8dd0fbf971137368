#!/usr/bin/env bash
# Molecule dependency step: build (or reuse) the systemd test image and make
# the checkout importable as enmasse.messaging under $1 (the collections
# directory molecule.yml puts first in ANSIBLE_COLLECTIONS_PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/scripts/containers.conf}"
"$repo/scripts/build-test-image.sh" >/dev/null
ENMASSE_COLLECTIONS_DIR="$1" "$repo/scripts/collection-path.sh" >/dev/null
echo "test image and collection path ready ($1)"
