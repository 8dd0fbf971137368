#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian/Ubuntu machine and runs
# the whole suite: static checks (ansible-test sanity, ansible-lint with the
# production profile, changelog lint, the execution environment's build
# context), then pytest: unit, integration (real Artemis, real AMQP clients,
# ansible-runner), the kubernetes backend (a real kube-apiserver, built once and
# cached by scripts/build-kubernetes.sh), Spark (real local[2] jobs) and the Molecule scenario
# (systemd container, podman).
#
#   bash scripts/test.sh              # everything (lint, sanity and tests/unit beside the rest)
#   ENMASSE_SERIAL_TESTS=1 bash scripts/test.sh   # static checks first, then one pytest run
#   bash scripts/test.sh -m unit      # extra arguments go to pytest (static checks still run)
#   ENMASSE_SKIP_STATIC=1 bash scripts/test.sh -m unit   # pytest only
#
# Python packages go into the project's virtual environment .venv/ (created
# with python3 -m venv, python3-venv from apt if needed), never into the
# system interpreter (a Debian python3 refuses that: externally-managed-environment).
set -euo pipefail
cd "$(dirname "$0")/.."
ARTEMIS_VERSION=${ARTEMIS_VERSION:-2.40.0}

log() { printf '\n=== %s %s\n' "$(date -u +%H:%M:%S)" "$*"; }
# the whole suite (no pytest arguments): the static checks and tests/unit run
# at a lower priority beside the other tiers (see the end)
whole=0
if [ "$#" -eq 0 ] && [ -z "${ENMASSE_SERIAL_TESTS:-}" ]; then whole=1; fi
static_pid=""

