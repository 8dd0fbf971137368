"""Router settings for the data-plane benchmark's tuning runs.

``workerThreads`` (the router entity) is static: StandardEnv's
``router_settings`` puts it in each router's configuration file before the
start. ``linkCapacity`` (the deliveries in flight per link on a connection)
belongs to the listener and the connector the modules create at run time:
``set_link_capacity`` re-creates, on every router, the space's listener and
the connectors to the brokers with the value (the same attributes as the
modules' otherwise, plugins/module_utils/standard/entities.py), then waits
until the routers' autoLinks are active again.
"""

import time

QDR = "org.apache.qpid.dispatch."


def _recreate(session, router, kind, name, attrs):
    session.delete(QDR + kind, name, router=router)
    attrs = dict((k, v) for k, v in attrs.items() if k != "type")
    session.create(QDR + kind, name, attrs, router=router)


def set_link_capacity(env, space, capacity):
    """``capacity``: the linkCapacity of the space's listener and of the
    broker connectors, on every router of ``env`` (a StandardEnv)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent
    import json
    with open(env.infra_file) as f:
        infra = json.load(f)
    listener = ent.space_prefix(space) + "amqp"
    with env.session() as s:
        for r in env.routers:
            port = s.read(QDR + "listener", listener, router=r.id)["port"]
            attrs = ent.space_entities(space, port, infra["auth_service"], bind_host=infra["bind_host"],
                                       anonymous=True)[listener]
            _recreate(s, r.id, "listener", listener, dict(attrs, linkCapacity=capacity))
            for name, attrs in ent.connector_entities(infra["brokers"]).items():
                _recreate(s, r.id, "connector", name, dict(attrs, linkCapacity=capacity))
        wait_autolinks(s, [r.id for r in env.routers])


def wait_autolinks(session, routers, timeout=60):
    deadline = time.time() + timeout
    states = None
    while time.time() < deadline:
        answers = session.query_many([(r, QDR + "router.config.autoLink", ["name", "operStatus"])
                                      for r in routers])
        states = [row for rows, failed in answers for row in (rows or [])]
        if states and all(row.get("operStatus") == "active" for row in states):
            return
        time.sleep(0.5)
    raise RuntimeError("the autoLinks did not become active again: %s" % (states,))
