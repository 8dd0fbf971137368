#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian/Ubuntu machine and runs
# the whole suite: unit, integration (real Artemis, real AMQP clients), Spark
# (real local[2] jobs) and the Molecule scenario (systemd container, podman).
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -m unit    # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
ARTEMIS_VERSION=${ARTEMIS_VERSION:-2.40.0}

log() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  for pkg in podman runc debootstrap libxml2-utils maven default-jre-headless; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "apt: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

log "pip: test requirements"
python3 -m pip install -q -r requirements-test.txt

log "artemis ${ARTEMIS_VERSION}: local Maven cache (the roles' offline path)"
ARTEMIS_TGZ="$HOME/.m2/repository/org/apache/activemq/apache-artemis/${ARTEMIS_VERSION}/apache-artemis-${ARTEMIS_VERSION}-bin.tar.gz"
if [ ! -f "$ARTEMIS_TGZ" ]; then
  mvn -q dependency:get -Dartifact="org.apache.activemq:apache-artemis:${ARTEMIS_VERSION}:tar.gz:bin" -Dtransitive=false
fi
export ENMASSE_ARTEMIS_ARCHIVE="$ARTEMIS_TGZ"

# the checkout as ansible_collections/enmasse/messaging
source scripts/collection-path.sh

log "static checks: ansible-doc, collection build, role argument specs"
for m in plugins/modules/*.py; do
  name=$(basename "$m" .py)
  ansible-doc "enmasse.messaging.$name" >/dev/null || { echo "ansible-doc failed for $name"; exit 1; }
done
build_dir=$(mktemp -d)
ansible-galaxy collection build --force --output-path "$build_dir" . >/dev/null
rm -rf "$build_dir"
python3 scripts/check_argument_specs.py

log "pytest"
exec python3 -m pytest "$@"
