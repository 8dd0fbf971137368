"""Which addresses are on one pool broker (module_utils/standard/homes.py
``addresses_on``) and its filter ``enmasse.messaging.addresses_on``, as
playbooks/tasks/scale_in_drain.yml reads them."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter import standard as fs
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.homes import addresses_on

pytestmark = pytest.mark.unit


def _addr(name, brokers=(), **status):
    st = {"ready": True, "phase": "Active", "messages": [], "brokers": list(brokers), "routers": ["r1"]}
    st.update(status)
    return {"address": name, "type": "queue", "status": st}


def _result(space, *addresses):
    return {"item": {"name": space, "addresses": []}, "changed": False, "addresses": list(addresses)}


RESULTS = [
    _result("s1",
            _addr("work", ["b2"], message_counts={"b2": 7}),
            _addr("idle", ["b1"], message_counts={"b1": 3}),
            _addr("news", ["b2"], message_counts={"b2": 0})),
    _result("s2",
            _addr("orders", ["b2"], message_counts={"b2": 1})),
]


def test_homes_are_the_addresses_whose_brokers_name_it_in_their_order():
    assert addresses_on(RESULTS, "b2") == ["s1/work", "s1/news", "s2/orders"]
    assert addresses_on(RESULTS, "b1") == ["s1/idle"]
    assert addresses_on(RESULTS, "b3") == []


def test_count_is_the_messages_on_that_broker_and_0_where_it_has_none():
    assert addresses_on(RESULTS, "b2", show="count") == ["s1/work (7)", "s1/news (0)", "s2/orders (1)"]
    router_only = _result("s3", _addr("anycast", ["b2"]))  # no message_counts: not stored
    assert addresses_on([router_only], "b2", show="count") == ["s3/anycast (0)"]
    other = _result("s3", _addr("q", ["b2"], message_counts={"b1": 5}))
    assert addresses_on([other], "b2", show="count") == ["s3/q (0)"]


def test_a_partitioned_queue_is_on_each_of_its_brokers_with_that_partitions_count():
    part = [_result("s1", _addr("big", ["b1", "b2", "b3"], message_counts={"b1": 4, "b2": 5, "b3": 6}))]
    assert addresses_on(part, "b1", show="count") == ["s1/big (4)"]
    assert addresses_on(part, "b2", show="count") == ["s1/big (5)"]
    assert addresses_on(part, "b3") == ["s1/big"]
    assert addresses_on(part, "b4") == []


def test_an_address_with_no_new_home_is_the_one_still_homed_there_and_shows_why():
    stuck = _addr("q", ["b2"], ready=False, phase="Configuring",
                  messages=["router 'r1' lacks s1/autolink/b2/out/q", "broker 'b2' lacks s1/q"])
    pending = _addr("p", [], ready=False, phase="Pending", messages=["quota exceeded"])
    moved = _addr("m", ["b1"], draining=["b2"], messages=["draining from b2 (...)"])
    res = [_result("s1", stuck, pending, moved)]
    assert addresses_on(res, "b2", show="messages") == [
        "s1/q (router 'r1' lacks s1/autolink/b2/out/q, broker 'b2' lacks s1/q)"]
    assert addresses_on([_result("s1", _addr("ok", ["b2"]))], "b2", show="messages") == ["s1/ok ()"]


def test_draining_reads_status_draining_not_the_homes():
    res = [_result("s1", _addr("m", ["b1"], draining=["b2", "b3"]), _addr("n", ["b2"]), _addr("o", ["b1"])),
           _result("s2", _addr("d", ["b1"], draining=["b2"]))]
    assert addresses_on(res, "b2", kind="draining") == ["s1/m", "s2/d"]
    assert addresses_on(res, "b3", kind="draining") == ["s1/m"]
    assert addresses_on(res, "b1", kind="draining") == []


def test_empty_inputs_give_nothing():
    assert addresses_on([], "b2") == []
    skipped = {"item": {"name": "s1"}, "skipped": True, "changed": False}
    assert addresses_on([skipped, _result("s2")], "b2", kind="draining", show="count") == []
    deleted = _result("s1", {"address": "gone", "status": {"phase": "Deleted", "messages": [], "brokers": None}})
    assert addresses_on([deleted], "b2") == []  # null or missing brokers/draining: on no broker


@pytest.mark.parametrize("results,kw,words", [
    ({"item": {"name": "s1"}}, {}, "results: {'item': {'name': 's1'}} must be a list of task results"),
    (["s1"], {}, "results[0].item.name: None must be the address space's name"),
    ([{"item": "s1", "addresses": []}], {}, "results[0].item.name: None must be"),
    ([_result("s1"), {"item": {"name": ""}}], {}, "results[1].item.name: '' must be"),
    ([{"item": {"name": "s1"}, "addresses": {"q": {}}}], {}, "results[0](s1).addresses: {'q': {}} must be a list"),
    ([_result("s1", "q")], {}, "results[0](s1).addresses[0].address: 'q' must be an address name"),
    ([_result("s1", {"status": {}})], {}, "results[0](s1).addresses[0].address: None must be an address name"),
    ([_result("s1", _addr("a"), {"address": "q"})], {}, "results[0](s1).addresses[1].status: None must be a mapping"),
    ([_result("s1", {"address": "q", "status": {"brokers": "b2"}})], {},
     "results[0](s1).addresses[0].status.brokers: 'b2' must be a list of strings"),
    ([_result("s1", _addr("q", draining="b2"))], {"kind": "draining"},
     "results[0](s1).addresses[0].status.draining: 'b2' must be a list of strings"),
    ([_result("s1", _addr("q", ["b2"], message_counts=[7]))], {"show": "count"},
     "results[0](s1).addresses[0].status.message_counts: [7] must be a mapping"),
    ([_result("s1", _addr("q", ["b2"], messages="down"))], {"show": "messages"},
     "results[0](s1).addresses[0].status.messages: 'down' must be a list of strings"),
    ([], {"kind": "brokers"}, "kind: 'brokers' must be one of draining, homes"),
    ([], {"show": "all"}, "show: 'all' must be count, messages or null"),
    ([], {"broker": ""}, "broker: '' must be a broker name"),
    ([], {"broker": None}, "broker: None must be a broker name"),
])
def test_bad_input_names_the_field(results, kw, words):
    broker = kw.pop("broker", "b2")
    with pytest.raises(ValueError) as e:
        addresses_on(results, broker, **kw)
    assert words in str(e.value)
    with pytest.raises(AnsibleFilterError) as e:
        fs.addresses_on(results, broker, **kw)
    assert str(e.value).startswith("addresses_on: ") and words in str(e.value)


def test_filter_module_exports_addresses_on():
    assert fs.FilterModule().filters() == {"addresses_on": fs.addresses_on}
    assert fs.addresses_on(RESULTS, "b2", kind="homes", show="count") == addresses_on(RESULTS, "b2", show="count")
