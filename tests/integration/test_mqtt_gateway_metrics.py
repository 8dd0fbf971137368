"""The MQTT gateway's metrics endpoint (gateway/mqtt/metrics.go, issue 22,
docs/monitoring.md "MQTT gateways"): the REAL gateway binary
(scripts/build-mqtt-gateway.sh; ENMASSE_MQTT_GATEWAY) in front of a REAL
qdrouterd 1.19 and the collection's auth service, REAL paho-mqtt clients that
log in right and wrong, publish and subscribe; then scraped over HTTPS (the
gateway's certificate, verified with the CA that signed it) with basic auth
against the auth service's salted SHA-512 password file, as Prometheus does,
and by the REAL Prometheus with the monitoring role's job mqtt_gateways. The
counters must say what the clients did; no user name or client id may appear
in the scrape. Without or with wrong credentials and over plain HTTP the
endpoint gives nothing; SIGHUP re-reads the password file."""
import json
import os
import shutil
import signal
import subprocess
import urllib.error

import pytest
import yaml

import test_auth_service_router as asr
from helpers import free_port
from metrics_http import metrics_scrape
from test_mqtt_gateway import ADDRESSES, OPEN, Consumer, Mqtt, gateway_binary, wait_for, write_table
# an autouse fixture: each test's MQTT clients are closed after it
from test_mqtt_gateway import close_clients  # noqa: F401 pylint: disable=unused-import

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics

pytestmark = [pytest.mark.integration, pytest.mark.router]

SCRAPE_USER = "prometheus"
SCRAPE_PASSWORD = "scrape-pw-" + os.urandom(6).hex()
P = "enmasse_mqtt_gateway_"


def write_password(path, password, salt="host-salt"):
    with open(path + ".tmp", "w") as handle:
        json.dump(metrics.password_file_document(SCRAPE_USER, password, salt), handle)
    os.chmod(path + ".tmp", 0o640)
    os.replace(path + ".tmp", path)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    pytest.importorskip("proton")
    pytest.importorskip("paho.mqtt")
    binary = gateway_binary()
    prefix = asr.build_router()
    root = tmp_path_factory.mktemp("mqttmetrics")
    users_dir = str(root / "users")
    os.makedirs(users_dir)
    asr.write_users(users_dir, "space-a", {"alice": ("secret-a", asr.ALL),
                                           "carol": ("carol-pw", ["send_q1", "recv_q1"])})
    tls = asr.make_tls(str(root))
    service = asr.AuthService(str(root / "service"), users_dir, free_port(), tls=asr.service_tls(tls)).start()
    ports = {"space-a": free_port()}
    gw = None
    try:
        with asr.running_router(prefix, root, ports, service.port, tls):
            table = str(root / "table.json")
            write_table(table, ADDRESSES)
            password_file = str(root / "metrics-password.json")
            write_password(password_file, SCRAPE_PASSWORD)
            cert, key = tls["router"]  # a server certificate of the test CA for 127.0.0.1 / localhost
            port, metrics_port = free_port(), free_port()
            config = {"space": "space-a", "listen_tls": "127.0.0.1:%d" % port, "tls_cert_file": cert,
                      "tls_key_file": key, "routers": ["127.0.0.1:%d" % ports["space-a"]],
                      "router_tls": True, "router_ca_file": tls["ca"], "table_file": table,
                      "metrics_listen": "127.0.0.1:%d" % metrics_port, "metrics_password_file": password_file}
            (root / "gateway.json").write_text(json.dumps(config))
            gw_log = str(root / "gateway.log")
            with open(gw_log, "w") as glog:
                gw = subprocess.Popen([binary, "-config", str(root / "gateway.json")], stdout=glog,
                                      stderr=subprocess.STDOUT)
            asr.wait_listening(port, gw, gw_log, "the MQTT gateway")
            asr.wait_listening(metrics_port, gw, gw_log, "the MQTT gateway's metrics listener")
            yield {"port": port, "ca": tls["ca"], "ports": ports, "gateway": gw, "gateway_log": gw_log,
                   "metrics_port": metrics_port, "password_file": password_file, "root": str(root)}
    finally:
        if gw:
            asr.stop(gw)
        service.stop()


