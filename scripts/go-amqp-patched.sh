#!/usr/bin/env bash
# Writes the go.mod that builds the MQTT gateway with our fix of go-amqp
# (gateway/mqtt/patches/README.md) and prints its path (for `go build -modfile`):
#
#   bash scripts/go-amqp-patched.sh <go binary> <gateway/mqtt> <work dir>
#
# The go-amqp version is go.mod's; its module (downloaded and verified
# against go.sum by `go mod download`) stays untouched in Go's module cache
# (Go refuses an overlay of files there): a copy of it in the work directory
# is patched, and a copy of go.mod (with go.sum beside it) replaces the
# module with that copy. A version without a patch of ours, or a patch that
# does not apply, stops the build with the reason.
set -euo pipefail
go_bin="$1" src="$2" work="$3"
module=github.com/Azure/go-amqp
version="$(sed -n 's|^[[:space:]]*github.com/Azure/go-amqp \(v[^ ]*\)$|\1|p' "$src/go.mod")"
patches=("$src"/patches/go-amqp-"$version"-*.patch)
if [ -z "$version" ] || [ ! -f "${patches[0]}" ]; then
  echo "go-amqp-patched: no patch for go-amqp ${version:-(not in go.mod)} in $src/patches" \
    "(gateway/mqtt/patches/README.md: port the fix to the new version or drop it)" >&2
  exit 1
fi
dir="$(cd "$src" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local "$go_bin" mod download -json "$module@$version" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$dir" ] || { echo "go-amqp-patched: $module@$version not in the module cache" >&2; exit 1; }
copy="$work/go-amqp"
cp -R "$dir" "$copy"
chmod -R u+w "$copy"
for patch in "${patches[@]}"; do
  # git apply outside any repository (a work directory inside one would make
  # the paths the repository's)
  (cd "$copy" && GIT_CEILING_DIRECTORIES="$work" git apply -p1 "$patch") || {
    echo "go-amqp-patched: $patch does not apply to $module@$version" >&2
    exit 1
  }
done
cp "$src/go.mod" "$work/go.mod"
cp "$src/go.sum" "$work/go.sum"
(cd "$src" && GOTOOLCHAIN=local "$go_bin" mod edit -modfile="$work/go.mod" -replace="$module=$copy")
echo "$work/go.mod"
