"""The capacity planner's driver side (spark_jobs/enmasse_capacity: planner,
pools, read, cli; no Spark): placement proposals, verdicts, quota, model
errors, atomic outputs, and the supported way to import the collection's
rules. The aggregated metrics are built by hand; nothing here imports pyspark."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "spark_jobs"))

from enmasse_capacity import cli, planner, read  # noqa: E402
from enmasse_capacity import rules as lib  # noqa: E402

pytestmark = pytest.mark.unit

T0 = 1709251200.0            # 2024-03-01T00:00:00Z
DAY = 86400.0
W = 300.0


def build_agg(infra, space, brokers, routers, queues, anycast=(), days=2, brokered=False):
    """queues: {address: (brokers holding it, throughput msg/s, stored bytes)}."""
    windows = [T0 + i * W for i in range(int(days * DAY / W))]
    n_win = len(windows)
    agg = {"totals": {"address_rows": 1000, "node_rows": 100, "t_min": T0, "t_max": windows[-1]},
           "restarts": [], "address_kind": [], "address_node": [], "node_windows": [], "node_throughput": [],
           "authoritative": {}, "space_windows": [], "timings": {}}
    scope = space if brokered else "_infra"
    per_node_thr = dict((b, 0.0) for b in brokers)

    def stats(prefix, v):
        return {"%s_avg" % prefix: v, "%s_p95" % prefix: v, "%s_p99" % prefix: v, "%s_max" % prefix: v}

    for addr, (held, thr, size) in queues.items():
        agg["authoritative"][(infra, space, addr)] = "broker"
        row = {"infra": infra, "address_space": space, "address": addr, "node_kind": "broker",
               "windows": n_win, "windows_valid": n_win}
        row.update(stats("in", thr / 2.0))
        row.update(stats("out", thr / 2.0))
        row.update(stats("thr", thr))
        agg["address_kind"].append(row)
        for b in held:
            r = {"infra": infra, "address_space": space, "address": addr, "node": b, "node_kind": "broker",
                 "depth_last": size // 1024, "depth_max": size // 1024, "size_last": size, "size_max": size,
                 "consumers_last": 1, "links_last": 1, "plan": None, "address_type": "queue",
                 "t_last": windows[-1], "samples": 2880, "resets": 0, "gaps": 0, "dups": 0,
                 "windows": n_win, "windows_valid": n_win}
            r.update(stats("thr", thr / len(held)))
            agg["address_node"].append(r)
            per_node_thr[b] += thr / len(held)
    for addr in anycast:
        agg["authoritative"][(infra, space, addr)] = "router"
        row = {"infra": infra, "address_space": space, "address": addr, "node_kind": "router",
               "windows": n_win, "windows_valid": n_win}
        for p in ("in", "out", "thr"):
            row.update(stats(p, 1.0))
        agg["address_kind"].append(row)
        for rt in routers:
            r = {"infra": infra, "address_space": space, "address": addr, "node": rt, "node_kind": "router",
                 "depth_last": 0, "depth_max": 0, "size_last": None, "size_max": None, "consumers_last": 1,
                 "links_last": 2, "plan": None, "address_type": "anycast", "t_last": windows[-1], "samples": 2880,
                 "resets": 0, "gaps": 0, "dups": 0, "windows": n_win, "windows_valid": n_win}
            r.update(stats("thr", 1.0))
            agg["address_node"].append(r)
    for ws in windows:
        for b in brokers:
            held_bytes = sum(size for held, _unused, size in queues.values() if b in held)
            agg["node_windows"].append({"infra": infra, "address_space": scope, "node": b, "node_kind": "broker",
                                        "ws": ws, "memory_used": 64 * 2 ** 20 + held_bytes, "memory_max": 2 ** 31,
                                        "disk_used": 50 * 2 ** 20 + held_bytes, "disk_max": 20 * 2 ** 30,
                                        "connections": 4.0, "links": None, "n": 5})
            agg["node_throughput"].append({"infra": infra, "node": b, "node_kind": "broker", "ws": ws,
                                           "thr": per_node_thr[b]})
        for rt in routers:
            agg["node_windows"].append({"infra": infra, "address_space": "_infra", "node": rt, "node_kind": "router",
                                        "ws": ws, "memory_used": 80 * 2 ** 20, "memory_max": 2 ** 30,
                                        "disk_used": None, "disk_max": None, "connections": 100.0, "links": 50.0,
                                        "n": 5})
            agg["node_throughput"].append({"infra": infra, "node": rt, "node_kind": "router", "ws": ws,
                                           "thr": sum(t for _unused, t, _unused in queues.values()) / len(routers)})
    return agg


def model(space_plan, addresses, placement, stype="standard", space="s1"):
    return {"infra": "i", "address_spaces": [{"name": space, "type": stype, "plan": space_plan,
                                              "addresses": addresses}],
            "current_placement": {space: placement}}


def plan_for(tmp_path, agg, doc, cm=None):
    p = tmp_path / "model.json"
    p.write_text(json.dumps(doc))
    spaces, cat, cur = read.load_model(str(p))
    return planner.Planner(agg, spaces, cat, cur, lib.load_capacity_model(cm or {})).run()


def q(name, plan="standard-medium-queue"):
    return {"address": name, "type": "queue", "plan": plan}


def test_overloaded_broker_moves_one_queue_to_the_idle_one(tmp_path):
    # q1 and q2 each 9000 msg/s (in + out) on b0: 18000 > 0.8 x 20000; b1 is empty
    agg = build_agg("i", "s1", ["b0", "b1"], ["r0"], {"q1": (["b0"], 9000.0, 10 * 2 ** 20),
                                                      "q2": (["b0"], 9000.0, 10 * 2 ** 20)})
    plan = plan_for(tmp_path, agg, model("standard-medium", [q("q1"), q("q2")], {"q1": ["b0"], "q2": ["b0"]}))
    pool = plan["infrastructures"][0]["broker_pools"][0]
    assert pool["verdict"]["verdict"] == lib.RIGHT and pool["verdict"]["change"] == 0
    assert len(pool["moves"]) == 1
    m = pool["moves"][0]
    assert (m["from"], m["to"], m["bytes"], m["reason"]) == ("b0", "b1", 10 * 2 ** 20, "overload")
    b0 = [n for n in pool["nodes"] if n["node"] == "b0"][0]
    assert b0["utilisation_before"]["msg_rate"] == pytest.approx(0.9)      # 18000 / 20000
    assert b0["utilisation_after"]["msg_rate"] == pytest.approx(0.45)      # 9000 / 20000
    goal = [g for g in pool["goals"] if g["goal"] == "capacity:msg_rate"][0]
    assert goal["holds_before"] is False and goal["violations_before"] == ["b0"] and goal["holds_after"] is True


def test_three_hot_queues_need_a_third_broker(tmp_path):
    # each needs 9000 / 16000 = 0.5625 of a broker: no two fit together
    agg = build_agg("i", "s1", ["b0", "b1"], ["r0"], {"h0": (["b0"], 9000.0, 2 ** 20), "h1": (["b0"], 9000.0, 2 ** 20),
                                                      "h2": (["b1"], 9000.0, 2 ** 20)})
    plan = plan_for(tmp_path, agg, model("standard-medium", [q("h0"), q("h1"), q("h2")],
                                         {"h0": ["b0"], "h1": ["b0"], "h2": ["b1"]}))
    inf = plan["infrastructures"][0]
    pool = inf["broker_pools"][0]
    assert pool["verdict"]["verdict"] == lib.UNDER and pool["verdict"]["change"] == 1
    assert pool["verdict"]["binding_resource"] == "msg_rate"
    assert [m["to"] for m in pool["moves"]] == ["i-broker-2"]
    assert inf["verdict"]["brokers"] == {"current": 2, "add": 1, "remove": 0, "change": 1}
    assert plan["summary"][0]["address_spaces"]["s1"]["verdict"] == lib.UNDER
    s1 = inf["address_spaces"][0]
    assert s1["hot"] == ["h0", "h1", "h2"]        # 9000 >= 0.1 x 20000


def test_light_load_on_three_brokers_scales_in_to_one(tmp_path):
    queues = dict(("q%d" % i, (["b%d" % (i % 3)], 10.0, 4096)) for i in range(6))
    agg = build_agg("i", "s1", ["b0", "b1", "b2"], ["r0"], queues)
    plan = plan_for(tmp_path, agg, model("standard-small", [q(n, "standard-small-queue") for n in queues],
                                         dict((n, v[0]) for n, v in queues.items())))
    pool = plan["infrastructures"][0]["broker_pools"][0]
    assert pool["verdict"]["verdict"] == lib.OVER and pool["verdict"]["change"] == -2
    assert len(pool["brokers_removed"]) == 2
    kept = [b for b in ("b0", "b1", "b2") if b not in pool["brokers_removed"]][0]
    # the four queues on the removed brokers move to the kept one, with their bytes
    assert sorted(m["to"] for m in pool["moves"]) == [kept] * 4
    assert pool["data_to_move_bytes"] == 4 * 4096
    assert all(m["reason"] == "scale-in" for m in pool["moves"])


def test_quota_exceeded_makes_the_space_under_provisioned(tmp_path):
    # standard-small allows broker credit 2.0: the third large queue (1.0 each) is pending
    queues = {"l0": (["b0"], 10.0, 0), "l1": (["b1"], 10.0, 0), "l2": ([], 0.0, 0)}
    agg = build_agg("i", "s1", ["b0", "b1"], ["r0"], dict((k, v) for k, v in queues.items() if v[0]))
    plan = plan_for(tmp_path, agg, model("standard-small", [q(n, "standard-large-queue") for n in queues],
                                         {"l0": ["b0"], "l1": ["b1"]}))
    s1 = plan["infrastructures"][0]["address_spaces"][0]
    assert s1["pending"] == [{"address": "l2", "reason": "quota exceeded"}]
    assert s1["verdict"]["verdict"] == lib.UNDER and s1["verdict"]["binding_resource"] == "quota"
    goal = [g for g in plan["infrastructures"][0]["broker_pools"][0]["goals"] if g["goal"] == "quota:s1"][0]
    assert goal["holds_after"] is False and goal["violations_after"] == ["l2"]


def test_routers_verdict_uses_credits_and_load(tmp_path):
    agg = build_agg("i", "s1", ["b0"], ["r0", "r1", "r2"], {"q0": (["b0"], 10.0, 0)}, anycast=["a0"])
    a0 = {"address": "a0", "type": "anycast", "plan": "standard-small-anycast"}
    plan = plan_for(tmp_path, agg, model("standard-medium", [q("q0"), a0], {"q0": ["b0"]}))
    rp = plan["infrastructures"][0]["router_pools"][0]
    # credits 0.01 + 0.001 -> 1 router; load tiny -> 3 routers is over-provisioned by 2
    assert rp["verdict"]["needed_by_credits"] == 1
    assert rp["verdict"]["verdict"] == lib.OVER and rp["verdict"]["change"] == -2
    # router memory model: 50 MiB + 7 KiB (1 anycast) + 32 KiB (1 queue) fixed per router
    assert rp["sizing"]["fixed_memory_per_router"] == 50 * 2 ** 20 + 7 * 1024 + 32 * 1024


def test_brokered_space_never_adds_or_removes_its_broker(tmp_path):
    queues = dict(("q%d" % i, (["bk"], 20.0, 1024)) for i in range(3))
    agg = build_agg("i", "bs", ["bk"], [], queues, brokered=True)
    doc = model("brokered-single-broker", [q(n, "brokered-queue") for n in queues],
                dict((n, ["bk"]) for n in queues), stype="brokered", space="bs")
    plan = plan_for(tmp_path, agg, doc)
    pool = plan["infrastructures"][0]["broker_pools"][0]
    assert pool["pool"] == "bs" and pool["brokered"] is True
    assert pool["verdict"]["verdict"] == lib.RIGHT and pool["verdict"]["change"] == 0
    assert pool["moves"] == []


def test_model_errors_are_clear(tmp_path):
    bad = model("standard-medium", [q("q1", "no-such-plan")], {})
    p = tmp_path / "m.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(lib.InputError) as e:
        read.load_model(str(p))
    assert "'no-such-plan' is not a known address plan" in str(e.value)
    bad = model("gold", [q("q1")], {})
    p.write_text(json.dumps(bad))
    with pytest.raises(lib.InputError) as e:
        read.load_model(str(p))
    assert "'gold' is not a known address space plan" in str(e.value)
    p.write_text("{not json")
    with pytest.raises(lib.InputError) as e:
        read.load_model(str(p))
    assert "is not valid JSON" in str(e.value)


def test_model_accepts_yaml_extra_plans_and_flat_placement(tmp_path):
    p = tmp_path / "m.yml"
    p.write_text("""
