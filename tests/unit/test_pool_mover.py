"""What pool_drain moves off a leaving broker (standard/mover.plan_moves), without a broker."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mover
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.infra import SpaceLedger

pytestmark = pytest.mark.unit


def ledger(addresses, homes):
    return SpaceLedger("/nonexistent", {"addresses": dict((a["address"], a) for a in addresses), "homes": homes})


ADDRS = [{"address": "q", "type": "queue"}, {"address": "t", "type": "topic"},
         {"address": "s", "type": "subscription", "topic": "t"}, {"address": "dl", "type": "deadletter"},
         {"address": "empty", "type": "queue"}]
HOMES = {"q": {"brokers": ["b3"], "draining": ["b1"]}, "t": {"brokers": ["b2"], "draining": ["b1"]},
         "s": {"brokers": ["b2"], "draining": ["b1"]}, "dl": {"brokers": ["b2", "b3"]},
         "empty": {"brokers": ["b2"], "draining": ["b1"]}}
LIVE = {"sp/q": {"message_count": 4}, "sp/t": {"message_count": 2}, "sp/s": {"message_count": 2},
        "sp/dl": {"message_count": 1}, "sp/empty": {"message_count": 0}}


def test_each_type_goes_to_its_new_home():
    steps = mover.plan_moves("sp", ledger(ADDRS, HOMES), "b1", ["b2", "b3"], LIVE)
    assert [(s["address"], s["source"], s["target"], s["to"], s["count"]) for s in steps] == [
        ("dl", "sp/dl", "sp/dl", "b2", 1),           # dead letters: the first active broker
        ("q", "sp/q", "sp/q", "b3", 4),              # a queue: its new home
        ("s", "sp/t::sp/s", "sp/t::sp/s", "b2", 2),  # a subscription: the queue of the topic's address
    ]                                                # the topic itself holds nothing of its own; empty: nothing


def test_a_queue_without_a_new_home_is_refused_with_what_to_do():
    with pytest.raises(ServiceError) as e:
        mover.plan_moves("sp", ledger(ADDRS[:1], {"q": {"brokers": ["b1"]}}), "b1", ["b2"], LIVE)
    assert "'q' (queue) holds 4 message(s) on 'b1' and has no home on an active broker yet: converge" in str(e.value)
