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


# ------------------------------------------------------------ a capacity plan's move (mover.rehome)

class FakePool(object):
    """The StandardService surface rehome reads: the pool and each broker's live queues."""

    def __init__(self, live, draining=()):
        self.brokers = {"b1": {}, "b2": {}, "b3": {}}
        self.broker_names = ["b1", "b2", "b3"]
        self.draining_brokers = list(draining)
        self.live = live

    def read_brokers(self, space):
        return self.live


@pytest.fixture
def infra(tmp_path):
    led = SpaceLedger(str(tmp_path / "sp.json"), {"addresses": dict((a["address"], a) for a in ADDRS),
                                                  "homes": {"q": {"brokers": ["b1", "b2"], "draining": [], "placed": True},
                                                            "t": {"brokers": ["b1"], "placed": True}}})
    led.save()
    return {"ledger_dir": str(tmp_path), "path": str(tmp_path / "standard.json")}


def _homes(infra):
    return SpaceLedger.load(infra["ledger_dir"] + "/sp.json").homes


def test_rehome_first_makes_the_new_home_and_the_old_broker_draining(infra):
    pool = FakePool({"b1": {"sp/q": {"message_count": 7}}})
    out = mover.rehome(pool, infra, "b1", "sp", "q", 0, "b3", check_mode=True)
    assert out == {"changed": True, "rehomed": True, "messages": 7, "moves": [
        {"address_space": "sp", "address": "q", "type": "queue", "source": "sp/q", "target": "sp/q", "from": "b1",
         "to": "b3", "count": 7, "partition": 0}]}
    assert _homes(infra)["q"]["brokers"] == ["b1", "b2"]  # check mode writes nothing
    out = mover.rehome(pool, infra, "b1", "sp", "q", 0, "b3")
    assert out["rehomed"] is True and out["moves"] == []
    assert _homes(infra)["q"] == {"brokers": ["b3", "b2"], "draining": ["b1"], "placed": True}
    # re-homed, nothing left on b1: nothing to move (a converge releases the old queue)
    out = mover.rehome(FakePool({"b1": {}}), infra, "b1", "sp", "q", 0, "b3")
    assert out == {"changed": False, "rehomed": False, "moves": [], "messages": 0}


@pytest.mark.parametrize("args, words", [
    (("b1", "sp", "q", 0, "b2"), "to 'b2' already holds partition 1: two partitions of one address never share"),
    (("b2", "sp", "q", 0, "b3"), "partition 0 lives on 'b1' (the ledger), neither on 'b2' nor re-homed to 'b3'"),
    (("b1", "sp", "q", 0, "b9"), "broker 'b1', to 'b9': both must be brokers of the standard pool (b1, b2, b3)"),
    (("b1", "sp", "q", 0, "b1"), "to: 'b1' must be another broker than 'b1' and active"),
    (("b1", "sp", "t", 0, "b3"), "type 'topic': only a queue's partition is re-homed"),
    (("b1", "sp", "nope", 0, "b3"), "'nope': has no home in the ledger"),
], ids=["two-partitions-one-broker", "not-where-planned", "unknown-broker", "same-broker", "topic", "unknown-address"])
def test_rehome_refuses_naming_the_field_the_value_and_the_rule(infra, args, words):
    with pytest.raises(ServiceError) as e:
        mover.rehome(FakePool({}), infra, *args)
    assert words in str(e.value)
    assert _homes(infra)["q"]["brokers"] == ["b1", "b2"]


def test_rehome_to_a_draining_broker_is_refused(infra):
    with pytest.raises(ServiceError, match="must be another broker than 'b1' and active, not draining"):
        mover.rehome(FakePool({}, draining=["b3"]), infra, "b1", "sp", "q", 0, "b3")


# ------------------------------------------------------------ mover.move: copies in flight, originals in order

class FakeMessage(object):
    def __init__(self, mid):
        self.id = mid
        self.properties = None


