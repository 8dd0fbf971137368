"""What tests/integration/test_mqtt_retained.py builds its environment
with: the spaces' names and addresses, the modules' arguments, the service
realm's users file as the auth_service role writes it, a gateway instance
configured from the space's ``mqtt_service`` status as the mqtt_gateway
role does, and the retained queue's state on a broker (JMX)."""
import json
import os
import subprocess

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
from helpers import run_module

from ansible_collections.enmasse.messaging.plugins.filter.auth_service import auth_service_mqtt_users_file
from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

SPACE, OTHER = "space-a", "space-b"
RETAINED = "$mqtt/space-a/retained"
ADDRESSES = {"q1": "queue", "t/a": "topic", "t/b": "topic", "t/c": "topic", "t/d": "topic", "t/e": "topic",
             "t/f": "topic", "t/g": "topic"}
PLANS = {"queue": "standard-small-queue", "topic": "standard-small-topic"}


def common(std, space):
    return std.module_args(catalogue_path=std.catalogue_path, connection_file=std.connection_file(space))


def make_space(std, space, check_mode=False):
    return run_module("address_space", dict(common(std, space), name=space, type="standard",
                                            plan="standard-unlimited"), check_mode=check_mode, diff=True)


def write_users(std, realm, users):
    """users: {name: (password, groups)} in the auth service's users directory (few PBKDF2 iterations)."""
    doc = backends.users_file_document(realm, dict(
        (name, {"password": backends.hash_password(pw, iterations=1000), "groups": groups})
        for name, (pw, groups) in users.items()))
    with open(os.path.join(std.auth_service.users_dir, realm + ".json"), "w") as f:
        json.dump(doc, f)


def write_service_realm(std, space):
    """The service realm's users file as the auth_service role writes it
    (tasks/mqtt.yml: filter auth_service_mqtt_users_file); its password."""
    password = "svc-" + os.urandom(8).hex()
    doc = auth_service_mqtt_users_file(space, password, iterations=1000)
    with open(os.path.join(std.auth_service.users_dir, space + ".mqtt.json"), "w") as f:
        json.dump(doc, f)
    return password


def space_ports(std, space):
    with open(std.connection_file(space)) as f:
        return [e["port"] for e in json.load(f)["endpoints"] if e["name"].startswith("amqp")]


class Gateway(object):
    def __init__(self, binary, root, name, config):
        self.binary, self.name, self.port = binary, name, asr.free_port()
        self.config = dict(config, listen_tls="127.0.0.1:%d" % self.port)
        self.path = os.path.join(root, name + ".json")
        with open(self.path, "w") as f:
            json.dump(self.config, f)
        os.chmod(self.path, 0o640)
        self.log = os.path.join(root, name + ".log")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([self.binary, "-config", self.path], stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT)
        asr.wait_listening(self.port, self.proc, self.log, self.name)
        return self

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)


def gateway_config(std, root, status, router, password):
    """A gateway instance's configuration as the mqtt_gateway role writes it
    for a space with the service (``router``: the index of its own router, first)."""
    svc = status["mqtt_service"]
    ports = space_ports(std, SPACE)
    order = [router] + [i for i in range(len(ports)) if i != router]
    password_file = os.path.join(root, "service-password")
    with open(password_file, "w") as f:
        f.write(password)
    os.chmod(password_file, 0o640)
    table = os.path.join(root, "table.json")
    tmg.write_table(table, ADDRESSES)
    cert, key = std.ca.issue("gateway")
    return {"space": SPACE, "tls_cert_file": cert, "tls_key_file": key,
            "routers": ["127.0.0.1:%d" % ports[i] for i in order], "router_tls": True,
            "router_ca_file": std.ca.cert_file, "table_file": table, "log_level": "debug",
            "service_routers": ["127.0.0.1:%d" % svc["endpoints"][i]["port"] for i in order],
            "service_user": svc["user"], "service_password_file": password_file, "retained_address": svc["queue"]}


def queue_state(env, broker, queue=RETAINED):
    """The queue's settings (its configuration as Artemis' updateQueue with
    the name alone returns it) and the count of topic values on ``broker``
    (an ArtemisBroker), None when absent."""
    from helpers import broker_mbean
    j = broker.jolokia()
    if queue not in (j.read(broker_mbean(broker.name), "QueueNames") or []):
        return None
    config = json.loads(broker_op(broker, "updateQueue(java.lang.String)", json.dumps({"name": queue})))
    # the gateways' own records ($instance/<id> heartbeats, $session/<client id>) share the queue:
    # count the topics' values only
    count = j.execute('org.apache.activemq.artemis:broker="%s",component=addresses,address="%s",subcomponent=queues,'
                      'routing-type="%s",queue="%s"' % (broker.name, queue, config["routing-type"].lower(), queue),
                      "countMessages(java.lang.String)", "mqtt_topic NOT LIKE '$%'")
    return {"routing-type": config["routing-type"], "durable": config["durable"],
            "last-value-key": config.get("last-value-key"), "non-destructive": config["non-destructive"],
            "count": count}


def broker_op(broker, op, *args):
    from helpers import broker_mbean
    return broker.jolokia().execute(broker_mbean(broker.name), op, *args)
