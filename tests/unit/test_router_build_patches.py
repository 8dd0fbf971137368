"""The router role's build from source (roles/router/tasks/build.yml) takes
the collection's qdrouterd source patches (roles/router/files/patches) to the
build host next to the recipe, removes patches the collection no longer has,
and keys its build stamp on their names and sha256: a stamp with the same
patches skips the build, a stamp written before the patches (or with another
patch) rebuilds. Runs build.yml on localhost with a stand-in archive; the
build itself is not run here (tests/integration builds the real router)."""
import hashlib
import json
import os

import pytest

from role_play import failed, role_play

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCH_DIR = os.path.join(REPO, "roles", "router", "files", "patches")
BASE_CMAKE = ["-DUSE_LIBWEBSOCKETS=OFF", "-DCONSOLE_INSTALL=OFF", "-DBUILD_TESTING=OFF",
              "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="build.yml installs root-owned files")


def patches():
    names = sorted(n for n in os.listdir(PATCH_DIR) if n.endswith(".patch"))
    out = {}
    for n in names:
        with open(os.path.join(PATCH_DIR, n), "rb") as f:
            out[n] = hashlib.sha256(f.read()).hexdigest()
    return out


def setup(tmp_path, stamp):
    archive = tmp_path / "qpid-dispatch-1.19.0.tar.gz"
    archive.write_bytes(b"not a real archive")
    checksum = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
    home = tmp_path / "home"
    prefix = home / "qpid-dispatch-1.19.0"
    prefix.mkdir(parents=True)
    (home / "libexec" / "patches").mkdir(parents=True)
    (home / "libexec" / "patches" / "qdrouterd-1.19.0-old.patch").write_text("stale\n")
    if stamp is not None:
        (prefix / ".enmasse-build.json").write_text(json.dumps(stamp))
    variables = {"__router_method": "build", "router_version": "1.19.0", "router_archive_src": str(archive),
                 "router_archive_checksum": checksum, "__router_source_checksum": checksum,
                 "__router_source_archive": str(tmp_path / "src.tar.gz"), "__router_prefix": str(prefix),
                 "router_home_base": str(home), "router_build_host": "", "router_python": "/usr/bin/python3",
                 "router_cmake_options": []}
    return variables, checksum, home, prefix


def build_result(results):
    return [r for n, r in results if n.endswith("Build and install qdrouterd (only when the stamp differs) 1.19.0")][0]


def wanted(checksum):
    return {"version": "1.19.0", "source_checksum": checksum, "python": "/usr/bin/python3",
            "cmake_options": BASE_CMAKE, "patches": patches()}


def test_the_collection_has_the_ssl_domain_cache_patch():
    assert "qdrouterd-1.19.0-ssl-domain-cache.patch" in patches()


def test_same_patches_skip_the_build_and_the_host_gets_exactly_the_collections_patches(tmp_path):
    variables, checksum, home, prefix = setup(tmp_path, None)
    (prefix / ".enmasse-build.json").write_text(json.dumps(wanted(checksum)))
    results = role_play(tmp_path, "router", "build.yml", variables)[1]
    assert not failed(results), failed(results)
    build = build_result(results)
    assert build.get("skipped"), build
    on_host = sorted(os.listdir(home / "libexec" / "patches"))
    assert on_host == sorted(patches())
    for name, digest in patches().items():
        assert hashlib.sha256((home / "libexec" / "patches" / name).read_bytes()).hexdigest() == digest
    assert json.loads((prefix / ".enmasse-build.json").read_text()) == wanted(checksum)


@pytest.mark.parametrize("change", ["no patches key (before the patch)", "another patch"])
def test_a_stamp_with_other_patches_rebuilds(tmp_path, change):
    variables, checksum, home, prefix = setup(tmp_path, None)
    stamp = wanted(checksum)
    if change.startswith("no"):
        del stamp["patches"]
    else:
        stamp["patches"] = dict(stamp["patches"], **{"qdrouterd-1.19.0-old.patch": "0" * 64})
    (prefix / ".enmasse-build.json").write_text(json.dumps(stamp))
    results = role_play(tmp_path, "router", "build.yml", variables)[1]
    build = build_result(results)
    # it ran (and failed: the stand-in archive is no source tree)
    assert not build.get("skipped") and build.get("failed"), build
    assert "no qpid-dispatch" in build.get("stderr", "") or "tar" in build.get("stderr", ""), build