def scrape(env, user=SCRAPE_USER, password=SCRAPE_PASSWORD, scheme="https"):
    """(HTTP status, body) of GET /metrics, verifying the gateway's certificate with the CA."""
    return metrics_scrape(env["metrics_port"], env["ca"], user, password, scheme)


def values(env):
    """{series without the space label: value}; every series must carry space="space-a"."""
    status, text = scrape(env)
    assert status == 200, text
    out = {}
    for line in text.splitlines():
        if line.startswith(P):
            name, value = line.rsplit(" ", 1)
            assert 'space="space-a"' in name, name
            out[name.replace('space="space-a"', "").replace(",}", "}").replace("{}", "")] = float(value)
    return out


def pub(qos, outcome):
    return '%spublishes_received_total{outcome="%s",qos="%d"}' % (P, outcome, qos)


def conn(outcome):
    return '%sconnections_total{outcome="%s"}' % (P, outcome)


def delta(before, after):
    return dict((k, after[k] - before.get(k, 0)) for k in after if after[k] != before.get(k, 0))


def test_accepted_publishes_deliveries_and_clients_are_counted(env):
    before = values(env)
    consumer = Consumer(env, "q1")
    try:
        c = Mqtt(env, "alice", "secret-a")
        assert c.connack == 0
        for i in range(5):
            assert c.puback(c.publish("q1", b"m%d" % i)).value == 0
        c.publish("q1", b"zero", qos=0)
        consumer.wait(6)
        sub = Mqtt(env, "alice", "secret-a", version=3)
        assert sub.subscribe("t/a") == [1]
        assert c.puback(c.publish("t/a", b"to the subscriber")).value == 0
        assert wait_for(lambda: sub.messages), "the subscriber got nothing"
        during = values(env)
        assert during[P + "connected_clients"] == 2
        assert during[P + "router_connections"] == 1  # alice's two clients share one connection to the router
        got = delta(before, during)
        assert got.get(pub(1, "accepted")) == 6  # 5 to q1, 1 to t/a: each counted before its PUBACK
        assert got.get(pub(0, "accepted")) == 1
        assert got.get(conn("accepted")) == 2
        assert got.get('%smessages_delivered_total{qos="1"}' % P) == 1
        assert got.get('%ssubscriptions_total{outcome="accepted"}' % P) == 1
        assert not [k for k in got if "refused" in k or "failed" in k or "bad_credentials" in k], got
    finally:
        consumer.stop()
    c.close()
    sub.close()
    assert wait_for(lambda: values(env)[P + "connected_clients"] == 0), "connected_clients stayed up"
    assert wait_for(lambda: values(env)[P + "router_connections"] == 0), "the last client left, its connection stayed"


def test_refusals_are_counted_by_outcome_without_names(env):
    before = values(env)
    for unused in range(2):
        bad = Mqtt(env, "alice", "wrong-password", client_id="client-id-wrong")
        assert bad.connack.value == 0x86
        bad.c.loop_stop()
    nobody = Mqtt(env, None, None)
    assert nobody.connack.value == 0x87
    nobody.c.loop_stop()
    c = Mqtt(env, "carol", "carol-pw", client_id="client-id-carol")
    assert c.puback(c.publish("q2", b"no send")).value == 0x87       # the router refuses the sender
    assert c.puback(c.publish("not-declared", b"x")).value == 0x87   # not an address of the space
    assert c.puback(c.publish("$SYS/x", b"x")).value == 0x87         # reserved
    c.publish("not-declared", b"x", qos=0)
    assert c.subscribe("not-declared")[0] >= 0x80
    assert c.subscribe("q2")[0] >= 0x80                              # no recv
    assert c.connected
    got = delta(before, values(env))
    assert got.get(conn("bad_credentials")) == 2
    assert got.get(conn("not_authorized")) == 1
    assert got.get(conn("accepted")) == 1
    assert got.get(pub(1, "refused")) == 3, got
    assert got.get(pub(0, "refused")) == 1
    assert got.get('%ssubscriptions_total{outcome="refused"}' % P) == 2
    assert not [k for k in got if "accepted" in k and "connections" not in k], got
    text = scrape(env)[1]
    for name in ("alice", "carol", "client-id-wrong", "client-id-carol", "wrong-password", "not-declared", "q2"):
        assert name not in text, name


