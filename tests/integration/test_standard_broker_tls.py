"""Router -> broker TLS of the standard spaces, with real components: a real
qdrouterd 1.19 router (with the static sslProfile ``brokers`` trusting the
CA, as the router role renders it) and a real Artemis pool broker whose
broker.xml is the role's template with its TLS acceptors (keyStoreType=PEMCFG).
The address_space/address modules create the connector from the
infrastructure file (``ssl_profile: brokers``): queue traffic through the
router is stored on the broker over TLS, the connector verifies the broker's
host name, and the broker refuses a plain AMQP client."""
import tempfile

import pytest

from helpers import run_module
from standard_env import StandardEnv, build_router, drain

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Message, ProtonException, SSLDomain  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

ANON = {"name": "none", "type": "none"}
SPACE = "tls-a"
ADDRESSES = [{"address": "q1", "type": "queue", "plan": "standard-small-queue"}]


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-std-tls-"), prefix, routers=1, brokers=1, tls=False,
                    broker_tls=True).start()
    common = e.module_args(catalogue_path=e.catalogue_path, connection_file=e.connection_file(SPACE))
    res = run_module("address_space", dict(common, name=SPACE, type="standard", plan="standard-unlimited",
                                           authentication_service=ANON))
    assert res.rc == 0, res.result
    res = run_module("address", dict(common, address_space=SPACE, addresses=ADDRESSES, prune=True))
    assert res.rc == 0, res.result
    e.common = common
    yield e
    e.cleanup()


def _listener_port(env):
    import json
    with open(env.connection_file(SPACE)) as f:
        return json.load(f)["endpoints"][0]["port"]


def test_queue_traffic_through_the_router_is_stored_on_the_broker_over_tls(env):
    info = run_module("address_info", dict(env.common, address_space=SPACE))
    assert [a["status"]["phase"] for a in info.result["addresses"]] == ["Active"], info.result
    conn = BlockingConnection("127.0.0.1:%d" % _listener_port(env), timeout=15)
    snd = conn.create_sender("q1")
    for i in range(3):
        snd.send(Message(body="tls-%d" % i, durable=True))
    got = drain(conn, "q1", 3)
    conn.close()
    assert sorted(got) == ["tls-0", "tls-1", "tls-2"]


def test_the_connector_is_tls_and_verifies_the_broker_host_name(env):
    with env.session() as s:
        connectors = [c for c in s.query("org.apache.qpid.dispatch.connector",
                                         ["name", "sslProfile", "verifyHostname", "host"])
                      if c["name"].startswith("enmasse/broker/")]
        conns = [c for c in s.query("org.apache.qpid.dispatch.connection",
                                    ["role", "isEncrypted", "opened", "host"])
                 if c.get("role") == "route-container"]
    assert [(c["sslProfile"], c["verifyHostname"]) for c in connectors] == [("brokers", True)], connectors
    assert conns and all(c["isEncrypted"] and c["opened"] for c in conns), conns


def test_the_pool_broker_refuses_a_plain_client_and_serves_tls_to_the_ca(env):
    b = env.brokers[0]
    login = dict(user=b.router_user, password=b.router_password, allowed_mechs="PLAIN", allow_insecure_mechs=True,
                 timeout=8)
    with pytest.raises(ProtonException):  # a Timeout too: the TLS port never answers an AMQP header
        BlockingConnection("amqp://127.0.0.1:%d" % b.amqp_port, **login).close()
    dom = SSLDomain(SSLDomain.MODE_CLIENT)
    dom.set_trusted_ca_db(env.tls_files["ca"])
    dom.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    BlockingConnection("amqps://127.0.0.1:%d" % b.amqp_port, ssl_domain=dom, **login).close()
