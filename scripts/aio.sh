#!/usr/bin/env bash
# All-in-one deployment: ActiveMQ Artemis + the address spaces of
# inventories/aio/group_vars/all.yml (the `demo` brokered space), on this
# machine, with no inventory editing.
#
#   bash scripts/aio.sh                  # deploy / converge
#   bash scripts/aio.sh --twice          # ... then run again and require changed=0
#   bash scripts/aio.sh --uninstall      # remove the brokers (playbooks/uninstall.yml)
#   bash scripts/aio.sh -- --check --diff  # extra arguments after -- go to ansible-playbook
#
# What it does on a fresh Debian/Ubuntu machine (as root, or with sudo):
#   1. ansible: uses ansible-playbook from PATH, else installs the `ansible`
#      package from PyPI into .venv/ (python3 -m venv; apt python3-venv if needed);
#   2. Artemis: puts apache-artemis-<version>-bin.tar.gz into the local Maven
#      cache with `mvn dependency:get` if it is not there (apt maven if needed)
#      and passes it as broker_archive_src (the role's offline path; without
#      Maven the broker host downloads from the Apache archive instead);
#   3. target: with systemd as PID 1 ([ -d /run/systemd/system ]) this machine
#      itself (ansible_connection=local); otherwise a systemd container
#      `enmasse-aio` built by scripts/build-test-image.sh (apt podman runc
#      debootstrap if needed), its broker ports published on 127.0.0.1 only,
#      reached with the containers.podman.podman connection;
#   4. runs playbooks/site.yml with the collection importable as
#      enmasse.messaging (scripts/collection-path.sh).
#
# Environment: ARTEMIS_VERSION (2.40.0), ENMASSE_AIO_CONTAINER (enmasse-aio),
# ENMASSE_AIO_TARGET (auto | host | container).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$(pwd)"
ARTEMIS_VERSION="${ARTEMIS_VERSION:-2.40.0}"
CONTAINER="${ENMASSE_AIO_CONTAINER:-enmasse-aio}"
TARGET="${ENMASSE_AIO_TARGET:-auto}"
# container ports published on 127.0.0.1 (amqp core openwire stomp mqtt)
AIO_PORTS="5672 61616 61617 61613 1883"

twice=0; uninstall=0; extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --twice) twice=1 ;;
    --uninstall) uninstall=1 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '\n=== %s\n' "$*" >&2; }
