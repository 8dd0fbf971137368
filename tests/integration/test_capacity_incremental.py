"""Incremental capacity planning (``--incremental``), for real, on a
generated 3-day store, in one local[2] SparkSession (``cli.main`` in this
process).

The incremental store is built up the way a scheduled run sees it: days 1
and 2 without one file of day 1 (first run: no state), then that file
arrives late, then day 3; after each, what was aggregated is checked, and
the last plan against a non-incremental run over the whole store. Then a
changed window, and a corrupt state file.
"""
import json
import os
import shutil
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "spark_jobs"))

pytestmark = pytest.mark.spark

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from enmasse_capacity import cli  # noqa: E402
from helpers import spark_test_conf  # noqa: E402
import generate_metrics as gm  # noqa: E402

DAYS = ("2024-03-04", "2024-03-05", "2024-03-06")
LATE_SPACE = "tenant-a"


@pytest.fixture(scope="module")
def spark_session():
    spark, owned = cli._spark_session(cli.parse_args(["--metrics", "x", "--model", "y", "--master", "local[2]",
                                                      "--conf", "spark.ui.enabled=false",
                                                      "--shuffle-partitions", "2"] + spark_test_conf(cli)))
    yield spark
    if owned:
        spark.stop()


@pytest.fixture(scope="module")
def full(tmp_path_factory, spark_session):
    """The whole store and the plan of a non-incremental histogram run over it."""
    d = str(tmp_path_factory.mktemp("full"))
    gm.generate(d, seed=11, n_addresses=12, n_spaces=3, days=3, interval=60, quiet=True)
    plan, rc, err = _run(d, str(tmp_path_factory.mktemp("full-out")), "--percentile-method", "histogram")
    assert rc == 0, err
    return d, plan


def _run(store, out, *more, capsys=None):
    path = os.path.join(out, "plan.json")
    if os.path.exists(path):
        os.unlink(path)
    rc = cli.main(["--metrics", store, "--model", os.path.join(store, "model.json"), "--out-plan", path,
                   "--no-report"] + list(more))
    err = capsys.readouterr().err if capsys else ""
    if rc != 0:
        return None, rc, err
    with open(path) as f:
        return json.load(f), rc, err


def _copy_day(src, dst, day, skip_space=None):
    for kind in ("addresses", "nodes"):
        s = os.path.join(src, kind, "date=" + day)
        for sub in sorted(os.listdir(s)):
            if kind == "addresses" and sub == "address_space=%s" % skip_space:
                continue
            shutil.copytree(os.path.join(s, sub), os.path.join(dst, kind, "date=" + day, sub))


def _comparable(plan):
    plan = json.loads(json.dumps(plan))
    for k in ("generated_at", "job", "warnings"):
        plan.pop(k, None)
    plan["data_quality"].pop("timings_seconds", None)
    return plan


def _assert_same(got, want, where="plan"):
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, sorted(got), sorted(want))
        for k in want:
            _assert_same(got[k], want[k], "%s.%s" % (where, k))
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, "%s[%d]" % (where, i))
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    else:
        assert got == want, where


@pytest.fixture(scope="module")
def built(full, tmp_path_factory):
    """The incremental store, run after each arrival: {step: (plan, stderr)}."""
    src, _plan = full
    d = str(tmp_path_factory.mktemp("inc"))
    out = str(tmp_path_factory.mktemp("inc-out"))
    shutil.copy(os.path.join(src, "model.json"), d)
    steps = {}
    cap = _Capture()
    _copy_day(src, d, DAYS[0], skip_space=LATE_SPACE)
    _copy_day(src, d, DAYS[1])
    steps["first"] = cap.run(d, out, "--incremental")
    # the held-back file of day 1 arrives late
    _copy_day_space(src, d, DAYS[0], LATE_SPACE)
    steps["late"] = cap.run(d, out, "--incremental")
    _copy_day(src, d, DAYS[2])
    steps["new_day"] = cap.run(d, out, "--incremental")
    return d, out, steps


