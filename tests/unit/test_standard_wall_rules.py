"""The rules behind the walls of a standard space (issue 19, items 3 and 5),
without routers or brokers: the names a space's clients may reach (its vhost
policy) and the address names that policy can list."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent

ADDRESSES = [{"address": "a", "type": "anycast"}, {"address": "m", "type": "multicast"},
             {"address": "q", "type": "queue"}, {"address": "t", "type": "topic"},
             {"address": "n", "type": "subscription", "topic": "t"}, {"address": "dlq", "type": "deadletter"}]


def test_clients_reach_only_the_declared_names():
    sources, targets = ent.terminus_names("s", ADDRESSES, routers=["r1", "r2"])
    # a subscription is received from as T::N, never sent to
    assert sources == ["a", "dlq", "m", "q", "t", "t::n"]
    # anonymous-relay messages are checked with the tenant prefix; replies go to router temp addresses;
    # a will for X ($will/X) exactly where X may be sent to
    # (only the amqp:/ form of a router's temporary addresses: the bare prefix admitted
    # _topo/0/<r>/temp.x:/_local/$management, routed by what follows ':/')
    assert targets == ["$will/a", "$will/dlq", "$will/m", "$will/q", "$will/t", "a", "amqp:/_topo/0/r1/temp.*",
                       "amqp:/_topo/0/r2/temp.*", "dlq", "m", "q", "s/a", "s/dlq", "s/m", "s/q", "s/t", "t"]
    assert not [n for n in sources + targets if n == "*" or n.startswith("_")]


def test_the_vhost_lists_them_and_nothing_when_nothing_is_placed():
    vhost = ent.space_entities("s", 5701, {"host": "auth", "port": 5680}, addresses=ADDRESSES[:1],
                               routers=["r1"])["enmasse/s/vhost"]
    group = vhost["groups"]["$default"]
    assert group["sources"] == "a"
    assert group["targets"] == "$will/a,a,amqp:/_topo/0/r1/temp.*,s/a"
    # no connection-scoped link routes (no tenant prefix), no closing of other connections
    assert group["allowDynamicLinkRoutes"] is False and group["allowAdminStatusUpdate"] is False
    empty = ent.space_entities("s", 5701, {"host": "auth", "port": 5680}, anonymous=True)["enmasse/s/vhost"]
    assert empty["groups"]["$default"]["sources"] == "" and empty["groups"]["$default"]["targets"] == ""


@pytest.mark.parametrize("name, words", [
    ("a,b", ["','", "separates names"]),
    ("orders*", ["'*'", "wildcard"]),
    ("inbox-${user}", ["'${user}'", "user name"]),
    ("$will", ["'$will/'", "AMQP will"]),
    ("$will/orders", ["'$will/'", "AMQP will"]),
    ("$will.orders", ["'$will.'", "AMQP will"]),
    ("_topo/0/r1/$management", ["'_'", "no tenant prefix"]),
    ("_local/x", ["'_'", "no tenant prefix"]),
    ("*x", ["'*'"]),
    ("a:/_local/$management", ["':/'"]),
    ("/_local/x", ["start with '/'"]),
])
def test_names_the_policy_cannot_list_are_refused_in_standard_spaces_only(name, words):
    cat = Catalogue.default()
    addr = [{"address": name, "type": "anycast", "plan": "standard-small-anycast"}]
    errs = validation.validate_addresses({"name": "s", "type": "standard", "plan": "standard-unlimited"}, addr, cat)
    assert len(errs) == 1 and all(w in errs[0] for w in words + ["addresses[0]", "standard address space"]), errs
    brokered = [{"address": name, "type": "queue", "plan": "brokered-queue"}]
    assert validation.validate_addresses({"name": "b", "type": "brokered", "plan": "brokered-single-broker"},
                                         brokered, cat) == []


def test_the_routers_broker_role_creates_and_deletes_no_durable_queue():
    """Item 3: a client's durable subscription through a link route is named
    by Artemis after the router and the client's container id and link name,
    never after its space; the routers' role (broker_router_role) therefore
    must not create or delete durable queues (nor addresses). Read from the
    role's template (the security-setting for every address)."""
    import os
    import re
    path = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "broker", "templates", "broker.xml.j2")
    with open(path) as f:
        text = f.read()
    # the settings for '#' (in brokered instances a loop also renders them for the broker's own names)
    block = re.search(r'<security-setting match="(?:#|\{\{ match \}\})">(.*?)</security-setting>', text,
                      re.S).group(1)
    perms = dict(re.findall(r'<permission type="(\w+)" roles="([^"]*)"/>', block))
    for kind in ("send", "consume"):
        assert "router" in perms[kind], (kind, perms[kind])
    for kind in ("createDurableQueue", "deleteDurableQueue", "createAddress", "deleteAddress", "manage"):
        assert "router" not in perms.get(kind, ""), (kind, perms[kind])


def test_the_reserved_will_prefix_is_the_routers_one():
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import names
    assert names.RESERVED_WILL == ent.WILL_PREFIX
    assert names.router_policy_name_errors("$willow") == []
