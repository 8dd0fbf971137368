"""The broker role's metrics endpoint on a real Artemis 2.40 with the real
Prometheus JMX exporter agent (tests/integration/broker_metrics.py runs the
role's tasks): with the generated credentials a scrape over HTTPS (verified
with the CA) returns the depth of a queue we filled; without credentials,
with a wrong password and in plain HTTP it is refused; the host's agent
configuration holds no clear password."""
import os
import re
import time
import urllib.error

import pytest
import yaml

import amqp_checks
import broker_metrics
import helpers
import tls_pki

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(broker_metrics.missing() is not None, reason=str(broker_metrics.missing()))]


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    m = broker_metrics.start(str(tmp_path_factory.mktemp("broker-metrics")))
    try:
        yield m
    finally:
        m["broker"].stop()


def _value(body, name, **labels):
    for line in body.splitlines():
        mm = re.match(r"^%s\{(.*)\} (\S+)$" % re.escape(name), line)
        if mm and all('%s="%s"' % kv in mm.group(1) for kv in labels.items()):
            return float(mm.group(2))
    return None


def test_scrape_with_the_generated_credentials_returns_the_queue_depth(metrics):
    broker = metrics["broker"]
    broker.create_by_hand("metrics.orders")
    conn = amqp_checks.connect(broker.amqp_url())
    try:
        amqp_checks.send(conn, "metrics.orders", count=7, durable=True)
    finally:
        conn.close()
    body = broker_metrics.scrape(metrics["url"], metrics["ca"], metrics["user"], metrics["password"])
    assert _value(body, "artemis_message_count", queue="metrics.orders", address="metrics.orders") == 7.0
    assert _value(body, "artemis_consumer_count", queue="metrics.orders") == 0.0
    assert _value(body, "artemis_global_max_size_bytes", broker=broker.name) > 0
    assert _value(body, "artemis_address_memory_usage_bytes", broker=broker.name) > 0
    # the disk monitor (disk-scan-period 5 s) fills it in after its first scan
    deadline, ratio = time.monotonic() + 30, 0.0
    while not ratio and time.monotonic() < deadline:
        time.sleep(1)
        ratio = _value(broker_metrics.scrape(metrics["url"], metrics["ca"], metrics["user"], metrics["password"]),
                       "artemis_disk_store_usage_ratio", broker=broker.name)
    assert 0 < ratio < 1, ratio
    assert _value(body, "artemis_max_disk_usage_percent", broker=broker.name) == 90.0
    # the rules keep the scrape small: no other MBean attribute is exported
    names = {re.match(r"^([a-z_:]+)", ln).group(1) for ln in body.splitlines() if ln and not ln.startswith("#")}
    assert {n for n in names if n.startswith("org_apache")} == set()
    assert metrics["ports"] == [metrics["port"]]


@pytest.mark.parametrize("user, password", [(None, None), ("prometheus", "wrong"), ("admin", "x")])
def test_scrape_without_or_with_wrong_credentials_is_refused(metrics, user, password):
    if user == "admin":
        password = metrics["password"]  # the right password with another user
    with pytest.raises(urllib.error.HTTPError) as e:
        broker_metrics.scrape(metrics["url"], metrics["ca"], user, password)
    assert e.value.code == 401


def test_plain_http_is_refused_and_the_config_holds_no_clear_password(metrics):
    with pytest.raises(Exception) as e:  # noqa: PT011 - any failure: TLS only
        broker_metrics.scrape(metrics["url"].replace("https:", "http:"), metrics["ca"],
                              metrics["user"], metrics["password"])
    assert not isinstance(e.value, AssertionError)
    assert metrics["password"] not in open(metrics["config"]).read()


@pytest.mark.parametrize("extra, message", [
    ({"broker_metrics_port": 5772}, "gives the instances the metrics ports [5772, 5872]"),
    ({"broker_metrics_agent_src": "/etc/hostname"}, "broker_metrics_agent_src=/etc/hostname must be a file"),
])
def test_prereqs_refuse_a_port_clash_and_a_wrong_offline_jar(extra, message):
    """The role's own checks (prereqs.yml), before any host is touched: a metrics
    port on an acceptor's port (instance b's AMQP is 5672 + 100), a jar whose
    sha512 is not broker_metrics_agent_checksum."""
    pre = yaml.safe_load(open(os.path.join(helpers.ROLE_DIR, "tasks", "prereqs.yml")))
    tasks = [{"name": "layout", "ansible.builtin.include_role": {
        "name": "enmasse.messaging.broker", "tasks_from": "layout", "public": True}}]
    tasks += [t for t in pre if "metrics" in t["name"]]
    res = helpers.run_playbook(tasks, extra_vars=dict({
        "broker_address_spaces": [{"name": "a", "plan": "p"}, {"name": "b", "plan": "p"}],
        "broker_metrics_enabled": True, "broker_metrics_agent_src": broker_metrics.agent_jar()}, **extra))
    msgs = [h.get("msg", "") for p in res.data.get("plays", []) for t in p["tasks"] for h in t["hosts"].values()
            if h.get("failed")]
    assert res.rc != 0 and len(msgs) == 1 and message in msgs[0], res


def test_metrics_tasks_idempotent_0640_and_removed_when_off(tmp_path):
    """The role's metrics tasks a second time change nothing (deterministic salt,
    the key store compared, not remade); the files are 0640; turning metrics off
    removes the agent config and the key store."""
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "instance", "etc"))
    tls = os.path.join(base, "tls")
    tls_pki.broker_tls_dir(tls)
    ports = {"amqp": 15672, "core": 15616, "openwire": 15617, "stomp": 15613, "mqtt": 11883, "jolokia": 18161}
    extra = {"broker_address_spaces": [{"name": "instance", "plan": "p", "port_offset": 0}], "broker_ports": ports,
             "broker_instances_dir": base, "broker_credentials_dir": os.path.join(base, "c"), "broker_tls_dir": tls,
             "broker_download_dir": base, "broker_group": "root", "broker_metrics_enabled": True,
             "broker_metrics_agent_src": broker_metrics.agent_jar(), "__broker_restart_spaces": []}
    tasks = [{"name": n, "ansible.builtin.include_role": {"name": "enmasse.messaging.broker", "tasks_from": n,
                                                          "public": True}} for n in ("layout", "metrics")]
    files = [os.path.join(base, "instance", "etc", "jmx-exporter.yml"), os.path.join(tls, "metrics.p12")]
    first, second = (helpers.run_playbook(tasks, extra_vars=extra) for unused in range(2))
    assert first.rc == 0 and first.stats["changed"] == 3, first  # jar, key store, agent config
    assert second.rc == 0 and second.stats["changed"] == 0, second
    assert [oct(os.stat(f).st_mode & 0o777) for f in files] == ["0o640", "0o640"]
    off = helpers.run_playbook(tasks, extra_vars=dict(extra, broker_metrics_enabled=False))
    assert off.rc == 0 and not any(os.path.exists(f) for f in files), off