def _copy_day_space(src, dst, day, space):
    sub = os.path.join("addresses", "date=" + day, "address_space=" + space)
    shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub))


class _Capture:
    """Runs ``cli.main`` and captures what it writes to stderr."""

    def run(self, store, out, *more):
        import io
        old = sys.stderr
        sys.stderr = buf = io.StringIO()
        try:
            plan, rc, _unused = _run(store, out, *more)
        finally:
            sys.stderr = old
        assert rc == 0, buf.getvalue()
        return plan, buf.getvalue()


def test_first_run_without_state_aggregates_every_day(built):
    _d, _o, steps = built
    plan, err = steps["first"]
    assert "no state file" in err and "first incremental run" in err
    assert plan["job"]["incremental"] == {"aggregated_days": list(DAYS[:2]), "stored_days": [], "full": True}
    assert plan["data_quality"]["percentile_method"] == "histogram"


def test_late_samples_recompute_their_day(built):
    _d, _o, steps = built
    plan, err = steps["late"]
    assert "aggregating every day" not in err
    # day 1 changed; day 2's first counter delta spans midnight: both again
    assert plan["job"]["incremental"] == {"aggregated_days": list(DAYS[:2]), "stored_days": [], "full": False}


def test_new_day_alone_gives_the_full_plan(built, full):
    d, _o, steps = built
    plan, err = steps["new_day"]
    assert "aggregating every day" not in err
    assert plan["job"]["incremental"] == {"aggregated_days": [DAYS[2]], "stored_days": list(DAYS[:2]),
                                          "full": False}
    _assert_same(_comparable(plan), _comparable(full[1]))
    st = json.load(open(os.path.join(d, "_aggregates", "v1", "state.json")))
    assert sorted(st["days"]) == list(DAYS) and st["watermark"].startswith(DAYS[2])
    # the node restart of day 2 is in the plan and in the state
    assert plan["data_quality"]["node_restarts"] and len(st["restarts"]) == len(plan["data_quality"]["node_restarts"])


def test_nothing_new_aggregates_nothing_and_a_changed_window_everything(built, full):
    d, out, _steps = built
    cap = _Capture()
    plan, err = cap.run(d, out, "--incremental")
    assert plan["job"]["incremental"]["aggregated_days"] == [] and "aggregating every day" not in err
    _assert_same(_comparable(plan), _comparable(full[1]))
    # the last two days: nothing to aggregate, two days merged
    plan, err = cap.run(d, out, "--incremental", "--days", "2")
    assert plan["job"]["incremental"] == {"aggregated_days": [], "stored_days": list(DAYS[1:]), "full": False}
    assert plan["data_quality"]["samples"]["addresses"] < full[1]["data_quality"]["samples"]["addresses"]
    plan, err = cap.run(d, out, "--incremental", "--window-seconds", "600")
    assert "the aggregation's parameters changed (window_seconds): aggregating every day" in err
    assert plan["job"]["incremental"] == {"aggregated_days": list(DAYS), "stored_days": [], "full": True}
    assert plan["data_quality"]["window_seconds"] == 600


def test_corrupt_state_falls_back_to_every_day(built, full):
    d, out, _steps = built
    path = os.path.join(d, "_aggregates", "v1", "state.json")
    with open(path, "w") as f:
        f.write('{"days": ')
    plan, err = _Capture().run(d, out, "--incremental")
    assert "state file %s is unreadable" % path in err and "aggregating every day" in err
    assert plan["job"]["incremental"]["aggregated_days"] == list(DAYS)
    assert any("state file" in w for w in plan["warnings"])
    _assert_same(_comparable(plan), _comparable(full[1]))


def test_incremental_refuses_what_it_does_not_support(built, capsys):
    d, out, _steps = built
    for more, msg in ((("--start", "2024-03-05"), "--start and --end are not supported"),
                      (("--percentile-method", "exact"), "needs percentile_method: histogram"),
                      (("--window-seconds", "7"), "needs window_seconds dividing a day")):
        _plan, rc, err = _run(d, out, "--incremental", *more, capsys=capsys)
        assert rc == 2 and msg in err, (more, err)
