#!/usr/bin/env bash
# All-in-one deployment: ActiveMQ Artemis + the address spaces of
# inventories/aio/group_vars/all.yml (the `demo` brokered space), on this
# machine, with no inventory editing.
#
#   bash scripts/aio.sh                  # deploy / converge
#   bash scripts/aio.sh --twice          # ... then run again and require changed=0
#   bash scripts/aio.sh --uninstall      # remove the brokers (playbooks/uninstall.yml)
#   bash scripts/aio.sh --print-ports    # the ports the container publishes, then exit
#   bash scripts/aio.sh -- --check --diff  # extra arguments after -- go to ansible-playbook
#                                          # (--check: report what would change, change nothing)
#
# What it does on a fresh Debian/Ubuntu machine (as root, or with sudo):
#   1. ansible: uses ansible-playbook from PATH, else installs the `ansible`
#      package from PyPI into .venv/ (python3 -m venv; apt python3-venv if needed);
#   2. Artemis: puts apache-artemis-<version>-bin.tar.gz into the local Maven
#      cache with `mvn dependency:get` if it is not there (apt maven if needed)
#      and passes it as broker_archive_src (the role's offline path; without
#      Maven the broker host downloads from the Apache archive instead);
#      Keycloak (org.keycloak:keycloak-quarkus-dist) the same way, passed as
#      keycloak_archive;
#   3. checks the variables (playbooks/inputs.yml: the model's rules, no host
#      touched) and learns the client ports of every instance from the broker
#      role's layout;
#   4. target: with systemd as PID 1 ([ -d /run/systemd/system ]) this machine
#      itself (ansible_connection=local; the brokers listen on 127.0.0.1, see
#      inventories/aio); otherwise a systemd container `enmasse-aio` built by
#      scripts/build-test-image.sh (apt podman runc debootstrap if needed),
#      the client ports of every instance published on 127.0.0.1 only,
#      reached with the community.docker.nsenter connection (the namespaces of
#      the container's init, entered directly: a few ms per command, where
#      `podman exec` costs about 0.3 s, several times per task);
#   4b. the MQTT gateway: built once from gateway/mqtt (scripts/build-mqtt-gateway.sh;
#      Go >= 1.25 from scripts/go-toolchain.sh: with Debian's golang-go, too old
#      itself, the toolchain is fetched as a Go module) and passed as
#      mqtt_gateway_binary;
#   5. runs playbooks/site.yml with the collection importable as
#      enmasse.messaging (scripts/collection-path.sh).
#
# Python packages go only into the project's .venv/ (ENMASSE_VENV), never
# into the system interpreter.
#
# Environment: ARTEMIS_VERSION (2.40.0), ENMASSE_AIO_CONTAINER (enmasse-aio),
# ENMASSE_AIO_TARGET (auto | host | container), ENMASSE_VENV (.venv),
# ENMASSE_AIO_IMAGE_BUILDER (scripts/build-test-image.sh), ENMASSE_MQTT_GATEWAY
# (a gateway binary already built: not built again).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$(pwd)"
ARTEMIS_VERSION="${ARTEMIS_VERSION:-2.40.0}"
KEYCLOAK_VERSION="${KEYCLOAK_VERSION:-26.4.7}"
CONTAINER="${ENMASSE_AIO_CONTAINER:-enmasse-aio}"
TARGET="${ENMASSE_AIO_TARGET:-auto}"
VENV="${ENMASSE_VENV:-$REPO/.venv}"

twice=0; uninstall=0; print_ports=0; extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --twice) twice=1 ;;
    --uninstall) uninstall=1 ;;
    --print-ports) print_ports=1 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '\n=== %s\n' "$*" >&2; }
