"""bench/converge/run.py says what it needs before it starts a broker."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_run_without_xmllint_says_so_before_starting_a_broker(tmp_path):
    """A PATH with python3, java and ansible-playbook but no xmllint: the run
    stops at once naming xmllint, what it is for and its package."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    (bin_dir / "python3").chmod(0o755)
    for tool in ("java", "ansible-playbook"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    env = dict(os.environ, PATH=str(bin_dir), ENMASSE_ARTEMIS_ARCHIVE=os.environ.get("ENMASSE_ARTEMIS_ARCHIVE", ""))
    proc = subprocess.run([str(bin_dir / "python3"), os.path.join(REPO, "bench", "converge", "run.py"),
                           "--sizes", "10", "--no-write"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode != 0
    assert "cannot benchmark, missing:" in proc.stderr and "xmllint" in proc.stderr, proc.stderr
    assert "libxml2-utils" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
