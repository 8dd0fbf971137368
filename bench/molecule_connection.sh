#!/usr/bin/env bash
# bench/molecule_connection.sh: the CPU of the whole machine (/proc/stat) and the wall time of one
# playbook (25 tasks, 3 hosts: command, stat, copy; become) on three containers of the test image,
# alternately through podman_pipelined and nsenter_pipelined (molecule/connection_plugins), twice.
# Needs the image (scripts/build-test-image.sh) and the .venv of scripts/test.sh; run as root.
REPO="$(cd "$(dirname "$0")/.." && pwd)"
export PATH=$REPO/.venv/bin:$PATH CONTAINERS_CONF=$REPO/scripts/containers.conf ANSIBLE_CONNECTION_PLUGINS=$REPO/molecule/connection_plugins
set -euo pipefail
cd "$(mktemp -d)" || exit 1
for i in 1 2 3; do podman run -d --name nsb-$i --hostname nsb-$i --cap-add SYS_ADMIN --systemd always localhost/enmasse-messaging-systemd:bookworm /sbin/init >/dev/null; done
sleep 5
cat > inv2.yml <<'E2'
all:
  hosts: {nsb-1: {}, nsb-2: {}, nsb-3: {}}
  vars: {ansible_python_interpreter: /usr/bin/python3}
E2
cat > pb2.yml <<'E2'
- hosts: all
  gather_facts: false
  become: true
  tasks:
    - ansible.builtin.command: "true"
      changed_when: false
      loop: "{{ range(10) | list }}"
    - ansible.builtin.stat: {path: /etc/hostname}
      loop: "{{ range(10) | list }}"
    - ansible.builtin.copy: {content: "x{{ item }}\n", dest: "/tmp/nsb-{{ item }}", mode: "0644"}
      loop: "{{ range(5) | list }}"
E2
busy() { awk 'NR==1{print $2+$3+$4+$7+$8}' /proc/stat; }
for _ in 1 2; do
  for c in podman_pipelined nsenter_pipelined; do
    b=$(busy); s=$(date +%s.%N)
    ansible-playbook -i inv2.yml pb2.yml -e ansible_connection=$c >/dev/null 2>&1 || echo "FAILED $c"
    e=$(date +%s.%N); a=$(busy)
    echo "$c: wall $(echo "$e - $s" | bc) s, machine CPU $(( a - b )) ticks (1/100 s)"
  done
done
podman rm -f nsb-1 nsb-2 nsb-3 >/dev/null