die() { printf 'aio: %s\n' "$*" >&2; exit 1; }
# what --uninstall keeps: said, so that nobody has to guess
left_behind() {
  cat <<EOF
aio: left on disk (remove by hand when no longer wanted):
  $REPO/credentials/  generated passwords (a new deployment reuses them)
  $ARCHIVE  the Artemis archive in the Maven cache$( [ -f "$ARCHIVE" ] || printf ' (not present)')
  $VENV/  the Python virtual environment$( [ -d "$VENV" ] || printf ' (not present)')
  podman image localhost/enmasse-messaging-systemd:bookworm and its base image (podman rmi ...)
  on a systemd host: Artemis' home, the archive cache, the service user and /etc/enmasse-messaging,
    unless run with -- -e broker_uninstall_remove_home=true (a removed container takes them along)
EOF
}

# a check run (--check / -C after --) changes nothing and must not say "deployed"
check_run=0
for a in "${extra[@]}"; do
  case "$a" in --check|-C) check_run=1 ;; esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
need_sudo() { [ -z "$SUDO" ] || command -v sudo >/dev/null || die "run as root or install sudo"; }

apt_install() {
  local need=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
  [ ${#need[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${need[*]} and no apt-get: install them first"
  need_sudo
  log "apt: installing ${need[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# --- 1. ansible ------------------------------------------------------------------
# only into the project's virtual environment: a Debian python3 refuses
# global installs (externally-managed-environment), and they are not ours to make
if ! command -v ansible-playbook >/dev/null; then
  if [ ! -x "$VENV/bin/ansible-playbook" ]; then
    log "pip: installing ansible into $VENV/"
    python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$VENV"; }
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q ansible
  fi
  export PATH="$VENV/bin:$PATH"
fi
# the checkout as ansible_collections/enmasse/messaging
source scripts/collection-path.sh
for c in community.docker community.general ansible.posix; do
  ansible-galaxy collection list "$c" >/dev/null 2>&1 || die "collection $c not found (pip install ansible provides it)"
done

# --- 2. Artemis into the local Maven cache ------------------------------------
ARCHIVE="$HOME/.m2/repository/org/apache/activemq/apache-artemis/$ARTEMIS_VERSION/apache-artemis-$ARTEMIS_VERSION-bin.tar.gz"
if [ ! -f "$ARCHIVE" ] && [ "$uninstall" -eq 0 ] && [ "$print_ports" -eq 0 ]; then
  command -v mvn >/dev/null || ( apt_install maven default-jre-headless ) || true
  if command -v mvn >/dev/null; then
    log "maven: fetching org.apache.activemq:apache-artemis:$ARTEMIS_VERSION:tar.gz:bin"
    mvn -q dependency:get -Dartifact="org.apache.activemq:apache-artemis:$ARTEMIS_VERSION:tar.gz:bin" -Dtransitive=false \
      || echo "aio: maven could not fetch Artemis; the broker host will download it" >&2
  fi
fi
# Keycloak the same way (the keycloak role's offline path; without Maven the
# Keycloak host downloads the release with its checksum instead)
KEYCLOAK_ARCHIVE="$HOME/.m2/repository/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/keycloak-quarkus-dist-$KEYCLOAK_VERSION.tar.gz"
if [ ! -f "$KEYCLOAK_ARCHIVE" ] && [ "$uninstall" -eq 0 ] && [ "$print_ports" -eq 0 ] && command -v mvn >/dev/null; then
  log "maven: fetching org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:tar.gz"
  mvn -q dependency:get -Dartifact="org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:tar.gz" -Dtransitive=false \
    || echo "aio: maven could not fetch Keycloak; the Keycloak host will download it" >&2
fi
archive_args=()
[ -f "$ARCHIVE" ] && archive_args=(-e "broker_archive_src=$ARCHIVE")
[ -f "$KEYCLOAK_ARCHIVE" ] && archive_args+=(-e "keycloak_archive=$KEYCLOAK_ARCHIVE")
# the router's source (no package registry serves it): the vendor copy beside the repository
ROUTER_ARCHIVE="$(bash scripts/router-archive.sh 2>/dev/null || true)"
if [ -n "$ROUTER_ARCHIVE" ]; then
  archive_args+=(-e "router_archive_src=$ROUTER_ARCHIVE" -e "router_archive_checksum=sha512:$(sha512sum "$ROUTER_ARCHIVE" | cut -c1-128)")
fi

# the MQTT gateway (no package registry serves it): built from gateway/mqtt
# once into the cache, with a Go >= its go.mod's (scripts/go-toolchain.sh
# fetches the toolchain as a Go module when the machine has none), passed as
# the mqtt_gateway role's offline path
if [ "$uninstall" -eq 0 ] && [ "$print_ports" -eq 0 ]; then
  GATEWAY_BIN="${ENMASSE_MQTT_GATEWAY:-}"
  if [ -z "$GATEWAY_BIN" ]; then
    log "MQTT gateway: scripts/build-mqtt-gateway.sh (cached by the sources' hash)"
    GATEWAY_BIN="$(bash scripts/build-mqtt-gateway.sh)" || die "the MQTT gateway did not build (see above)"
  fi
  [ -f "$GATEWAY_BIN" ] || die "ENMASSE_MQTT_GATEWAY=$GATEWAY_BIN: no such file (a built gateway, or unset to build it)"
  archive_args+=(-e "mqtt_gateway_binary=$GATEWAY_BIN")
fi

# --- 3. the variables, and the ports they give every instance --------------------
gen="$(mktemp -d /tmp/enmasse-aio.XXXXXX)"
trap 'rm -rf "$gen"' EXIT
# ports of the host `aio` ("<host> <port>" lines, see playbooks/inputs.yml)
aio_ports() {
  [ "$uninstall" -eq 1 ] && return 0
  log "ansible-playbook playbooks/inputs.yml (check the variables, compute the ports)"
  ansible-playbook -i inventories/aio playbooks/inputs.yml "${archive_args[@]}" "${extra[@]}" \
    -e "enmasse_ports_file=$gen/ports" >"$gen/inputs.log" 2>&1 || { cat "$gen/inputs.log" >&2; die "the variables are refused (see above)"; }
  [ -f "$gen/ports" ] || die "playbooks/inputs.yml wrote no ports (are tags or --limit among the extra arguments?)"
  AIO_PORTS="$(awk '$1 == "aio" {print $2}' "$gen/ports" | sort -n | uniq | tr '\n' ' ')"
}
AIO_PORTS=""
aio_ports
if [ "$print_ports" -eq 1 ]; then
  echo "$AIO_PORTS"
  exit 0
fi

# --- 4. target: this host or a systemd container -----------------------------------
if [ "$TARGET" = auto ]; then
  if [ -d /run/systemd/system ]; then TARGET=host; else TARGET=container; fi
fi
inventory=(-i inventories/aio)
become_args=()
case "$TARGET" in
  host)
    log "target: this host (systemd is PID 1)"
    if [ -n "$SUDO" ] && ! { need_sudo; sudo -n true 2>/dev/null; }; then become_args=(--ask-become-pass); fi
    ;;
  container)
    log "target: systemd container $CONTAINER (this host does not run systemd as PID 1)"
    [ "$(id -u)" -eq 0 ] || die "the container target needs root (rootful podman); run with sudo"
    export CONTAINERS_CONF="${CONTAINERS_CONF:-$REPO/scripts/containers.conf}"
    command -v podman >/dev/null || [ "$uninstall" -eq 0 ] || { echo "aio: podman is not installed, nothing to uninstall"; left_behind; exit 0; }
    state="$(podman container inspect -f '{{.State.Status}}' "$CONTAINER" 2>/dev/null || echo missing)"
    if [ "$uninstall" -eq 1 ]; then
      # removing a container needs no image: never build one here
      if [ "$state" = missing ]; then
        echo "aio: no container $CONTAINER, nothing to uninstall"
        left_behind
        exit 0
      fi
      [ "$state" = running ] || podman start "$CONTAINER" >/dev/null
    else
      apt_install podman runc debootstrap
      t0=$(date +%s)
      image="$("${ENMASSE_AIO_IMAGE_BUILDER:-scripts/build-test-image.sh}")"
      log "image $image ready in $(( $(date +%s) - t0 ))s"
      case "$state" in
        missing)
          publish=()
          for p in $AIO_PORTS; do publish+=(-p "127.0.0.1:$p:$p"); done
          log "container $CONTAINER: publishing ${AIO_PORTS}on 127.0.0.1"
          # CAP_SYS_ADMIN lets systemd apply the unit's sandbox (ProtectSystem=strict, ...)
          podman run -d --name "$CONTAINER" --hostname "$CONTAINER" --systemd=always \
            --cap-add SYS_ADMIN "${publish[@]}" "$image" >/dev/null ;;
        *)
          # ports cannot be added to an existing container: say so instead of
          # deploying an instance nobody can reach
          have="$(podman container inspect -f '{{range $p, $b := .HostConfig.PortBindings}}{{$p}} {{end}}' "$CONTAINER" \
                  | tr ' ' '\n' | sed -n 's|/tcp$||p' | sort -n | uniq | tr '\n' ' ')"
          missing_ports=""
          for p in $AIO_PORTS; do
            case " $have " in *" $p "*) ;; *) missing_ports="$missing_ports $p" ;; esac
          done
          [ -z "$missing_ports" ] || die "container $CONTAINER does not publish the ports${missing_ports} that the address spaces of the inventory need (it publishes: ${have:-none}). Run 'bash scripts/aio.sh --uninstall' then 'bash scripts/aio.sh': the brokers are deployed again with every port published; credentials/ keeps the passwords, the messages stored in the container are lost."
          [ "$state" = running ] || podman start "$CONTAINER" >/dev/null ;;
      esac
    fi
    for _ in $(seq 60); do
      s="$(podman exec "$CONTAINER" systemctl is-system-running 2>/dev/null || true)"
      case "$s" in running|degraded) break ;; esac
      sleep 1
    done
    # the container's init as this machine sees it: nsenter enters its mount,
    # network, PID, IPC and UTS namespaces (what podman exec does, without
    # podman's own start-up on every command)
    pid="$(podman container inspect -f '{{.State.Pid}}' "$CONTAINER" 2>/dev/null || true)"
    case "$pid" in ''|0|*[!0-9]*) die "container $CONTAINER is not running (PID '$pid')" ;; esac
    cat >"$gen/container.yml" <<EOF
