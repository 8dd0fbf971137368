"""roles/router/files/patches/qdrouterd-1.19.0-discriminator-getrandom.patch,
compiled with the vendored qdrouterd's src/discriminator.c and run without a
router: the names qdrouterd makes up (a router's temporary addresses
``_topo/0/<router>/temp.<discriminator>``, the only protection of a dynamic
receiver's replies, which every space may send to) do not follow random(),
whose seed is the router's start time (dispatch.c): two processes seeded
alike get different names."""
import os
import shutil
import subprocess
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCH = os.path.join(REPO, "roles", "router", "files", "patches", "qdrouterd-1.19.0-discriminator-getrandom.patch")
CC = shutil.which("cc") or shutil.which("gcc")
MEMBERS = ("src/discriminator.c", "include/qpid/dispatch/discriminator.h")

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "qpid/dispatch/discriminator.h"
int main(void) {
    char name[QD_DISCRIMINATOR_SIZE];
    srandom(42);  /* as dispatch.c seeds it: the same seed in both runs */
    qd_generate_discriminator(name);
    printf("%s\n", name);
    return 0;
}
"""


def archive():
    out = subprocess.run(["bash", os.path.join(REPO, "scripts", "router-archive.sh")], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() if out.returncode == 0 else None


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    src = archive()
    if CC is None or shutil.which("patch") is None or not src:
        pytest.skip("needs cc, patch and the qdrouterd 1.19.0 source archive (scripts/router-archive.sh), as the "
                    "router build does")
    out = {}
    for variant in ("upstream", "patched"):
        d = tmp_path_factory.mktemp(variant)
        with tarfile.open(src) as tar:
            for m in tar.getmembers():
                rel = m.name.split("/", 1)[-1]
                if rel in MEMBERS:
                    target = d / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(m).read())
        if variant == "patched":
            subprocess.run(["patch", "-p1", "--batch", "-d", str(d), "-i", PATCH], check=True, capture_output=True)
        (d / "main.c").write_text(HARNESS)
        exe = d / "names"
        subprocess.run([CC, "-std=gnu99", "-Wall", "-Werror", "-I", str(d / "include"), "-o", str(exe),
                        str(d / "main.c"), str(d / "src" / "discriminator.c")], check=True)
        out[variant] = str(exe)
    return out


def names(exe, runs=3):
    return [subprocess.run([exe], check=True, capture_output=True, text=True).stdout.strip() for unused in range(runs)]


def test_the_names_do_not_follow_the_seed(programs):
    upstream = names(programs["upstream"])
    assert len(set(upstream)) == 1, upstream  # the harness shows the problem: a known seed, a known name
    patched = names(programs["patched"])
    assert len(set(patched)) == 3, patched
    assert all(len(n) == 15 and n.replace("+", "").replace("_", "").isalnum() for n in patched), patched