def test_a_refused_will_counts_as_not_authorized_and_a_sent_will_is_no_client_publish(env):
    from test_mqtt_wills import will_client
    before = values(env)
    for topic in ("q2", "not-declared"):  # no send permission; not an address of the space
        refused = will_client(env, topic, b"x", user="carol", password="carol-pw")
        assert refused.connack.value == 0x87, refused.connack
        refused.c.loop_stop()
        OPEN.remove(refused)
    consumer = Consumer(env, "q1")
    try:
        m = will_client(env, "q1", b"metrics-will", user="carol", password="carol-pw")
        assert m.connack == 0
        m.c.loop_stop()
        m.c.socket().close()  # no DISCONNECT: the will goes
        OPEN.remove(m)
        assert bytes(consumer.wait()[0].body) == b"metrics-will"
    finally:
        consumer.stop()
    got = delta(before, values(env))
    assert got.get(conn("not_authorized")) == 2, got
    assert got.get(conn("accepted")) == 1, got
    assert not [k for k in got if "publishes_received" in k], got


@pytest.mark.parametrize("user, password", [(None, None), (SCRAPE_USER, "wrong"), ("admin", SCRAPE_PASSWORD),
                                            (SCRAPE_USER, "")])
def test_without_the_right_credentials_the_endpoint_answers_401_and_no_metrics(env, user, password):
    status, text = scrape(env, user, password)
    assert status == 401
    assert P not in text


def test_plain_http_gets_nothing(env):
    try:
        status, text = scrape(env, scheme="http")
    except (urllib.error.URLError, ConnectionError, OSError):
        return
    assert status == 400 and P not in text


def test_sighup_rereads_the_password_file(env):
    new = "rotated-" + os.urandom(6).hex()
    write_password(env["password_file"], new, salt="another-salt")
    env["gateway"].send_signal(signal.SIGHUP)
    try:
        assert wait_for(lambda: scrape(env, password=new)[0] == 200), open(env["gateway_log"]).read()
        assert scrape(env)[0] == 401
        assert env["gateway"].poll() is None
    finally:
        write_password(env["password_file"], SCRAPE_PASSWORD)
        env["gateway"].send_signal(signal.SIGHUP)
        assert wait_for(lambda: scrape(env)[0] == 200)


@pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("prometheus-alertmanager")),
                    reason="prometheus / prometheus-alertmanager missing (Debian packages; scripts/test.sh installs them)")
def test_prometheus_scrapes_the_gateway_with_the_role_job(env, tmp_path):
    """The monitoring role's default job mqtt_gateways (https verified with the CA,
    basic auth from a password file, the port from mqtt_gateway_metrics_ports)."""
    import test_monitoring_alert as tma
    (tmp_path / "password").write_text(SCRAPE_PASSWORD)
    defaults = yaml.safe_load(open(os.path.join(tma.ROLE, "defaults", "main.yml")))
    job = dict(next(j for j in defaults["monitoring_jobs"] if j["name"] == "mqtt_gateways"),
               ca_file=env["ca"], password_file=str(tmp_path / "password"))
    mon = tma._start(tmp_path, [job], {"mqtt_gateways": ["127.0.0.1"]},
                     {"127.0.0.1": {job["ports_var"]: [env["metrics_port"]]}})
    try:
        assert SCRAPE_PASSWORD not in mon["conf"].read_text()

        def gateway_up():
            res = tma._get(mon["prom"] + '/api/v1/query?query=up{job="mqtt_gateways"}')["data"]["result"]
            return res if res and res[0]["value"][1] == "1" else None

        got = tma._wait("up == 1 for the MQTT gateway target", gateway_up)
        assert got[0]["metric"]["instance"] == "127.0.0.1:%d" % env["metrics_port"]

        def accepted():
            q = '/api/v1/query?query=%sconnections_total{job="mqtt_gateways",outcome="accepted"}' % P
            return tma._get(mon["prom"] + q)["data"]["result"] or None

        res = tma._wait("enmasse_mqtt_gateway_connections_total scraped", accepted)
        assert res[0]["metric"]["space"] == "space-a"
    finally:
        tma._stop(mon)


@pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("prometheus-alertmanager")),
                    reason="prometheus / prometheus-alertmanager missing (Debian packages; scripts/test.sh installs them)")