class FakeReceiver(object):
    """The BlockingReceiver surface move uses: receive, then accept/release the oldest taken (FIFO)."""

    def __init__(self, ids):
        self.queue = [FakeMessage(i) for i in ids]
        self.taken = []
        self.settled = []  # (id, outcome) in the order settled

    def receive(self, timeout=None):
        from proton import Timeout
        if not self.queue:
            raise Timeout("no message")
        m = self.queue.pop(0)
        self.taken.append(m.id)
        return m

    def _settle(self, outcome):
        self.settled.append((self.taken[len(self.settled)], outcome))

    def accept(self):
        self._settle("accepted")

    def release(self, delivered=True):
        self._settle("released")

    def close(self):
        pass


class FakeDelivery(object):
    def __init__(self, msg):
        self.msg = msg
        self.settled = False
        self.remote_state = 0

    def settle(self):
        pass


class FakeTarget(object):
    """A target connection: a sender whose copies get their outcome when the mover waits
    (``refuse``: the ids it rejects; ``silent``: answers nothing, the wait times out)."""

    def __init__(self, refuse=(), silent=False):
        self.refuse, self.silent = set(refuse), silent
        self.inflight = []
        self.stored = []
        self.most_in_flight = 0
        target = self

        class Link(object):
            def send(self, msg):
                d = FakeDelivery(msg)
                target.inflight.append(d)
                target.most_in_flight = max(target.most_in_flight, len(target.inflight))
                return d

        class Sender(object):
            link = Link()

            def close(self):
                pass
        self.sender = Sender()

    def create_sender(self, address):
        return self.sender

    def wait(self, condition, timeout=None, msg=None):
        from proton import Delivery, Timeout
        if self.silent:
            raise Timeout(msg)
        for d in self.inflight:  # the journal write: every copy in flight at once
            d.remote_state = Delivery.REJECTED if d.msg.id in self.refuse else Delivery.ACCEPTED
            d.settled = True
            if d.msg.id not in self.refuse:
                self.stored.append(d.msg.properties[mover.DUP_PROPERTY])
        self.inflight = []
        assert condition()


class FakeSource(object):
    def __init__(self, ids):
        self.receiver = FakeReceiver(ids)

    def create_receiver(self, address, credit=None):
        return self.receiver


STEP = {"source": "sp/q", "target": "sp/q", "from": "b1", "to": "b2"}


def test_move_keeps_up_to_credit_copies_in_flight_and_accepts_each_original_after_its_copy():
    pytest.importorskip("proton")
    src, dst = FakeSource(range(250)), FakeTarget()
    assert mover.move(STEP, src, dst, credit=100, idle=0) == 250
    assert dst.most_in_flight == 100  # not one round trip per message
    assert src.receiver.settled == [(i, "accepted") for i in range(250)]
    assert dst.stored == ["enmasse-move/b1/sp/q/%d" % i for i in range(250)]


def test_move_stops_at_the_limit_and_leaves_the_rest_on_the_source():
    pytest.importorskip("proton")
    src, dst = FakeSource(range(10)), FakeTarget()
    assert mover.move(STEP, src, dst, credit=3, idle=0, limit=4) == 4
    assert src.receiver.taken == [0, 1, 2, 3] and len(src.receiver.queue) == 6


def test_a_refused_copy_keeps_its_original_and_the_originals_after_it_by_their_own_outcome():
    pytest.importorskip("proton")
    src, dst = FakeSource(range(10)), FakeTarget(refuse={5})
    with pytest.raises(ServiceError) as e:
        mover.move(STEP, src, dst, credit=4, idle=0)
    assert "the new home did not accept a message (rejected); 7 moved, the rest stays on 'b1'" in str(e.value)
    # 0-3: one batch, accepted; 4-7 the next: 4 accepted, 5 refused (released), 6 and 7 copied (accepted)
    assert src.receiver.settled == ([(i, "accepted") for i in range(5)]
                                    + [(5, "released"), (6, "accepted"), (7, "accepted")])


def test_no_outcome_from_the_new_home_releases_every_original_in_flight():
    pytest.importorskip("proton")
    src, dst = FakeSource(range(5)), FakeTarget(silent=True)
    with pytest.raises(ServiceError) as e:
        mover.move(STEP, src, dst, credit=3, idle=0)
    assert "0 moved, the rest stays on 'b1'" in str(e.value)
    assert src.receiver.settled == [(0, "released"), (1, "released"), (2, "released")]
