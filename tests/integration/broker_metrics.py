"""A real Artemis with the broker role's Prometheus JMX exporter agent, for
test_broker_metrics.py and test_monitoring_alert.py: ansible-playbook runs
the role's own tasks (tasks_from layout, then metrics: the agent jar from
the offline path, the PKCS#12 key store made by community.crypto, the
generated scrape password, the agent configuration) and renders the role's
artemis.profile, whose -javaagent flag the throw-away instance then gets.
The agent jar: ENMASSE_JMX_EXPORTER_JAR, else the Maven cache
(scripts/test.sh fetches it)."""
import os
import re
import ssl
import urllib.request

import yaml

import helpers
import tls_pki

DEFAULTS = yaml.safe_load(open(os.path.join(helpers.ROLE_DIR, "defaults", "main.yml")))
AGENT_VERSION = DEFAULTS["broker_metrics_agent_version"]


def agent_jar():
    return os.environ.get("ENMASSE_JMX_EXPORTER_JAR") or os.path.join(
        os.path.expanduser("~"), ".m2", "repository", "io", "prometheus", "jmx", "jmx_prometheus_javaagent",
        AGENT_VERSION, "jmx_prometheus_javaagent-%s.jar" % AGENT_VERSION)


def missing():
    """A reason to skip, or None."""
    reason = helpers.missing_prerequisites()
    if reason:
        return reason
    if not os.path.isfile(agent_jar()):
        return ("jmx_prometheus_javaagent %s not found at %s (scripts/test.sh fetches it with mvn dependency:get)"
                % (AGENT_VERSION, agent_jar()))
    return None


def start(base):
    """Start the broker with the role's agent; returns a dict with the broker,
    the metrics URL, the CA file, the user and the generated password (and its file)."""
    broker = helpers.ArtemisBroker(base, name="metrics-test")
    port = helpers.free_port()
    creds, tls = os.path.join(base, "credentials"), os.path.join(base, "tls")
    pki = tls_pki.broker_tls_dir(tls)
    broker.create()
    profile = os.path.join(base, "artemis.profile.rendered")
    extra = {"broker_address_spaces": [{"name": "instance", "plan": helpers.DEFAULT_PLAN,
                                        "broker_name": broker.name, "port_offset": 0}],
             "broker_ports": broker.ports, "broker_bind_address": "127.0.0.1", "broker_instances_dir": base,
             "broker_credentials_dir": creds, "broker_tls_dir": tls, "broker_download_dir": base,
             "broker_group": "root", "broker_metrics_enabled": True, "broker_metrics_port": port,
             "broker_metrics_agent_src": agent_jar(),
             # the handler must not try systemd: the test starts the instance itself
             "__broker_restart_spaces": []}
    tasks = [
        {"name": "layout", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.broker", "tasks_from": "layout", "public": True}},
        {"name": "metrics", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.broker", "tasks_from": "metrics", "public": True}},
        {"name": "profile", "ansible.builtin.template": {
            "src": os.path.join(helpers.ROLE_DIR, "templates", "artemis.profile.j2"), "dest": profile},
         "vars": {"__space": "{{ __broker_spaces[0] }}", "__broker_home": helpers.artemis_home()}},
        {"name": "ports", "ansible.builtin.debug": {"var": "broker_metrics_ports"}},
    ]
    res = helpers.run_playbook(tasks, extra_vars=extra, timeout=300)
    assert res.rc == 0, "the broker role's metrics tasks failed: %r" % res
    flag = re.search(r" (-javaagent:\S+)\"", open(profile).read()).group(1)
    assert flag.endswith("=127.0.0.1:%d:%s/instance/etc/jmx-exporter.yml" % (port, base)), flag
    with open(os.path.join(broker.instance, "etc", "artemis.profile"), "a") as f:
        f.write('\n# the broker role\'s metrics agent (tests/integration/broker_metrics.py)\n'
                'JAVA_ARGS="$JAVA_ARGS %s"\n' % flag)
    broker.start()
    password_file = os.path.join(creds, "broker-metrics")
    return {"broker": broker, "url": "https://127.0.0.1:%d/metrics" % port, "port": port, "ca": pki["ca"],
            "user": DEFAULTS["broker_metrics_username"], "password": open(password_file).read().split()[0],
            "password_file": password_file, "config": os.path.join(broker.instance, "etc", "jmx-exporter.yml"),
            "ports": res.task("ports")["broker_metrics_ports"]}


def scrape(url, ca, user=None, password=None):
    """GET ``url`` verified with ``ca``; basic auth when ``user`` is given."""
    handlers = [urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca))]
    if user is not None:
        mgr = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        mgr.add_password(None, url, user, password)
        handlers.append(urllib.request.HTTPBasicAuthHandler(mgr))
    with urllib.request.build_opener(*handlers).open(url, timeout=10) as r:
        return r.read().decode()
