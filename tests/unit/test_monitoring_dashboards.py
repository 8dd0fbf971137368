"""Grafana dashboards shipped as files (roles/monitoring/files/dashboards):
the rules of grafana/dashboard-linter that matter here (templated data
source, every panel titled and described, PromQL that parses), and the
linter itself when scripts/build-dashboard-linter.sh can install it."""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARDS = sorted(glob.glob(os.path.join(REPO, "roles", "monitoring", "files", "dashboards", "*.json")))
DS = {"type": "prometheus", "uid": "${datasource}"}


def _targets(dash):
    for p in dash["panels"]:
        for t in p.get("targets", []):
            yield p, t


def test_there_are_dashboards():
    assert DASHBOARDS


@pytest.mark.parametrize("path", DASHBOARDS, ids=os.path.basename)
def test_dashboard_uses_a_templated_datasource_and_describes_every_panel(path):
    dash = json.load(open(path))
    assert dash["uid"] and dash["title"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["job"]["datasource"] == DS
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        assert p["title"] and p["description"] and p["datasource"] == DS, p["title"]
    for p, t in _targets(dash):
        assert t["datasource"] == DS and 'job=~"$job"' in t["expr"], p["title"]
        assert 'instance=~"$instance"' in t["expr"], p["title"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool missing (Debian package prometheus)")
@pytest.mark.parametrize("path", DASHBOARDS, ids=os.path.basename)
def test_every_panel_query_is_valid_promql(path, tmp_path):
    dash = json.load(open(path))
    rules = [{"record": "dashboard:panel_%d_%s" % (p["id"], t["refId"]),
              "expr": re.sub(r"\$(job|instance|space)\b", ".+", t["expr"].replace("$__rate_interval", "5m"))}
             for p, t in _targets(dash)]
    f = tmp_path / "panels.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    r = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def _linter():
    if shutil.which("go") is None:
        pytest.skip("no 'go' on PATH: grafana/dashboard-linter cannot be installed")
    r = subprocess.run(["bash", os.path.join(REPO, "scripts", "build-dashboard-linter.sh")],
                       capture_output=True, text=True, timeout=600, check=False)
    if r.returncode != 0:
        pytest.skip("grafana/dashboard-linter could not be installed: %s" % r.stderr.strip().splitlines()[-1:])
    return r.stdout.strip()


@pytest.mark.parametrize("path", DASHBOARDS, ids=os.path.basename)
def test_dashboard_linter_passes(path):
    r = subprocess.run([_linter(), "lint", "--strict", path], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
