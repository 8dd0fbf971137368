"""The capacity job's progress (phases with their durations, the progress
file a waiting playbook reads) and its refusal of a Spark master that does
not answer (before Spark starts, nothing written). No Spark here."""
import io
import json
import os
import socket
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "spark_jobs"))

from enmasse_capacity import cli  # noqa: E402
from enmasse_capacity.progress import Progress  # noqa: E402

pytestmark = pytest.mark.unit


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_phases_in_order_with_durations_and_the_file_says_done(tmp_path):
    path = tmp_path / "progress.json"
    out = io.StringIO()
    p = Progress(str(path), interval=0.05, stream=out).start()
    p.phase("read the store")
    p.phase("aggregate: counter deltas and per-series statistics")
    running = json.loads(path.read_text())
    assert running["state"] == "running"
    assert running["phase"] == "aggregate: counter deltas and per-series statistics"
    p.phase("plan")
    p.finish("done")
    doc = json.loads(path.read_text())
    assert doc["state"] == "done" and doc["phase"] is None
    assert [x["phase"] for x in doc["phases"]] == ["read the store", "aggregate: counter deltas and per-series "
                                                   "statistics", "plan"]
    assert all(x["seconds"] >= 0 for x in doc["phases"])
    log = out.getvalue()
    assert "read the store" in log and "plan" in log and "done" in log
    assert not [f for f in os.listdir(str(tmp_path)) if f.endswith(".tmp")]


def test_progress_line_names_the_stages_in_flight():
    snap = {"state": "running", "phase": "aggregate: counter deltas", "elapsed": 42.0, "stages_done": 3,
            "stages": [{"stage": 10, "attempt": 1, "tasks": 58, "done": 20, "running": 2, "failed": 1}]}
    line = Progress.line(snap)
    assert "aggregate: counter deltas" in line
    assert "stage 10 (retry 1): 20/58 tasks done, 2 running, 1 failed" in line
    assert "3 stage(s) done" in line


def test_unreachable_master_is_refused_with_its_address():
    port = _closed_port()
    with pytest.raises(cli.InputError) as e:
        cli.check_master("spark://127.0.0.1:%d" % port, timeout=2)
    assert "the Spark master spark://127.0.0.1:%d is unreachable" % port in str(e.value)
    assert "No plan written" in str(e.value)
    cli.check_master("local[2]")            # not a standalone master: nothing to check


def test_one_answering_master_of_several_is_enough():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        cli.check_master("spark://127.0.0.1:%d,127.0.0.1:%d" % (_closed_port(), srv.getsockname()[1]), timeout=2)
    finally:
        srv.close()


def test_job_with_unreachable_master_exits_2_and_writes_nothing(tmp_path, capsys):
    store = tmp_path / "store" / "addresses" / "date=2024-03-01" / "address_space=a"
    store.mkdir(parents=True)
    (store / "part-0.parquet").write_bytes(b"PAR1")
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"address_spaces": [{"name": "a", "type": "brokered", "plan": "brokered-single-broker",
                                                     "addresses": []}]}))
    out = tmp_path / "out"
    rc = cli.main(["--metrics", str(tmp_path / "store"), "--model", str(model), "--master",
                   "spark://127.0.0.1:%d" % _closed_port(), "--out-plan", str(out / "plan.json"),
                   "--out-report", str(out / "report.html"), "--progress-file", str(tmp_path / "progress.json")])
    assert rc == 2
    assert "is unreachable" in capsys.readouterr().err
    assert not out.exists()
    assert json.loads((tmp_path / "progress.json").read_text())["state"] == "failed"
