#!/usr/bin/env bash
# Build the execution environment's build context (docs/awx.md):
#
#   bash scripts/build-ee-context.sh [CONTEXT_DIR]    # default: build/ee-context
#
# 1. ansible-galaxy collection build: the collection tarball;
# 2. stage execution-environment/ with the tarball as
#    collections/enmasse-messaging.tar.gz, and the requirements.txt and
#    bindep.txt it names, in a temporary directory;
# 3. ansible-builder create: CONTEXT_DIR/Containerfile and CONTEXT_DIR/_build/.
# Nothing is pulled or built: turn the context into an image where a container
# engine and the base image are available:
#   podman build -f CONTEXT_DIR/Containerfile -t enmasse-messaging-ee CONTEXT_DIR
# ansible-galaxy and ansible-builder come from PATH (requirements-test.txt).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
context="${1:-$repo/build/ee-context}"
case "$context" in /*) ;; *) context="$(pwd)/$context" ;; esac

for tool in ansible-galaxy ansible-builder; do
  command -v "$tool" >/dev/null || { echo "build-ee-context: $tool not found on PATH (pip install -r requirements-test.txt)" >&2; exit 1; }
done

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

cp -r "$repo/execution-environment" "$stage/execution-environment"
cp "$repo/requirements.txt" "$repo/bindep.txt" "$stage/"
mkdir -p "$stage/execution-environment/collections" "$stage/tarball"
ansible-galaxy collection build --force --output-path "$stage/tarball" "$repo" >/dev/null
tarballs=("$stage"/tarball/enmasse-messaging-*.tar.gz)
if [ ${#tarballs[@]} -ne 1 ] || [ ! -f "${tarballs[0]}" ]; then
  echo "build-ee-context: no collection tarball was built" >&2
  exit 1
fi
mv "${tarballs[0]}" "$stage/execution-environment/collections/enmasse-messaging.tar.gz"

# replace a previous context, never anything else
if [ -d "$context" ] && [ -n "$(ls -A "$context")" ] && [ ! -f "$context/Containerfile" ]; then
  echo "build-ee-context: $context is not empty and not a build context; not replacing it" >&2
  exit 1
fi
rm -rf "$context"
mkdir -p "$(dirname "$context")"
ansible-builder create \
  --file "$stage/execution-environment/execution-environment.yml" \
  --context "$context" \
  --output-filename Containerfile >/dev/null
echo "$context"
