"""Router settings for the data-plane benchmark's tuning runs.

``workerThreads`` (the router entity) is static: StandardEnv's
``router_settings`` puts it in each router's configuration file before the
start. ``linkCapacity`` (the deliveries in flight per link of a connection:
the credit a router gives a client's sending link, or a broker queue's
autoLink towards the router) belongs to the listener and the connectors the
modules create at run time, from the infrastructure file's ``link_capacity``
(the standard role's ``standard_link_capacity``): ``set_link_capacity``
writes the file and runs the modules again, which re-create the space's
listener and the broker connectors on every router, then waits until the
routers' autoLinks are active again.
"""

import time

QDR = "org.apache.qpid.dispatch."


def set_link_capacity(env, capacity, converge):
    """``capacity``: the link_capacity of the infrastructure file of ``env``
    (a StandardEnv; 0 or None: the router's default); ``converge``: runs the
    space's modules (returns whether they changed something). A second
    converge must change nothing (the read-back value matches)."""
    env.link_capacity = capacity or None
    env.write_infra()
    converge()
    if converge():
        raise RuntimeError("link capacity %s: the second run of the modules changed something again" % capacity)
    with env.session() as s:
        wait_autolinks(s, [r.id for r in env.routers])
        got = s.query(QDR + "connector", ["name", "linkCapacity"])
    return got


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
