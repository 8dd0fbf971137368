"""The pure parts of incremental planning (spark_jobs/enmasse_capacity/incremental.py):
which days a run aggregates, the state file, the day fingerprints."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "spark_jobs"))

from enmasse_capacity import incremental as inc  # noqa: E402
from enmasse_capacity import rules as lib  # noqa: E402

pytestmark = pytest.mark.unit

D1, D2, D3 = "2024-03-04", "2024-03-05", "2024-03-06"
R = (7, 1709634630.5)          # 2024-03-05 10:30:30.5 UTC


def _params(**kw):
    cm = lib.load_capacity_model(dict({"percentile_method": "histogram"}, **kw))
    return inc.parameters(cm)


def test_days_to_compute():
    p = _params()
    fps = {D1: "a", D2: "b", D3: "c"}
    st = {"parameters": p, "days": {D1: "a", D2: "b"}, "restarts": [list(R)]}
    # only the new day
    assert inc.days_to_compute(st, fps, p, [R]) == ([D3], [D1, D2], None)
    # nothing new
    assert inc.days_to_compute(dict(st, days=fps), fps, p, [R]) == ([], [D1, D2, D3], None)
    # late samples in day 1: day 1 and the next (its first counter delta spans midnight)
    assert inc.days_to_compute(dict(st, days={D1: "x", D2: "b", D3: "c"}), fps, p, [R]) == ([D1, D2], [D3], None)
    # a restart not seen before, on D1 12:00: its day and the next
    assert inc.days_to_compute(dict(st, days=fps), fps, p, [R, (8, 1709553600.0)]) == ([D1, D2], [D3], None)
    # a day gone from the store is neither aggregated nor kept
    assert inc.days_to_compute(dict(st, days=fps), {D2: "b", D3: "c"}, p, [R]) == ([], [D2, D3], None)
    # no state: everything, no reason (load_state gives it)
    assert inc.days_to_compute(None, fps, p, []) == ([D1, D2, D3], [], None)


@pytest.mark.parametrize("change, name", [({"window_seconds": 600}, "window_seconds"),
                                          ({"max_gap_seconds": 900}, "max_gap_seconds"),
                                          ({"min_window_coverage": 0.8}, "min_window_coverage")])
def test_changed_parameters_recompute_everything(change, name):
    p = _params()
    fps = {D1: "a", D2: "b"}
    st = {"parameters": p, "days": dict(fps), "restarts": []}
    todo, keep, why = inc.days_to_compute(st, fps, _params(**change), [])
    assert (todo, keep) == ([D1, D2], [])
    assert why == "the aggregation's parameters changed (%s): aggregating every day" % name
    assert inc.parameters(lib.load_capacity_model({"percentile_method": "histogram"}), infra="prod") != p


def test_state_roundtrip_missing_and_corrupt(tmp_path):
    path = str(tmp_path / "state.json")
    st, why = inc.load_state(path)
    assert st is None and why == "no state file %s (first incremental run): aggregating every day" % path
    inc.write_state(path, _params(), {D1: "a"}, [R], "2024-03-04T23:59:00+00:00")
    st, why = inc.load_state(path)
    assert why is None and st["days"] == {D1: "a"} and st["restarts"] == [list(R)]
    assert st["parameters"] == _params() and st["watermark"] == "2024-03-04T23:59:00+00:00"
    for text, what in (('{"days": ', "Expecting value"), ("[]", "not a state document"),
                       (json.dumps({"days": {"yesterday": "a"}, "parameters": {}, "restarts": []}), "yesterday")):
        with open(path, "w") as f:
            f.write(text)
        st, why = inc.load_state(path)
        assert st is None and why.startswith("state file %s is unreadable (" % path) and what in why, why
        assert why.endswith("): aggregating every day")


def test_fingerprints_change_with_a_late_file(tmp_path):
    for day, space in ((D1, "s1"), (D2, "s1")):
        d = tmp_path / "addresses" / ("date=" + day) / ("address_space=" + space)
        d.mkdir(parents=True)
        (d / "part-0.parquet").write_bytes(b"x" * 10)
    (tmp_path / "nodes" / ("date=" + D1)).mkdir(parents=True)
    (tmp_path / "nodes" / ("date=" + D1) / "part-0.parquet").write_bytes(b"n")
    (tmp_path / "addresses" / ("date=" + D1) / "_SUCCESS").write_bytes(b"")
    before = inc.day_fingerprints(str(tmp_path))
    assert sorted(before) == [D1, D2]
    late = tmp_path / "addresses" / ("date=" + D1) / "address_space=s2"
    late.mkdir()
    (late / "part-0.parquet").write_bytes(b"y")
    after = inc.day_fingerprints(str(tmp_path))
    assert after[D1] != before[D1] and after[D2] == before[D2]
    assert inc.last_days(after, 1) == {D2: after[D2]} and inc.last_days(after, 1.5) == after
    assert inc.last_days(after, None) == after
