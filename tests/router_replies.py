"""Recorded AMQP management replies of a qdrouterd and a fake management
node that answers QUERY from them with paging: shared by the unit tests of the
router sampler and the AMQP-level test of the management client."""


ADDR_NAMES = ["key", "identity", "name", "distribution", "subscriberCount", "remoteCount", "containerCount",
              "deliveriesIngress", "deliveriesEgress", "deliveriesIngressRouteContainer",
              "deliveriesEgressRouteContainer"]
ROUTER_REPLIES = {
    "org.apache.qpid.dispatch.router": (
        ["id", "mode", "memoryUsage", "uptimeSeconds", "connectionCount", "linkCount", "addrCount"],
        [["router-0", "interior", 73400320, 3600, 4, 9, 12]]),
    "org.apache.qpid.dispatch.router.address": (ADDR_NAMES, [
        ["L$management", "L$management", "L$management", "closest", 1, 0, 0, 20, 20, 0, 0],
        ["M0$management", "M0$management", "M0$management", "closest", 0, 0, 0, 0, 0, 0, 0],
        ["Rrouter-0", "Rrouter-0", "Rrouter-0", "closest", 1, 0, 0, 0, 0, 0, 0],
        # anycast in tenant-a: 500 in from clients, 480 out to clients
        ["M0tenant-a/orders", "M0tenant-a/orders", "M0tenant-a/orders", "balanced", 2, 0, 0, 500, 480, 0, 0],
        # waypoint queue: phase 0 to the broker, phase 1 from the broker
        ["M0tenant-a/jobs", "M0tenant-a/jobs", "M0tenant-a/jobs", "balanced", 1, 0, 1, 100, 100, 0, 100],
        ["M1tenant-a/jobs", "M1tenant-a/jobs", "M1tenant-a/jobs", "balanced", 3, 0, 0, 90, 90, 90, 0],
        ["M0tenant-b/news", "M0tenant-b/news", "M0tenant-b/news", "multicast", 5, 1, 0, 7, 35, 0, 0],
        # a tenant nobody asked about, and an address without a tenant
        ["M0tenant-z/x", "M0tenant-z/x", "M0tenant-z/x", "balanced", 0, 0, 0, 1, 1, 0, 0],
        ["M0plain", "M0plain", "M0plain", "balanced", 0, 0, 0, 4, 4, 0, 0],
        ["Ctenant-a/events", "Ctenant-a/events", "Ctenant-a/events", "linkBalanced", 0, 0, 1, 0, 0, 0, 0],
    ]),
    "org.apache.qpid.dispatch.router.link": (
        ["linkType", "linkDir", "owningAddr", "undeliveredCount", "unsettledCount", "deliveryCount"], [
            ["router-control", "in", None, 0, 0, 10],
            ["endpoint", "in", "M0tenant-a/orders", 0, 2, 500],
            ["endpoint", "out", "M0tenant-a/orders", 3, 1, 240],
            ["endpoint", "out", "M0tenant-a/orders", 0, 0, 240],
            ["endpoint", "in", "M0tenant-a/jobs", 0, 0, 100],
            ["endpoint", "out", "M1tenant-a/jobs", 0, 0, 90],
            ["endpoint", "out", "M0tenant-b/news", 0, 0, 35],
            ["endpoint", "out", "Ltemp.abc", 0, 0, 1],
            ["inter-router", "out", None, 0, 0, 0],
        ]),
    "org.apache.qpid.dispatch.connection": (
        ["role", "dir", "tenant", "container"], [
            ["normal", "in", "tenant-a", "c1"], ["normal", "in", "tenant-a", "c2"],
            ["route-container", "out", None, "broker-0"], ["inter-router", "in", None, "router-1"]]),
}


def fake_call(replies, log=None):
    """A management node answering QUERY from ``replies`` with paging."""
    def call(props, body):
        if log is not None:
            log.append((dict(props), body))
        entry = replies.get(props.get("entityType"))
        if entry is None:
            return {"statusCode": 404, "statusDescription": "Not Found: unknown type"}, None
        names, rows = entry
        want = body.get("attributeNames") or names
        off, cnt = props.get("offset") or 0, props.get("count")
        page = rows[off:off + cnt] if cnt is not None else rows[off:]
        res = [[dict(zip(names, r)).get(n) for n in want] for r in page]
        return {"statusCode": 200, "statusDescription": "OK", "count": len(res)}, \
            {"attributeNames": want, "results": res}
    return call
