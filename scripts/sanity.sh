#!/usr/bin/env bash
# ansible-test sanity on this checkout.
#
#   bash scripts/sanity.sh                 # every sanity test that runs without containers
#   bash scripts/sanity.sh --test pep8     # extra arguments go to ansible-test sanity
#
# ansible-test needs the collection at .../ansible_collections/enmasse/messaging
# as a real directory (it resolves symlinks), so the tracked and new,
# not-ignored files of the checkout are copied there first (a fresh copy each
# run: a stale file would be tested too).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"
dest="${ENMASSE_SANITY_DIR:-/tmp/enmasse-sanity-$(printf '%s' "$repo" | sha256sum | cut -c1-12)}"
coll="$dest/ansible_collections/enmasse/messaging"
rm -rf "$coll"
mkdir -p "$coll"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | rsync -a --from0 --files-from=- ./ "$coll/"
# ansible-test bootstraps pip in its virtual environments with a script from
# ansible's CI file server; where that is unreachable, use the stand-in
pip_version="$(python3 - <<'PY' 2>/dev/null || true
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="%d.%d" % __import__("sys").version_info[:2]))["pip"])
PY
)"
if [ -n "$pip_version" ]; then
  cached="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
  if [ ! -f "$cached" ] || grep -q "Stand-in for pip" "$cached"; then
    mkdir -p "$(dirname "$cached")"; cp scripts/get-pip-standin.py "$cached"
  fi
fi
cd "$coll"
exec ansible-test sanity --python "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" "$@"
