#!/usr/bin/env bash
# Make this checkout importable as the collection enmasse.messaging.
#
#   source scripts/collection-path.sh      # exports ANSIBLE_COLLECTIONS_PATH and PYTHONPATH
#   eval "$(scripts/collection-path.sh)"   # same, from any shell
#
# Creates <dir>/ansible_collections/enmasse/messaging -> <repo> (a symlink, so
# edits are live) and puts <dir> first in ANSIBLE_COLLECTIONS_PATH, keeping
# the existing paths (containers.podman, community.general, ... stay found).
# <dir> is ENMASSE_COLLECTIONS_DIR, default /tmp/enmasse-collections-<hash of repo path>.

_enmasse_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_enmasse_dir="${ENMASSE_COLLECTIONS_DIR:-/tmp/enmasse-collections-$(printf '%s' "$_enmasse_repo" | sha256sum | cut -c1-12)}"
mkdir -p "$_enmasse_dir/ansible_collections/enmasse"
_enmasse_link="$_enmasse_dir/ansible_collections/enmasse/messaging"
if [ "$(readlink "$_enmasse_link" 2>/dev/null)" != "$_enmasse_repo" ]; then
  rm -rf "$_enmasse_link"
  ln -s "$_enmasse_repo" "$_enmasse_link"
fi
case ":${ANSIBLE_COLLECTIONS_PATH:-}:" in
  *":$_enmasse_dir:"*) ;;
  *) ANSIBLE_COLLECTIONS_PATH="$_enmasse_dir:${ANSIBLE_COLLECTIONS_PATH:-$HOME/.ansible/collections:/usr/share/ansible/collections}" ;;
esac
export ANSIBLE_COLLECTIONS_PATH
# Python code outside Ansible (the Spark job, the metrics generator, the
# collector scripts) imports ansible_collections.enmasse.messaging... too
case ":${PYTHONPATH:-}:" in
  *":$_enmasse_dir:"*) ;;
  *) PYTHONPATH="$_enmasse_dir${PYTHONPATH:+:$PYTHONPATH}" ;;
esac
export PYTHONPATH
export ENMASSE_REPO="$_enmasse_repo"

# executed rather than sourced: print the export for eval
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  printf 'export ANSIBLE_COLLECTIONS_PATH=%q\nexport PYTHONPATH=%q\nexport ENMASSE_REPO=%q\n' "$ANSIBLE_COLLECTIONS_PATH" "$PYTHONPATH" "$ENMASSE_REPO"
fi
unset _enmasse_dir _enmasse_link _enmasse_repo