infra: lab
plans:
  address_plans:
    - {name: tiny-queue, address_space_type: standard, address_type: queue,
       resources: {router: 0.0001, broker: 0.001}}
  address_space_plans:
    - {name: lab, address_space_type: standard, resource_limits: {router: 1, broker: 1, aggregate: 2},
       address_plans: [tiny-queue]}
address_spaces:
  - {name: s1, type: standard, plan: lab, addresses: [{address: q1, type: queue, plan: tiny-queue}]}
current_placement:
  s1/q1: [b0]
""")
    spaces, cat, cur = read.load_model(str(p))
    assert spaces[0]["infra"] == "lab" and cat.address_plan("tiny-queue")["resources"]["broker"] == 0.001
    assert cur == {("s1", "q1"): ["b0"]}


def test_atomic_write_all_leaves_nothing_on_failure(tmp_path):
    good = tmp_path / "report.html"
    bad = tmp_path / "adir"
    bad.mkdir()
    with pytest.raises(OSError):
        cli.atomic_write_all([(str(good), "<html/>"), (str(bad), "{}")])   # renaming onto a directory fails
    assert not good.exists()
    assert [f for f in os.listdir(str(tmp_path)) if f.endswith(".tmp")] == []
    cli.atomic_write_all([(str(good), "x"), (str(tmp_path / "plan.json"), "{}")])
    assert good.read_text() == "x" and (tmp_path / "plan.json").read_text() == "{}"


def _bundle_layout(tmp_path):
    """The layout the capacity_planner role installs: the job and the
    module_utils it imports (the job_bundle lookup) under one lib/ directory."""
    from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle
    lib_dir = tmp_path / "lib"
    for e in job_bundle.bundle(root=REPO):
        dest = lib_dir / e["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(e["content"])
    return lib_dir


def test_job_imports_the_collection_from_the_role_bundle(tmp_path):
    """The supported way: the directory holding ansible_collections/ on
    PYTHONPATH; nothing outside the bundle is read."""
    lib_dir = _bundle_layout(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(lib_dir))
    code = ("import sys, capacity_plan, enmasse_capacity.planner as p, enmasse_capacity.read as r; "
            "print(p.placement.__file__); print(r.documents.__file__); print('pyspark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(lib_dir), env=env, capture_output=True, check=False, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[:2] == [str(lib_dir / "ansible_collections/enmasse/messaging/plugins/module_utils/model/placement.py"),
                         str(lib_dir / "ansible_collections/enmasse/messaging/plugins/module_utils/model/documents.py")]
    assert lines[2] == "False"


def test_job_without_the_collection_on_the_path_says_how(tmp_path):
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run([sys.executable, os.path.join(REPO, "spark_jobs", "capacity_plan.py"), "--help"],
                         cwd=str(tmp_path), env=env, capture_output=True, check=False, text=True)
    assert out.returncode == 2
    assert "put the directory that holds ansible_collections/ on PYTHONPATH" in out.stderr


def test_planner_runs_without_spark():
    """The planner half of the job never imports pyspark (only aggregate.py
    and read.py's Spark readers do, when called)."""
    code = ("import sys; from enmasse_capacity import cli, planner, pools, read, report, rules; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(REPO, "spark_jobs"), env=env,
                         capture_output=True, check=False, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_schema_derived_columns():
    """The job's column lists come from model/schema.py (one definition)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import schema
    assert read.ADDRESS_REQUIRED == ("ts", "infra", "address_space", "address", "address_type", "plan", "node",
                                     "node_kind", "messages_added", "messages_acknowledged", "message_count")
    assert read.NODE_REQUIRED == ("ts", "infra", "address_space", "node", "node_kind", "memory_used", "uptime_ms")
    assert set(read.ADDRESS_REQUIRED) | set(read.ADDRESS_OPTIONAL) == set(schema.field_names(schema.ADDRESSES))
    assert set(read.NODE_REQUIRED) | set(read.NODE_OPTIONAL) == set(schema.field_names(schema.NODES))
    assert read.ADDRESS_OPTIONAL["persistent_size"] == "bigint" and read.NODE_OPTIONAL["connections"] == "int"
    assert "uptime_ms" in read.NODE_NONNEG and "address" not in read.ADDRESS_NONNEG
    assert set(lib.ADDRESS_TYPES) == set(schema.ADDRESS_TYPES)


def test_report_renders_self_contained(tmp_path):
    import re
    from enmasse_capacity import report as capacity_report
    agg = build_agg("i", "s1", ["b0", "b1"], ["r0"], {"h0": (["b0"], 9000.0, 2 ** 20), "h1": (["b0"], 9000.0, 2 ** 20),
                                                      "h2": (["b1"], 9000.0, 2 ** 20)})
    agg["space_windows"] = [{"infra": "i", "address_space": "s1", "ws": T0 + i * W, "r_in": 100.0 + i,
                             "r_out": 99.0 + i, "addresses": 3} for i in range(50)]
    plan = plan_for(tmp_path, agg, model("standard-medium", [q("h0"), q("h1"), q("h2")],
                                         {"h0": ["b0"], "h1": ["b0"], "h2": ["b1"]}))
    h = capacity_report.render(json.loads(json.dumps(plan)), agg)
    for sid in ("summary", "data-quality", "capacity-model", "observed-load", "utilisation", "goals", "proposal",
                "forecast"):
        assert "<section id='%s'>" % sid in h
    assert h.count("<svg") >= 10 and "<script" not in h and not re.search(r"https?://", h)
    assert "i-broker-2" in h and "under-provisioned" in h


def test_generator_is_deterministic(tmp_path):
    import generate_metrics as gm
    import pyarrow.dataset as pads
    a = gm.generate(str(tmp_path / "a"), seed=3, n_addresses=12, days=0.25, quiet=True)
    b = gm.generate(str(tmp_path / "b"), seed=3, n_addresses=12, days=0.25, quiet=True)
    c = gm.generate(str(tmp_path / "c"), seed=4, n_addresses=12, days=0.25, quiet=True)
    for t in (a, b, c):
        t.pop("generate_seconds")
    assert a == b and a != c
    ta = pads.dataset(str(tmp_path / "a" / "addresses"), format="parquet", partitioning="hive").to_table()
    tb = pads.dataset(str(tmp_path / "b" / "addresses"), format="parquet", partitioning="hive").to_table()
    assert ta.num_rows == a["samples"] - pads.dataset(str(tmp_path / "a" / "nodes"), format="parquet").count_rows()
    assert ta.sort_by([("address_space", "ascending"), ("address", "ascending"), ("node", "ascending"),
                       ("ts", "ascending")]).equals(
        tb.sort_by([("address_space", "ascending"), ("address", "ascending"), ("node", "ascending"),
                    ("ts", "ascending")]))
    assert a["growth"]["relative_per_day"] == 0.05 and set(a["hot"]) == {"tenant-a/hot-0", "tenant-a/hot-1",
                                                                         "tenant-a/hot-2"}


def test_node_statistics_and_goals_by_hand():
    """measures: per-node statistic over window averages, reported maxima,
    the capacity a node is planned with, and the hard goals."""
    from enmasse_capacity import measures
    cm = lib.load_capacity_model({"node_statistic": "max", "rate_statistic": "avg"})
    windows = [{"infra": "i", "node": "b0", "node_kind": "broker", "address_space": "_infra", "memory_used": m,
                "memory_max": 1000, "disk_used": None, "disk_max": None, "connections": 2, "links": None}
               for m in (100.0, 300.0, 200.0)]
    thr = [{"infra": "i", "node": "b0", "thr": t} for t in (10.0, 30.0)]
    st = measures._node_stats(windows, thr, cm)[("i", "b0")]
    assert st["memory_used"] == 300.0 and st["memory_max"] == 1000          # max of the window averages
    assert st["msg_rate"] == 20.0 and st["msg_rate_max"] == 30.0            # (10 + 30) / 2
    assert st["scopes"] == ["_infra"] and "disk_used" not in st
    cm["broker"]["prefer_reported_max"] = True
    assert measures._capacity("broker", "memory", st, cm) == 1000.0          # the node's own maximum
    assert measures._capacity("broker", "msg_rate", st, cm) == float(cm["broker"]["resources"]["msg_rate"]["capacity"])
    nodes = [{"node": "b0", "utilisation_before": {"memory": 0.9}, "utilisation_after": {"memory": 0.5}},
             {"node": "b1", "utilisation_before": None, "utilisation_after": {"memory": 0.95}}]
    g = measures._capacity_goals(nodes, ["memory"], {"memory": 0.8}, "broker")[0]
    assert (g["holds_before"], g["violations_before"], g["holds_after"], g["violations_after"]) == \
        (False, ["b0"], False, ["b1"])
    assert measures._util({"memory": 50.0, "disk": 1.0}, {"memory": 100.0}) == {"memory": 0.5, "disk": None}
    assert measures._median([3, None, 1, 2, 10]) == 2.5 and measures._median([]) is None
