"""Runs gateway/mqtt's BenchmarkSessionLookup (a CONNECT's read of one
session record among 10,000, keyed vs the whole queue) against a REAL store:
test_mqtt_retained.py's environment (two qdrouterd 1.19, two Artemis 2.40
pool brokers, the standard space's retained queue reached through the
gateway's service connection). Not collected by the suite (the file name):
run by name, docs/benchmarks.md ("MQTT: session record lookup at CONNECT"):

    /tmp/run-int.sh . tests/integration/bench_mqtt_session_lookup.py -q -s -p no:cacheprovider
"""
import json
import os
import subprocess

import pytest

import test_mqtt_gateway as tmg
from mqtt_retained_env import gateway_config
# env is test_mqtt_retained's fixture, used here by name
from test_mqtt_retained import env  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.integration, pytest.mark.router]


def test_session_lookup_benchmark(env, tmp_path):
    config = dict(gateway_config(env["std"], str(tmp_path), env["status"], 0, env["service_password"]),
                  listen_tls="127.0.0.1:1")
    path = str(tmp_path / "bench.json")
    with open(path, "w") as f:
        json.dump(config, f)
    go = subprocess.run(["bash", os.path.join(tmg.REPO, "scripts", "go-toolchain.sh"), "1.25", "go1.25.5"],
                        check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    out = subprocess.run([go, "test", "-run", "^$", "-bench", "SessionLookup", "-benchtime",
                          os.environ.get("BENCH_TIME", "20x"), "-v", "."],
                         cwd=os.path.join(tmg.REPO, "gateway", "mqtt"), env=dict(os.environ, MQTT_BENCH_CONFIG=path),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200, check=False)
    print(out.stdout)
    assert out.returncode == 0, out.stdout
    assert "keyed" in out.stdout and "whole-queue" in out.stdout