die() { printf 'aio: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "run as root or install sudo"
  SUDO="sudo"
fi

apt_install() {
  local need=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
  [ ${#need[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${need[*]} and no apt-get: install them first"
  log "apt: installing ${need[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# --- 1. ansible ------------------------------------------------------------------
if ! command -v ansible-playbook >/dev/null; then
  if [ ! -x .venv/bin/ansible-playbook ]; then
    log "pip: installing ansible into .venv/"
    python3 -m venv .venv 2>/dev/null || { apt_install python3-venv; python3 -m venv .venv; }
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q ansible
  fi
  export PATH="$REPO/.venv/bin:$PATH"
fi
# the checkout as ansible_collections/enmasse/messaging
source scripts/collection-path.sh
for c in containers.podman community.general ansible.posix; do
  ansible-galaxy collection list "$c" >/dev/null 2>&1 || die "collection $c not found (pip install ansible provides it)"
done

# --- 2. Artemis into the local Maven cache ------------------------------------
ARCHIVE="$HOME/.m2/repository/org/apache/activemq/apache-artemis/$ARTEMIS_VERSION/apache-artemis-$ARTEMIS_VERSION-bin.tar.gz"
if [ ! -f "$ARCHIVE" ] && [ "$uninstall" -eq 0 ]; then
  command -v mvn >/dev/null || ( apt_install maven default-jre-headless ) || true
  if command -v mvn >/dev/null; then
    log "maven: fetching org.apache.activemq:apache-artemis:$ARTEMIS_VERSION:tar.gz:bin"
    mvn -q dependency:get -Dartifact="org.apache.activemq:apache-artemis:$ARTEMIS_VERSION:tar.gz:bin" -Dtransitive=false \
      || echo "aio: maven could not fetch Artemis; the broker host will download it" >&2
  fi
fi
archive_args=()
[ -f "$ARCHIVE" ] && archive_args=(-e "broker_archive_src=$ARCHIVE")

# --- 3. target: this host or a systemd container -----------------------------------
if [ "$TARGET" = auto ]; then
  if [ -d /run/systemd/system ]; then TARGET=host; else TARGET=container; fi
fi
inventory=(-i inventories/aio)
become_args=()
case "$TARGET" in
  host)
    log "target: this host (systemd is PID 1)"
    if [ -n "$SUDO" ] && ! sudo -n true 2>/dev/null; then become_args=(--ask-become-pass); fi
    ;;
  container)
    log "target: systemd container $CONTAINER (this host does not run systemd as PID 1)"
    [ "$(id -u)" -eq 0 ] || die "the container target needs root (rootful podman); run with sudo"
    apt_install podman runc debootstrap
    export CONTAINERS_CONF="${CONTAINERS_CONF:-$REPO/scripts/containers.conf}"
    t0=$(date +%s)
    image="$(scripts/build-test-image.sh)"
    log "image $image ready in $(( $(date +%s) - t0 ))s"
    state="$(podman container inspect -f '{{.State.Status}}' "$CONTAINER" 2>/dev/null || echo missing)"
    case "$state" in
      running) ;;
      missing)
        if [ "$uninstall" -eq 1 ]; then echo "aio: no container $CONTAINER, nothing to uninstall"; exit 0; fi
        publish=()
        for p in $AIO_PORTS; do publish+=(-p "127.0.0.1:$p:$p"); done
        # CAP_SYS_ADMIN lets systemd apply the unit's sandbox (ProtectSystem=strict, ...)
        podman run -d --name "$CONTAINER" --hostname "$CONTAINER" --systemd=always \
          --cap-add SYS_ADMIN "${publish[@]}" "$image" >/dev/null ;;
      *) podman start "$CONTAINER" >/dev/null ;;
    esac
    for _ in $(seq 60); do
      s="$(podman exec "$CONTAINER" systemctl is-system-running 2>/dev/null || true)"
      case "$s" in running|degraded) break ;; esac
      sleep 1
    done
    gen="$(mktemp -d /tmp/enmasse-aio-inv.XXXXXX)"
    trap 'rm -rf "$gen"' EXIT
    cat >"$gen/container.yml" <<EOF
# generated by scripts/aio.sh: the host aio is the systemd container $CONTAINER
all:
  children:
    brokers:
      hosts:
        aio:
          ansible_connection: containers.podman.podman
          ansible_host: $CONTAINER
          ansible_python_interpreter: /usr/bin/python3
EOF
    inventory+=(-i "$gen/container.yml")
    ;;
  *) die "ENMASSE_AIO_TARGET must be auto, host or container" ;;
esac

# --- 4. the playbook ------------------------------------------------------------------
if [ "$uninstall" -eq 1 ]; then
  log "ansible-playbook playbooks/uninstall.yml"
  ansible-playbook "${inventory[@]}" "${become_args[@]}" playbooks/uninstall.yml "${extra[@]}"
  [ "$TARGET" = container ] && { podman rm -f "$CONTAINER" >/dev/null; echo "aio: container $CONTAINER removed"; }
  exit 0
fi

run_site() {
  ansible-playbook "${inventory[@]}" "${become_args[@]}" playbooks/site.yml "${archive_args[@]}" "${extra[@]}"
}
log "ansible-playbook playbooks/site.yml"
t0=$(date +%s)
run_site
log "deployed in $(( $(date +%s) - t0 ))s; passwords are in $REPO/credentials/ (never printed)"

if [ "$twice" -eq 1 ]; then
  log "second run: must report changed=0"
  out="$(mktemp)"
  run_site | tee "$out"
  recap="$(sed -n '/PLAY RECAP/,$p' "$out")"
  rm -f "$out"
  if echo "$recap" | grep -E 'changed=[1-9]' >/dev/null; then
    die "second run changed something: not idempotent"
  fi
  echo "aio: idempotent (changed=0 on the second run)"
fi