# CPU per tier, printed at the end of the whole suite (the machine is
# saturated for most of the run, so its length is about its CPU / cores):
# tests/unit, the static checks, tests/molecule and the background builds
# each run in a cgroup of their own in the cgroup v1 cpuacct hierarchy (root
# only; the containers are podman's, under libpod_parent); the rest of the
# machine's CPU (/proc/stat) is the other tests'. None of the JVMs the
# integration tests start on this machine is moved: they stay where they were.
cpu_root=""
if [ "$whole" = 1 ] && [ -w /sys/fs/cgroup/cpuacct ] && [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
  cpu_root=/sys/fs/cgroup/cpuacct/enmasse-tests-$$
  mkdir -p "$cpu_root" 2>/dev/null || cpu_root=""
fi
machine_cpu() { awk '/^cpu /{printf "%d\n", ($2+$3+$4+$7+$8) * 10}' /proc/stat; }   # ms (USER_HZ 100)
group_cpu() { local u; u=$(cat "$1/cpuacct.usage" 2>/dev/null || echo 0); echo $((u / 1000000)); }   # ms
containers_cpu() { group_cpu /sys/fs/cgroup/cpuacct/libpod_parent; }
# in_tier NAME COMMAND...: COMMAND in the tier's group (in a subshell: `( in_tier ... ) &`)
in_tier() {
  local tier=$1
  shift
  if [ -n "$cpu_root" ] && mkdir -p "$cpu_root/$tier" 2>/dev/null; then
    echo "$BASHPID" > "$cpu_root/$tier/cgroup.procs" 2>/dev/null || true
  fi
  exec "$@"
}
cpu_start=$(machine_cpu)
containers_start=$(containers_cpu)
cpu_report() {
  [ -n "$cpu_root" ] || return 0
  local total containers unit static molecule builds rest
  total=$(( $(machine_cpu) - cpu_start ))
  containers=$(( $(containers_cpu) - containers_start ))
  unit=$(group_cpu "$cpu_root/unit"); static=$(group_cpu "$cpu_root/static")
  molecule=$(group_cpu "$cpu_root/molecule"); builds=$(group_cpu "$cpu_root/builds")
  rest=$(( total - unit - static - molecule - builds - containers ))
  log "CPU by tier (s): machine $((total / 1000)); tests/unit $((unit / 1000)); static checks $((static / 1000));" \
    "tests/molecule $((molecule / 1000)) + its containers $((containers / 1000)); background builds $((builds / 1000));" \
    "the rest (tests/integration, the other tests and the set-up) $((rest / 1000))"
  rmdir "$cpu_root"/* "$cpu_root" 2>/dev/null || true
}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  # python3-dev and gcc: python-qpid-proton is built from its source
  # distribution (no binary wheel for Linux) against the environment's python
  for pkg in podman runc debootstrap libxml2-utils maven default-jre-headless python3-venv python3-dev gcc rsync shellcheck etcd-server openssl prometheus prometheus-alertmanager prometheus-node-exporter mosquitto-clients; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "apt: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

# The environment's interpreter: the distribution's python3 when it is 3.11 or
# later (Debian builds it with profile-guided and link-time optimisation and
# links libpython statically), else the first python3 on PATH; ENMASSE_PYTHON
# names another. The suite is mostly Python (pytest, ansible-playbook, the
# modules it runs on this machine, Molecule, the linters): on this project's
# 2-core machine an ansible-playbook run of 40 tasks took 18.2-24.0 s of CPU on
# Debian's 3.11.2 against 22.9-26.0 s on a pyenv 3.11.7 built without
# --enable-optimizations (docs/benchmarks.md, "The test suite's CPU").
py="${ENMASSE_PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    py=/usr/bin/python3
  else
    py="$(command -v python3)"
  fi
fi
log "venv: .venv with requirements-test.txt ($py, $("$py" -c 'import platform; print(platform.python_version())'))"
# the requirements and the interpreter: another of either is another environment
want="$( (cat requirements-test.txt requirements-spark.txt; readlink -f "$py"; "$py" -c 'import sys; print(sys.version)') \
  | sha256sum | cut -c1-64)"
if [ ! -e .venv ] && [ -z "${ENMASSE_NO_VENV_CACHE:-}" ]; then
  # a fresh checkout shares one environment per requirements hash with the
  # earlier runs on this machine (like the router and kube-apiserver builds);
  # the first run builds it, the stamp is written last
  cached="${XDG_CACHE_HOME:-$HOME/.cache}/enmasse-messaging/venv-${want:0:16}"
  mkdir -p "$(dirname "$cached")"
  exec 8>"$cached.lock"
  flock 8
  if [ "$(cat "$cached/.requirements-test.sha256" 2>/dev/null)" != "$want" ]; then
    rm -rf "$cached"
  fi
  ln -s "$cached" .venv
fi
venv="$(readlink -f .venv 2>/dev/null || echo "$PWD/.venv")"
stamp=.venv/.requirements-test.sha256
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # new, or made from other requirements or another interpreter: made again.
  # Through the real path: pip writes the interpreter it runs as into the
  # scripts' first line, and a shared environment must not name the
  # checkout (its .venv link) that happened to build it
  "$py" -m venv --clear "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r requirements-test.txt
  echo "$want" > "$stamp"
fi
# an environment built before that names another checkout's .venv/bin/python,
# gone with that checkout: point such scripts at the environment itself
for f in "$venv"/bin/*; do
  if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
  first="$(head -n 1 "$f" 2>/dev/null | tr -d '\0')"
  case "$first" in
    "#!$venv/bin/python"*) ;;
    "#!"*/.venv/bin/python*) sed -i "1s|^#!.*/\.venv/bin/python|#!$venv/bin/python|" "$f" ;;
  esac
done
exec 8>&-
PATH="$(pwd)/.venv/bin:$PATH"
export PATH

# maven_artifact <group>:<artifact>:<version>[:<type>[:<classifier>]]: the
# artifact's path in the local Maven cache (the roles' offline path), fetched
# with Maven when it is not there yet
maven_artifact() {
  local g a v t c path
  IFS=: read -r g a v t c <<< "$1"
  path="$HOME/.m2/repository/${g//.//}/$a/$v/$a-$v${c:+-$c}.${t:-jar}"
  [ -f "$path" ] || mvn -q dependency:get -Dartifact="$1" -Dtransitive=false >&2
  [ -f "$path" ] || { echo "test.sh: Maven did not put $1 at $path" >&2; return 1; }
  echo "$path"
}

# the older Artemis of the upgrade pair: molecule/router converges with it and
# upgrades to ARTEMIS_VERSION (playbooks/rolling_upgrade.yml)
ARTEMIS_PREVIOUS_VERSION=${ARTEMIS_PREVIOUS_VERSION:-2.39.0}
log "artemis ${ARTEMIS_VERSION} and ${ARTEMIS_PREVIOUS_VERSION}: local Maven cache (the roles' offline path)"
ENMASSE_ARTEMIS_ARCHIVE=$(maven_artifact "org.apache.activemq:apache-artemis:${ARTEMIS_VERSION}:tar.gz:bin")
ENMASSE_ARTEMIS_PREVIOUS_ARCHIVE=$(maven_artifact "org.apache.activemq:apache-artemis:${ARTEMIS_PREVIOUS_VERSION}:tar.gz:bin")
export ENMASSE_ARTEMIS_ARCHIVE ENMASSE_ARTEMIS_PREVIOUS_ARCHIVE

log "jmx_prometheus_javaagent 1.0.1: local Maven cache (roles/broker's metrics agent, offline path)"
ENMASSE_JMX_EXPORTER_JAR=$(maven_artifact "io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1")
export ENMASSE_JMX_EXPORTER_JAR

# the newer Keycloak of the upgrade pair: molecule/router converges with
# 26.4.7 and upgrades to it (playbooks/rolling_upgrade.yml)
KEYCLOAK_NEXT_VERSION=26.5.6
log "keycloak 26.4.7 and ${KEYCLOAK_NEXT_VERSION}: local Maven cache (tests/integration/keycloak_server.py builds 26.4.7 once into ~/.cache)"
ENMASSE_KEYCLOAK_ARCHIVE=$(maven_artifact "org.keycloak:keycloak-quarkus-dist:26.4.7:tar.gz")
ENMASSE_KEYCLOAK_NEXT_ARCHIVE=$(maven_artifact "org.keycloak:keycloak-quarkus-dist:${KEYCLOAK_NEXT_VERSION}:tar.gz")
export ENMASSE_KEYCLOAK_ARCHIVE ENMASSE_KEYCLOAK_NEXT_ARCHIVE

log "qdrouterd 1.19.0: the source archive (scripts/router-archive.sh) and a cached build (scripts/build-router.sh)"
ENMASSE_ROUTER_ARCHIVE="$(bash scripts/router-archive.sh)"
export ENMASSE_ROUTER_ARCHIVE
bash scripts/build-router.sh "$ENMASSE_ROUTER_ARCHIVE" >/dev/null

log "MQTT gateway: a cached build (scripts/build-mqtt-gateway.sh; Go from scripts/go-toolchain.sh)"
ENMASSE_MQTT_GATEWAY="$(bash scripts/build-mqtt-gateway.sh)"
export ENMASSE_MQTT_GATEWAY

# the checkout as ansible_collections/enmasse/messaging
source scripts/collection-path.sh

if [ -z "${ENMASSE_SKIP_STATIC:-}" ]; then
  log "static checks: ansible-doc, collection build, role argument specs"
  # one ansible-doc per plugin type (one process for all, not one per plugin);
  # a batch only warns about a plugin whose documentation does not load, so
  # every name must come back with its doc
  doc_check() {
    python3 -c '
import json, sys
want, got = sys.argv[1:], json.load(sys.stdin)
bad = [n for n in want if not (got.get(n) or {}).get("doc")]
print("ansible-doc failed for: %s" % " ".join(bad)) if bad else None
sys.exit(1 if bad else 0)' "$@"
  }
  modules=$(for m in plugins/modules/*.py; do printf 'enmasse.messaging.%s ' "$(basename "$m" .py)"; done)
  # shellcheck disable=SC2086
  ansible-doc --json $modules | doc_check $modules
  for kind in filter lookup test; do
    [ -d "plugins/$kind" ] || continue
    names=$(ansible-doc -t "$kind" -l enmasse.messaging --json | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)))')
    [ -n "$names" ] || continue
    # shellcheck disable=SC2086
    ansible-doc -t "$kind" --json $names | doc_check $names
  done
  build_dir=$(mktemp -d)
  ansible-galaxy collection build --force --output-path "$build_dir" . >/dev/null
  rm -rf "$build_dir"
  python3 scripts/check_argument_specs.py

  if [ -d changelogs ]; then
    log "antsibull-changelog lint"
    antsibull-changelog lint
  fi

  # sanity and ansible-lint side by side (each mostly one process; about
  # 70 s each on a quiet 2-core machine). For the whole suite they run at
  # nice 10 beside pytest (below) and their output follows the tests'; with
  # pytest arguments (or ENMASSE_SERIAL_TESTS) they run first and stop the run.
  static_checks() {
    local sanity_log sanity_pid lint_rc=0 sanity_rc=0
    sanity_log=$(mktemp)
    bash scripts/sanity.sh >"$sanity_log" 2>&1 &
    sanity_pid=$!
    ansible-lint --profile production || lint_rc=$?
    wait "$sanity_pid" || sanity_rc=$?
    log "ansible-test sanity (rc=$sanity_rc)"
    cat "$sanity_log"
    rm -f "$sanity_log"
    if [ "$lint_rc" != 0 ] || [ "$sanity_rc" != 0 ]; then
      echo "static checks failed: ansible-lint rc=$lint_rc, ansible-test sanity rc=$sanity_rc"
      return 1
    fi
  }
  if [ "$whole" = 1 ]; then
    log "ansible-test sanity and ansible-lint (production profile): in the background at nice 10, output at the end"
    static_log=$(mktemp)
    ( in_tier static nice -n 10 bash -c "$(declare -f log static_checks); static_checks" ) >"$static_log" 2>&1 &
    static_pid=$!
  else
    log "ansible-test sanity (in the background) and ansible-lint (production profile)"
    static_checks || exit 1
  fi
fi

if [ "$whole" = 0 ]; then
  log "kubernetes: etcd, kube-apiserver and kube-controller-manager v1.33.13 (scripts/build-kubernetes.sh; cached)"
  bash scripts/build-kubernetes.sh >/dev/null
  log "pytest"
  exec python3 -m pytest "$@"
fi

# The whole suite: what only the later tiers need is built in the background
# at nice 15 (cold: the kube-apiserver build takes 5-10 minutes, the images
# a few): the Molecule images (tests/molecule, near the end) and the
# kubernetes binaries (tests/integration/kubernetes, which tests/conftest.py
# runs after the rest of tests/integration). Each script holds a lock while it builds; a test that needs the
# result runs the same script and waits for it. Cached, each returns at once.
log "in the background (nice 15): the Molecule images, kube-apiserver v1.33.13 (cached after the first run)"
prebuild_log=$(mktemp)
( in_tier builds nice -n 15 bash -c 'bash scripts/build-test-image.sh && bash scripts/build-spark-image.sh \
  && bash scripts/build-kubernetes.sh' ) >"$prebuild_log" 2>&1 &
prebuild_pid=$!

# The whole suite (no arguments): tests/unit (CPU only, no component) runs at
# a lower priority beside the rest, which mostly waits on brokers, routers,
# Keycloak and containers; the unit tier takes the cycles they leave and the
# timed parts of the other tiers keep their priority. Its output follows.
log "pytest tests/unit (in the background, nice 10)"
unit_log=$(mktemp)
( in_tier unit nice -n 10 python3 -m pytest tests/unit -p no:cacheprovider --junitxml=tests/output/junit-unit.xml ) >"$unit_log" 2>&1 &
unit_pid=$!
# tests/molecule (the scenarios' containers: mostly waiting on systemd, JVMs
# and Ansible's round trips) runs beside tests/integration, a third pytest at
# the normal priority: each of the two tiers takes about 25 minutes alone on
# 2 cores, in sequence they made the run longer than the hour it must stay
# under. They share nothing: no integration test uses podman, the scenarios'
# containers publish no port, and the images they need come from the locked
# build scripts (the background build above, or the scenario's own call).
log "pytest tests/molecule (in the background, beside tests/integration)"
molecule_log=$(mktemp)
( in_tier molecule python3 -m pytest tests/molecule -p no:cacheprovider --junitxml=tests/output/junit-molecule.xml ) >"$molecule_log" 2>&1 &
molecule_pid=$!
trap 'kill "$unit_pid" "$molecule_pid" $static_pid "$prebuild_pid" 2>/dev/null || true' EXIT
log "pytest: everything but tests/unit and tests/molecule"
rest_rc=0
python3 -m pytest --ignore=tests/unit --ignore=tests/molecule || rest_rc=$?
molecule_rc=0
wait "$molecule_pid" || molecule_rc=$?
unit_rc=0
wait "$unit_pid" || unit_rc=$?
static_rc=0
if [ -n "$static_pid" ]; then
  wait "$static_pid" || static_rc=$?
fi
prebuild_rc=0
wait "$prebuild_pid" || prebuild_rc=$?
trap - EXIT
if [ "$prebuild_rc" != 0 ]; then  # the tests that needed a result ran the script again and failed with it
  log "background builds (rc=$prebuild_rc)"
  tail -n 40 "$prebuild_log"
fi
rm -f "$prebuild_log"
log "pytest tests/molecule (rc=$molecule_rc)"
cat "$molecule_log"
rm -f "$molecule_log"
log "pytest tests/unit (rc=$unit_rc)"
cat "$unit_log"
rm -f "$unit_log"
if [ -n "$static_pid" ]; then
  log "static checks: ansible-lint and ansible-test sanity (rc=$static_rc)"
  cat "$static_log"
  rm -f "$static_log"
fi
cpu_report
if [ "$rest_rc" != 0 ] || [ "$molecule_rc" != 0 ] || [ "$unit_rc" != 0 ] || [ "$static_rc" != 0 ]; then
  echo "failed: static checks rc=$static_rc, tests/unit rc=$unit_rc, tests/molecule rc=$molecule_rc, the other tests rc=$rest_rc"
  exit 1
fi
