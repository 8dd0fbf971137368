"""The bundle_changes filter: which files of a bundle the roles (capacity
planner, auth service) copy - only those missing or different on the host."""
import hashlib

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter.bundle import FilterModule, bundle_changes

BUNDLE = [{"path": "pkg/a.py", "content": "A = 1\n"}, {"path": "pkg/sub/b.py", "content": "B = 'é'\n"}]


def found(path, content, mode="0644", uid=0, gid=0):
    return {"path": path, "checksum": hashlib.sha1(content.encode("utf-8")).hexdigest(), "mode": mode,
            "uid": uid, "gid": gid}


def test_nothing_to_copy_when_every_file_is_there_as_wanted():
    files = [found("/opt/lib/pkg/a.py", "A = 1\n"), found("/opt/lib/pkg/sub/b.py", "B = 'é'\n")]
    assert bundle_changes(BUNDLE, files, "/opt/lib") == []


def test_a_missing_or_different_file_is_copied_again():
    assert bundle_changes(BUNDLE, [found("/opt/lib/pkg/a.py", "A = 1\n")], "/opt/lib") == [BUNDLE[1]]
    files = [found("/opt/lib/pkg/a.py", "A = 2\n"), found("/opt/lib/pkg/sub/b.py", "B = 'é'\n")]
    assert bundle_changes(BUNDLE, files, "/opt/lib") == [BUNDLE[0]]
    assert bundle_changes(BUNDLE, [], "/opt/lib") == BUNDLE


def test_a_changed_mode_owner_or_group_is_copied_again():
    ok = found("/opt/lib/pkg/sub/b.py", "B = 'é'\n")
    for bad in (dict(mode="0666"), dict(uid=1000), dict(gid=1000)):
        files = [found("/opt/lib/pkg/a.py", "A = 1\n", **bad), ok]
        assert bundle_changes(BUNDLE, files, "/opt/lib") == [BUNDLE[0]], bad


def test_flat_installs_each_file_by_its_basename():
    files = [found("/opt/auth/a.py", "A = 1\n"), found("/opt/auth/b.py", "B = 'é'\n")]
    assert bundle_changes(BUNDLE, files, "/opt/auth", flat=True) == []
    assert bundle_changes(BUNDLE, files, "/opt/auth") == BUNDLE


def test_flat_files_of_one_basename_are_one_file_or_refused():
    inits = [{"path": "auth/__init__.py", "content": ""}, {"path": "standard/__init__.py", "content": ""}]
    assert bundle_changes(inits + BUNDLE, [], "/opt/auth", flat=True) == inits[:1] + BUNDLE
    assert bundle_changes(inits, [found("/opt/auth/__init__.py", "")], "/opt/auth", flat=True) == []
    assert bundle_changes(inits, [], "/opt/lib") == inits
    with pytest.raises(AnsibleFilterError, match="auth/__init__.py and standard/__init__.py are both"):
        bundle_changes([inits[0], dict(inits[1], content="X = 1\n")], [], "/opt/auth", flat=True)


@pytest.mark.parametrize("args, words", [
    (("nope", [], "/opt"), "the bundle: 'nope' must be a list of {path, content}"),
    (([{"path": "a"}], [], "/opt"), "the bundle: .* must be a list of {path, content}"),
    ((BUNDLE, None, "/opt"), "found: None must be the files of ansible.builtin.find"),
    ((BUNDLE, [], "opt"), "directory: 'opt' must be an absolute path"),
])
def test_bad_arguments_are_refused_naming_them(args, words):
    with pytest.raises(AnsibleFilterError, match=words):
        bundle_changes(*args)


def test_the_filter_is_exported():
    assert set(FilterModule().filters()) == {"bundle_changes"}