# generated by scripts/aio.sh: the host aio is the systemd container $CONTAINER
all:
  children:
    brokers:
      hosts:
        aio:
          ansible_connection: community.docker.nsenter
          ansible_nsenter_pid: $pid
          # not used by the connection; the router's name in its certificate
          ansible_host: $CONTAINER
          ansible_python_interpreter: /usr/bin/python3
          # the container has its own network namespace, reached only through
          # the ports published on this machine's 127.0.0.1, which podman
          # forwards to the container's interface (not its loopback)
          broker_bind_address: 0.0.0.0
    routers:
      hosts:
        aio: {}
EOF
    inventory+=(-i "$gen/container.yml")
    ;;
  *) die "ENMASSE_AIO_TARGET must be auto, host or container" ;;
esac

# --- 5. the playbook ------------------------------------------------------------------
if [ "$uninstall" -eq 1 ]; then
  log "ansible-playbook playbooks/uninstall.yml"
  ansible-playbook "${inventory[@]}" "${become_args[@]}" playbooks/uninstall.yml "${extra[@]}"
  if [ "$TARGET" = container ]; then podman rm -f "$CONTAINER" >/dev/null; echo "aio: container $CONTAINER removed"; fi
  left_behind
  exit 0
fi

run_site() {
  ansible-playbook "${inventory[@]}" "${become_args[@]}" playbooks/site.yml "${archive_args[@]}" "${extra[@]}"
}
log "ansible-playbook playbooks/site.yml"
t0=$(date +%s)
run_site
if [ "$check_run" -eq 1 ]; then
  log "check run done in $(( $(date +%s) - t0 ))s: nothing was changed, the output shows what a run would change"
else
  log "deployed in $(( $(date +%s) - t0 ))s; passwords are in $REPO/credentials/ (never printed)"
fi

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
