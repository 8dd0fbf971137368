"""The login path of the identity benchmarks (latency.py, connrate.py): a
real Keycloak 26.4.7 (common.keycloak), a space realm made by the collection's
ensure_realm with ``--password-policy``, ``n`` messaging users made by the
messaging_user module (bulk form), the auth service as the role installs it
(``backend: keycloak``; the integration tests' AuthService: the entry point
and job_bundle files on the system python3 -I), and one qdrouterd 1.19 from
the cached build with the standard design's listeners
(tests/integration/test_auth_service_router.py router_config: vhost policy,
the space's multiTenant listener delegating SASL PLAIN to the auth service)
plus an anonymous listener (``authenticatePeer: false``, ANONYMOUS, the
``$default`` vhost) for the comparison.
"""

import contextlib
import json
import os
import subprocess
import sys

import common  # noqa: F401  (puts tests/integration on the path)
import helpers
import routers
import test_auth_service_router as plain

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import client as kc_client
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm

SPACE = "bench-auth"
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "connclient.py")


def make_users(server, n, password_policy):
    client = kc_client.KeycloakClient(server.url, server.admin_user, server.admin_password)
    realm.ensure_realm(client, SPACE, password_policy=password_policy)
    users = [("user-%04d" % i, "pw-%04d-%s" % (i, os.urandom(6).hex())) for i in range(n)]
    res = helpers.run_module("messaging_user", dict(
        keycloak_url=server.url, keycloak_admin_user=server.admin_user, keycloak_admin_password=server.admin_password,
        address_space=SPACE, users=[{"username": u, "password": p,
                                     "authorization": [{"addresses": ["*"], "operations": ["send", "recv"]}]}
                                    for u, p in users]), timeout=1800)
    if res.rc != 0:
        raise SystemExit("messaging_user failed: %s" % json.dumps(res.result)[:2000])
    return users


@contextlib.contextmanager
def login_path(root, n_users, password_policy, cache_ttl=600):
    """Yields ``{"keycloak", "users", "service", "router", "space_url",
    "anonymous_url", "pids": {keycloak, auth, router}}``."""
    prefix = plain.build_router()
    server = common.keycloak(os.path.join(root, "keycloak"))
    service = router = log = None
    try:
        users = make_users(server, n_users, password_policy)
        users_dir = os.path.join(root, "users")   # unused by the keycloak backend
        os.makedirs(users_dir)
        service = plain.AuthService(os.path.join(root, "service"), users_dir, helpers.free_port(), extra={
            "backend": "keycloak", "keycloak_url": server.url, "keycloak_timeout": 10, "cache_ttl": cache_ttl,
            "log_level": "WARNING"}).start()
        mgmt, space_port, anon_port = helpers.free_port(), helpers.free_port(), helpers.free_port()
        conf = json.loads(plain.router_config(mgmt, {SPACE: space_port}, service.port))
        conf = [e for e in conf if e[0] != "log"] + [
            plain.entity("log", module="DEFAULT", enable="warning+"),
            plain.entity("listener", name="anonymous", host="127.0.0.1", port=anon_port, role="normal",
                         authenticatePeer=False, saslMechanisms="ANONYMOUS")]
        path = os.path.join(root, "qdrouterd.json")
        with open(path, "w") as handle:
            json.dump(conf, handle)
        log_path = os.path.join(root, "qdrouterd.log")
        log = open(log_path, "w")
        router = subprocess.Popen([os.path.join(prefix, "sbin", "qdrouterd"), "-c", path], stdout=log,
                                  stderr=subprocess.STDOUT, env=dict(os.environ, **routers.prefix_env(prefix)))
        for port in (mgmt, space_port, anon_port):
            plain.wait_listening(port, router, log_path, "qdrouterd")
        yield {"keycloak": server, "users": users, "service": service, "router": router,
               "space_url": "amqp://127.0.0.1:%d" % space_port, "anonymous_url": "amqp://127.0.0.1:%d" % anon_port,
               "pids": {"keycloak": common.java_pid(server), "auth service": service.proc.pid, "qdrouterd": router.pid}}
    finally:
        if router is not None:
            plain.stop(router)
        if log is not None:
            log.close()
        if service is not None:
            service.stop()
        server.stop()


def users_file(root, name, users):
    path = os.path.join(root, name)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump([list(u) for u in users], handle)
    return path


def start_clients(url, seconds, inflight, user_files=None, count=1, mech="PLAIN", once=False, times=False):
    """``count`` connclient.py processes (user_files[i] each, or ANONYMOUS)."""
    procs = []
    for i in range(count):
        cmd = [sys.executable, CLIENT, url, "--seconds", str(seconds), "--inflight", str(inflight), "--mech", mech]
        if user_files:
            cmd += ["--users", user_files[i]]
        if once:
            cmd.append("--once")
        if times:
            cmd.append("--times")
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def results(procs):
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0 or not stdout.strip():
            raise SystemExit("client failed (%s): %s" % (proc.returncode, stderr[-2000:]))
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out