def test_the_gateway_alert_rules_fire_on_what_real_clients_provoke(env, tmp_path):
    """The shipped rules (only `for:` shortened to 3s) read from the real gateways through the
    role's job: wrong passwords fire EnmasseMqttAuthenticationFailures on the gateway that has
    a router; a second gateway of the space whose only router port is closed fires
    EnmasseMqttGatewayNoRouter; stopped, it fires EnmasseMqttGatewayDown naming its space.
    Neither alert fires for the other gateway."""
    import test_monitoring_alert as tma
    binary = gateway_binary()
    config = json.loads(open(os.path.join(env["root"], "gateway.json")).read())
    port2, metrics2 = free_port(), free_port()
    config.update(listen_tls="127.0.0.1:%d" % port2, metrics_listen="127.0.0.1:%d" % metrics2,
                  routers=["127.0.0.1:%d" % free_port()])  # nothing listens there
    (tmp_path / "gateway2.json").write_text(json.dumps(config))
    log2 = str(tmp_path / "gateway2.log")
    with open(log2, "w") as glog:
        gw2 = subprocess.Popen([binary, "-config", str(tmp_path / "gateway2.json")], stdout=glog,
                               stderr=subprocess.STDOUT)
    mon = None
    try:
        asr.wait_listening(port2, gw2, log2, "the second MQTT gateway")
        asr.wait_listening(metrics2, gw2, log2, "the second MQTT gateway's metrics listener")
        (tmp_path / "password").write_text(SCRAPE_PASSWORD)
        defaults = yaml.safe_load(open(os.path.join(tma.ROLE, "defaults", "main.yml")))
        job = dict(next(j for j in defaults["monitoring_jobs"] if j["name"] == "mqtt_gateways"),
                   ca_file=env["ca"], password_file=str(tmp_path / "password"))
        mon = tma._start(tmp_path, [job], {"mqtt_gateways": ["127.0.0.1"]},
                         {"127.0.0.1": {job["ports_var"]: [env["metrics_port"], metrics2]}})
        one, two = "127.0.0.1:%d" % env["metrics_port"], "127.0.0.1:%d" % metrics2

        def both_up():
            res = tma._get(mon["prom"] + '/api/v1/query?query=up{job="mqtt_gateways"}==1')["data"]["result"]
            return res if len(res) == 2 else None

        tma._wait("up == 1 for both gateway instances", both_up)
        for unused in range(12):
            bad = Mqtt(env, "alice", "wrong-password")
            assert bad.connack.value == 0x86
            bad.c.loop_stop()
        for unused in range(3):
            lost = Mqtt(dict(env, port=port2), "alice", "secret-a")
            assert lost.connack.value == 0x88  # server unavailable: no router answers
            lost.c.loop_stop()

        def firing(name):
            def check():
                alerts = tma._get(mon["prom"] + "/api/v1/alerts")["data"]["alerts"]
                got = [a for a in alerts if a["labels"]["alertname"] == name and a["state"] == "firing"]
                return got or None
            return check

        got = tma._wait("EnmasseMqttAuthenticationFailures firing", firing("EnmasseMqttAuthenticationFailures"))
        assert [(a["labels"]["instance"], a["labels"]["space"], a["labels"]["severity"]) for a in got] \
            == [(one, "space-a", "warning")]
        assert "space space-a" in got[0]["annotations"]["summary"]
        got = tma._wait("EnmasseMqttGatewayNoRouter firing", firing("EnmasseMqttGatewayNoRouter"))
        assert [(a["labels"]["instance"], a["labels"]["space"]) for a in got] == [(two, "space-a")]
        asr.stop(gw2)
        got = tma._wait("EnmasseMqttGatewayDown firing", firing("EnmasseMqttGatewayDown"))
        assert [(a["labels"]["instance"], a["labels"].get("space")) for a in got] == [(two, "space-a")]
        assert got[0]["annotations"]["summary"] == "MQTT gateway %s (space space-a) is down" % two
        alerts = tma._get(mon["prom"] + "/api/v1/alerts")["data"]["alerts"]
        assert not [a for a in alerts if a["labels"]["alertname"] == "EnmasseTargetDown"
                    and a["labels"]["job"] == "mqtt_gateways"]
    finally:
        if mon:
            tma._stop(mon)
        if gw2.poll() is None:
            asr.stop(gw2)
