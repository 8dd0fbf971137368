"""The capacity-planning Spark job, for real, on generated metrics.

One generated store (3 address spaces over 2 infrastructures, 31 addresses,
2 days at 1-minute samples, ~200k samples) and one run of
``python spark_jobs/capacity_plan.py --master local[2]``; the plan is checked
against the generator's truth.json, the Spark numbers against the pure-Python
reference (enmasse_capacity.rules), the report for its sections and self-containment.
Bad inputs: unknown plan and empty store run the CLI as a process (they fail
before Spark starts); missing columns and negative values go through
``main()`` in this process with one shared SparkSession.
"""
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOBS = os.path.join(REPO, "spark_jobs")
sys.path.insert(0, JOBS)

pytestmark = pytest.mark.spark

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from enmasse_capacity import aggregate, cli, read  # noqa: E402
from enmasse_capacity import rules as lib  # noqa: E402
import generate_metrics as gm  # noqa: E402
from helpers import spark_test_conf  # noqa: E402


def _collections_root():
    """The directory holding ansible_collections/ (tests/conftest.py links the
    checkout there): what the job needs on PYTHONPATH."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import schema
    p = os.path.abspath(schema.__file__)     # <root>/ansible_collections/enmasse/messaging/plugins/module_utils/model/
    for _unused in range(7):
        p = os.path.dirname(p)
    return p


COLLECTIONS = _collections_root()
SECTIONS = ("summary", "data-quality", "capacity-model", "observed-load", "utilisation", "goals", "proposal",
            "forecast")


def _job(args, timeout=900):
    env = dict(os.environ)
    env["PYTHONPATH"] = COLLECTIONS         # the supported way: the dir holding ansible_collections/
    return subprocess.run([sys.executable, os.path.join(JOBS, "capacity_plan.py")] + args,
                          capture_output=True, check=False, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("metrics")
    truth = gm.generate(str(d), seed=7, n_addresses=30, n_spaces=3, days=2, interval=60, quiet=True)
    return str(d), truth


@pytest.fixture(scope="module")
def run(store, tmp_path_factory):
    root, truth = store
    out = tmp_path_factory.mktemp("out")
    plan_path, report_path = str(out / "plan.json"), str(out / "report.html")
    t0 = time.time()
    res = _job(["--metrics", root, "--model", os.path.join(root, "model.json"), "--master", "local[2]",
                "--out-plan", plan_path, "--out-report", report_path, "--conf", "spark.ui.enabled=false"]
               + spark_test_conf(cli))
    assert res.returncode == 0, res.stderr[-4000:]
    with open(plan_path) as f:
        plan = json.load(f)
    return {"plan": plan, "report": report_path, "stdout": res.stdout, "seconds": time.time() - t0,
            "truth": truth}


def _addresses(plan):
    out = {}
    for inf in plan["infrastructures"]:
        for s in inf["address_spaces"]:
            for a in s["addresses"]:
                out["%s/%s" % (s["name"], a["address"])] = a
    return out


def test_cli_prints_the_verdicts(run):
    # prod needs a third broker for msg_rate and, with EnMasse's credits, for
    # credits too: its standard-small-partitioned-queue has 3 partitions (never
    # two on one broker), so the plan's credits alone need 3 brokers
    assert "prod: under-provisioned (brokers +1, routers -1, binding: credits)" in run["stdout"]
    assert "edge: over-provisioned (brokers -2" in run["stdout"]


def _comparable(plan):
    plan = json.loads(json.dumps(plan))
    for k in ("generated_at", "job"):
        plan.pop(k, None)
    plan["data_quality"].pop("timings_seconds", None)
    return plan


def test_job_runs_from_the_role_bundle(store, run, tmp_path):
    """The layout the capacity_planner role installs (the job_bundle lookup
    written under lib/, PYTHONPATH=lib, nothing from the checkout) gives the
    same plan as the checkout."""
    from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle
    root, _truth = store
    lib_dir = tmp_path / "lib"
    for e in job_bundle.bundle(root=REPO):
        dest = lib_dir / e["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(e["content"])
    env = dict(os.environ, PYTHONPATH=str(lib_dir))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    plan_path = str(tmp_path / "plan.json")
    res = subprocess.run([sys.executable, str(lib_dir / "capacity_plan.py"), "--metrics", root,
                          "--model", os.path.join(root, "model.json"), "--master", "local[2]",
                          "--out-plan", plan_path, "--no-report", "--conf", "spark.ui.enabled=false"]
                         + spark_test_conf(cli),
                         capture_output=True, check=False, text=True, timeout=900, env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr[-4000:]
    with open(plan_path) as f:
        assert _comparable(json.load(f)) == _comparable(run["plan"])


def test_rates_match_the_truth(run):
    addrs = _addresses(run["plan"])
    checked = 0
    for key, tr in run["truth"]["addresses"].items():
        a = addrs.get(key)
        if a is None:          # not in the model (tenant-b/legacy)
            continue
        load = a["load"]
        assert load, key
        for side in ("ingress", "egress"):
            want = tr["%s_avg" % side]
            got = load[side]["avg"]
            if want > 0.5:
                assert got == pytest.approx(want, rel=0.02), (key, side)
                checked += 1
            else:
                assert got == pytest.approx(want, abs=0.05), (key, side)
            for st in ("p95", "p99", "max"):
                assert load[side][st] >= 0
        if "depth_latest" in tr:
            assert load["depth_latest"] == tr["depth_latest"], key
            assert load["size_latest"] == tr["size_latest"], key
    assert checked >= 40


def test_restart_gives_no_negative_or_huge_rates(run):
    addrs = _addresses(run["plan"])
    # hot-2 lives on prod-broker-1, which restarted: peak ~ 3000 x 1.3 x 1.1 = 4290 msg/s
    hot2 = addrs["tenant-a/hot-2"]["load"]
    assert hot2["resets"] >= 1
    assert 3000 < hot2["ingress"]["max"] < 5500
    dq = run["plan"]["data_quality"]
    assert [r["node"] for r in dq["node_restarts"]] == ["prod-broker-1"]
    assert dq["node_restarts"][0]["time"].startswith("2024-03-05T10:00:30")
    for key, a in addrs.items():
        if a["load"] and key not in ("tenant-a/bursty", "tenant-b/bursty-b"):
            avg = a["load"]["ingress"]["avg"]
            assert a["load"]["ingress"]["max"] <= max(3 * avg, 1.0), key


def test_hot_and_idle_addresses(run):
    truth = run["truth"]
    hot, idle = set(), set()
    for inf in run["plan"]["infrastructures"]:
        for s in inf["address_spaces"]:
            hot |= set("%s/%s" % (s["name"], a) for a in s["hot"])
            idle |= set("%s/%s" % (s["name"], a) for a in s["idle"])
    assert hot == set(truth["hot"])
    assert idle == set(truth["idle"])


def test_verdicts_match_the_scenario(run):
    exp = run["truth"]["expected"]
    summary = dict((i["infra"], i) for i in run["plan"]["summary"])
    for name, want in exp["infras"].items():
        got = summary[name]
        assert got["verdict"] == want["verdict"], name
        assert got["brokers"]["add"] == want["brokers_add"] and got["brokers"]["remove"] == want["brokers_remove"]
        assert got["routers"]["change"] == want["routers_change"], name
    spaces = {}
    for i in run["plan"]["summary"]:
        spaces.update(i["address_spaces"])
    for name, want in exp["spaces"].items():
        assert spaces[name]["verdict"] == want["verdict"], name
        assert spaces[name]["brokers_change"] == want["brokers_change"], name
        if "binding_resource" in want:
            assert spaces[name]["binding_resource"] == want["binding_resource"]


def test_placement_proposal(run):
    prod = [i for i in run["plan"]["infrastructures"] if i["infra"] == "prod"][0]
    pool = [p for p in prod["broker_pools"] if p["shared"]][0]
    hot_moves = [m for m in pool["moves"] if m["address"].startswith("hot-")]
    assert len(hot_moves) == 1
    m = hot_moves[0]
    assert m["from"] == run["truth"]["expected"]["moved_hot_queue_from"]
    assert m["to"] == "prod-broker-2" and m["reason"] == "overload" and m["bytes"] > 0
    assert [n["node"] for n in pool["nodes"] if n["new"]] == ["prod-broker-2"]
    # every capacity goal holds after the proposal, msg_rate did not before
    goals = dict((g["goal"], g) for g in pool["goals"])
    assert goals["capacity:msg_rate"]["holds_before"] is False
    assert all(g["holds_after"] for name, g in goals.items() if g["kind"] == "hard")
    # the new queue got a home, the plan change was re-placed
    assert any(x["address"] == "new-queue" for x in pool["new_placements"])
    edge = [i for i in run["plan"]["infrastructures"] if i["infra"] == "edge"][0]
    epool = edge["broker_pools"][0]
    assert len(epool["brokers_removed"]) == 2 and all(m["reason"] == "scale-in" for m in epool["moves"])
    assert epool["data_to_move_bytes"] == sum(m["bytes"] for m in epool["moves"]) > 0


def test_data_quality(run):
    dq = run["plan"]["data_quality"]
    assert dq["window_seconds"] == 300 and dq["windows_expected_per_series"] == 576     # 2 days / 5 min
    assert dq["samples"]["addresses"] + dq["samples"]["nodes"] == run["truth"]["samples"]
    assert dq["time_range"]["start"] == "2024-03-04T00:00:00Z"
    assert 0.99 < dq["coverage"] <= 1.0
    b = dq["per_address_space"]["tenant-b"]
    # 15 minutes without samples: 3 windows of 576 missing in every tenant-b series
    assert b["coverage"] == pytest.approx(573 / 576.0, abs=1e-9)
    assert dq["gaps"] == b["series"]
    assert dq["unmodelled_addresses"] == ["edge/tenant-b/legacy"]
    assert dq["addresses_without_metrics"] == ["prod/tenant-a/new-queue"]


def test_growth_forecast(run):
    slope = 0.0
    for inf in run["plan"]["infrastructures"]:
        f = [x for x in inf["forecast"] if x["scope"] == "infra" and x["resource"] == "ingress"][0]
        slope += f["daily_mean_slope_per_day"]
    want = run["truth"]["growth"]["daily_mean_total_ingress_slope_per_day"]
    assert slope == pytest.approx(want, rel=0.1)
    prod = [i for i in run["plan"]["infrastructures"] if i["infra"] == "prod"][0]
    mr = [x for x in prod["forecast"] if x["scope"] == "brokers:_infra" and x["resource"] == "msg_rate"][0]
    assert mr["status"] in ("date", "exceeded", "beyond_horizon") and mr["slope_per_day"] > 0
    assert len(mr["daily"]) == 2


def test_spark_numbers_equal_the_python_reference(run, store):
    """Same definitions, same numbers: the Spark aggregation against
    rules.reference_address_stats on the same samples."""
    root, _unused = store
    t = pads.dataset(root + "/addresses", format="parquet", partitioning="hive").to_table().to_pylist()
    rows = []
    for r in t:
        r["t"] = r["ts"].timestamp()
        rows.append(r)
    n = pads.dataset(root + "/nodes", format="parquet", partitioning="hive").to_table(
        columns=["ts", "infra", "node", "uptime_ms"]).to_pylist()
    per_node = {}
    for r in n:
        per_node.setdefault((r["infra"], r["node"]), []).append((r["ts"].timestamp(), r["uptime_ms"]))
    restarts = dict((k, lib.detect_restarts(v)) for k, v in per_node.items())
    ref = lib.reference_address_stats(rows, 300, 600, 0.5, restarts)
    addrs = {}
    for inf in run["plan"]["infrastructures"]:
        for s in inf["address_spaces"]:
            for a in s["addresses"]:
                if a["load"]:
                    addrs[(inf["infra"], s["name"], a["address"], a["load"]["measured_on"])] = a["load"]
    assert len(addrs) >= 25
    for key, load in addrs.items():
        want = ref[key]
        assert load["windows"] == want["windows"] and load["windows_valid"] == want["windows_valid"], key
        for side in ("ingress", "egress"):
            for st in ("avg", "p95", "p99", "max"):
                assert load[side][st] == pytest.approx(want[side][st], rel=1e-9, abs=1e-9), (key, side, st)


def test_report_is_self_contained_with_plots(run):
    with open(run["report"]) as f:
        h = f.read()
    for sid in SECTIONS:
        assert "id='%s'" % sid in h, sid
    assert h.count("<svg") >= 10
    assert "<script" not in h.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", h, re.I)
    assert not re.search(r"https?://", h)
    assert "@import" not in h and "url(" not in h
    for word in ("under-provisioned", "over-provisioned", "prod-broker-2", "Data quality", "Forecast"):
        assert word in h


def test_plan_document_shape(run):
    plan = run["plan"]
    assert plan["schema_version"] == 1
    for key in ("data_quality", "capacity_model", "infrastructures", "summary", "warnings", "job"):
        assert key in plan
    cm = plan["capacity_model"]
    assert cm["broker"]["resources"]["msg_rate"] == {"capacity": 20000, "baseline": 0, "high": 0.8, "low": 0.3}


# ------------------------------------------------------------------ bad input

def _tiny_store(root, rows_mutator=None, drop=()):
    """A one-file store of 20 samples of one queue."""
    t0 = dt.datetime(2024, 3, 4, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(20):
        rows.append({"ts": t0 + dt.timedelta(minutes=i), "infra": "i", "address_space": "s1", "address": "q1",
                     "address_type": "queue", "plan": "standard-small-queue", "node": "b0", "node_kind": "broker",
                     "messages_added": 100 * i, "messages_acknowledged": 100 * i, "message_count": 0,
                     "consumer_count": 1, "persistent_size": 0, "address_size": None, "deliveries_ingress": None,
                     "deliveries_egress": None, "links": 1})
    if rows_mutator:
        rows_mutator(rows)
    schema = pa.schema([f for f in gm.ADDRESS_SCHEMA if f.name not in drop])
    for r in rows:
        for c in drop:
            r.pop(c)
    d = os.path.join(root, "addresses", "date=2024-03-04", "address_space=s1")
    os.makedirs(d)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), os.path.join(d, "part-0.parquet"))


def _tiny_model(path, plan="standard-small-queue"):
    with open(path, "w") as f:
        json.dump({"infra": "i", "address_spaces": [{"name": "s1", "type": "standard", "plan": "standard-small",
                                                     "addresses": [{"address": "q1", "type": "queue",
                                                                    "plan": plan}]}]}, f)


def test_bad_input_unknown_plan(tmp_path):
    _tiny_store(str(tmp_path / "m"))
    _tiny_model(str(tmp_path / "model.json"), plan="gold-queue")
    res = _job(["--metrics", str(tmp_path / "m"), "--model", str(tmp_path / "model.json"),
                "--out-plan", str(tmp_path / "plan.json"), "--out-report", str(tmp_path / "r.html")])
    assert res.returncode == 2
    assert "capacity_plan: error: model file" in res.stderr and "'gold-queue' is not a known address plan" in res.stderr
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "r.html").exists()


def test_bad_input_empty_store(tmp_path):
    (tmp_path / "m" / "addresses").mkdir(parents=True)
    _tiny_model(str(tmp_path / "model.json"))
    res = _job(["--metrics", str(tmp_path / "m"), "--model", str(tmp_path / "model.json"),
                "--out-plan", str(tmp_path / "plan.json"), "--out-report", str(tmp_path / "r.html")])
    assert res.returncode == 2
    assert "metrics store %s is empty: no Parquet files" % (tmp_path / "m") in res.stderr
    assert not (tmp_path / "plan.json").exists()


@pytest.fixture(scope="module")
def spark_session():
    spark, owned = cli._spark_session(cli.parse_args(["--metrics", "x", "--model", "y", "--master", "local[2]",
                                                      "--conf", "spark.ui.enabled=false",
                                                      "--shuffle-partitions", "2"] + spark_test_conf(cli)))
    yield spark
    if owned:
        spark.stop()


def _main(tmp_path, capsys):
    rc = cli.main(["--metrics", str(tmp_path / "m"), "--model", str(tmp_path / "model.json"),
                  "--out-plan", str(tmp_path / "plan.json"), "--out-report", str(tmp_path / "r.html")])
    return rc, capsys.readouterr().err


def test_bad_input_missing_columns(tmp_path, capsys, spark_session):
    _tiny_store(str(tmp_path / "m"), drop=("messages_added", "message_count"))
    _tiny_model(str(tmp_path / "model.json"))
    rc, err = _main(tmp_path, capsys)
    assert rc == 2
    assert "address samples lack required column(s) messages_added, message_count" in err
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "r.html").exists()


def test_bad_input_negative_rates(tmp_path, capsys, spark_session):
    def negative(rows):
        rows[5]["messages_added"] = -40
        rows[6]["message_count"] = -1
    _tiny_store(str(tmp_path / "m"), negative)
    _tiny_model(str(tmp_path / "model.json"))
    rc, err = _main(tmp_path, capsys)
    assert rc == 2
    assert ("negative values (counters, gauges and therefore rates must be >= 0): message_count in 1 row(s), "
            "messages_added in 1 row(s)") in err
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "r.html").exists()


def test_tiny_store_plans_fine(tmp_path, capsys, spark_session):
    """The same tiny store without defects gives a plan (the bad-input tests
    fail for the reason they claim)."""
    _tiny_store(str(tmp_path / "m"))
    _tiny_model(str(tmp_path / "model.json"))
    rc, err = _main(tmp_path, capsys)
    assert rc == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    a = plan["infrastructures"][0]["address_spaces"][0]["addresses"][0]
    assert a["load"]["ingress"]["avg"] == pytest.approx(100 / 60.0)


def test_unmodelled_names_found_by_narrow_and_full_scans(tmp_path, spark_session):
    """Ids the model does not name are looked up in the store: first among
    the samples at the hinted instant (in its date partition), then in a full
    scan for what that misses (a wrong hint, a file under another date)."""
    from pyspark.sql import functions as F
    _tiny_store(str(tmp_path / "m"))
    # q2 sampled on 2024-03-04 but filed under date=2024-03-05
    t0 = dt.datetime(2024, 3, 4, 12, tzinfo=dt.timezone.utc)
    d = tmp_path / "m" / "addresses" / "date=2024-03-05" / "address_space=s1"
    d.mkdir(parents=True)
    row = {"ts": t0, "infra": "i", "address_space": "s1", "address": "q2", "address_type": "queue",
           "plan": "standard-small-queue", "node": "b0", "node_kind": "broker", "messages_added": 1,
           "messages_acknowledged": 1, "message_count": 0, "consumer_count": 0, "persistent_size": 0,
           "address_size": None, "deliveries_ingress": None, "deliveries_egress": None, "links": 0}
    pq.write_table(pa.Table.from_pylist([row], schema=pa.schema(gm.ADDRESS_SCHEMA)), str(d / "part-0.parquet"))
    addresses, _unused = read.read_kind(spark_session, str(tmp_path / "m"), "addresses", read.ADDRESS_REQUIRED,
                                        read.ADDRESS_OPTIONAL)
    cols = ("infra", "address_space", "address")
    ids = dict((r["address"], r["h"]) for r in addresses.select(aggregate._h(F, 0, *cols).alias("h"), "address")
               .distinct().collect())
    q1_first = dt.datetime(2024, 3, 4, tzinfo=dt.timezone.utc).timestamp()
    # right hint for q1, a hint with no sample for q2 (and q2 is under another date)
    names = aggregate._resolve(spark_session, addresses, 0, cols, (), set(ids.values()),
                               times={ids["q1"]: q1_first, ids["q2"]: q1_first + 7})
    assert names == {ids["q1"]: ("i", "s1", "q1"), ids["q2"]: ("i", "s1", "q2")}
    # candidates alone, no scan needed; an id nobody carries stays unnamed
    names = aggregate._resolve(spark_session, addresses, 0, cols, [("i", "s1", "q1")], {ids["q1"], 12345},
                               times={12345: q1_first})
    assert names == {ids["q1"]: ("i", "s1", "q1")}


def test_histogram_percentiles_within_the_bound_of_exact(run, store, tmp_path, spark_session):
    """percentile_method: histogram (the mergeable rule incremental planning
    needs) against the exact run on the same store: every address's p95 and
    p99 within histogram.REL_ERROR (1 %) of exact, everything else equal."""
    from enmasse_capacity import histogram
    root, _unused = store
    out = str(tmp_path / "plan.json")
    rc = cli.main(["--metrics", root, "--model", os.path.join(root, "model.json"), "--out-plan", out,
                   "--no-report", "--percentile-method", "histogram"])
    assert rc == 0
    with open(out) as f:
        plan = json.load(f)
    assert plan["data_quality"]["percentile_method"] == "histogram"
    exact, got = _addresses(run["plan"]), _addresses(plan)
    assert sorted(exact) == sorted(got)
    compared = differ = 0
    for key, a in exact.items():
        if not a["load"]:
            assert not got[key]["load"], key
            continue
        b = got[key]["load"]
        assert (b["windows"], b["windows_valid"]) == (a["load"]["windows"], a["load"]["windows_valid"]), key
        for side in ("ingress", "egress"):
            for st in ("avg", "max"):
                assert b[side][st] == pytest.approx(a["load"][side][st], rel=1e-9, abs=1e-12), (key, side, st)
            for st in ("p95", "p99"):
                want = a["load"][side][st]
                bound = histogram.REL_ERROR * want + histogram.MIN_VALUE
                assert abs(b[side][st] - want) <= bound * (1 + 1e-9), (key, side, st, b[side][st], want)
                compared += 1
                differ += b[side][st] != want
    assert compared >= 100 and differ > 0        # the rule was applied, not exact again
