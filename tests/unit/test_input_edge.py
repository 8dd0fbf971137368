"""The input edge: every field of every form, given a value of the wrong
type, is refused with a message naming the field - never an exception other
than the project's ValidationError/ConfigError. Numbers beyond what the
broker stores are refused with the bound; EnMasse documents are checked
before they are converted; an unwritable ledger fails before the broker is
changed."""
import copy
import os

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils import errors
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import apply as artemis_apply
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.diff import Changes
from ansible_collections.enmasse.messaging.plugins.module_utils.ledger import Ledger, LedgerError
from ansible_collections.enmasse.messaging.plugins.module_utils.input_files import address_list
from ansible_collections.enmasse.messaging.plugins.module_utils.model import inputs as model_inputs
from ansible_collections.enmasse.messaging.plugins.module_utils.model import names as model_names
from ansible_collections.enmasse.messaging.plugins.module_utils.model import types as model_types
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as model_validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue

CAT = Catalogue.default()
SPACE = {"name": "demo", "type": "brokered", "plan": "brokered-single-broker"}
HUGE = "x" * 100000
WRONG = [["a"], {"k": "v"}, True, False, 5, 1.5, None, HUGE]
IDS = ["list", "dict", "true", "false", "int", "float", "none", "huge-string"]
V1 = "enmasse.io/v1beta1"


def params(**kw):
    p = dict((k, None) for k in model_inputs.SINGLE_FIELDS + ("definition", "addresses"))
    p["state"] = "present"
    p.update(kw)
    return p


def address_errors(p, space="demo"):
    """What the address module reports, up to (not including) the broker:
    the edge (address_inputs), then the model's rules."""
    present, absent, errs, unused = model_inputs.address_inputs(p, space)
    if errs:
        return errs
    return model_validation.validate_addresses(dict(SPACE, name=space), present, CAT)


def assert_refused(errs, field, value):
    assert errs, "accepted %s=%r" % (field, value)
    assert any(field in e for e in errs), (field, errs)
    assert all(len(e) < 2000 for e in errs), "a message echoes a huge value"


# a good value per field (to make the rest of an address well-formed)
GOOD = {"address": "a", "type": "queue", "plan": "brokered-queue", "topic": None, "deadletter": None,
        "expiry": None, "message_ttl": {"maximum": 1000}, "message_redelivery": {"redelivery_delay": 5},
        "subscription": None}
STRING_FIELDS = ("address", "type", "plan", "topic", "deadletter", "expiry")
REQUIRED = ("address", "type", "plan")
MAPPINGS = ("message_ttl", "message_redelivery", "subscription")
NUMBER_FIELDS = [("message_ttl", "minimum"), ("message_ttl", "maximum"),
                 ("message_redelivery", "maximum_delivery_attempts"), ("message_redelivery", "redelivery_delay"),
                 ("message_redelivery", "redelivery_delay_multiplier"),
                 ("message_redelivery", "maximum_delivery_delay"), ("subscription", "max_consumers")]


def _cases(fields):
    for field in fields:
        for value, vid in zip(WRONG, IDS):
            if value is None and field not in REQUIRED:
                continue  # an optional field left out
            yield pytest.param(field, value, id="%s-%s" % (field, vid))


def _number_cases():
    for key, sub in NUMBER_FIELDS:
        values = [["a"], {"k": 1}, True, "5", HUGE, -2]
        if sub != "redelivery_delay_multiplier":
            values += [1.5, 1e20, 2 ** 63]
        else:
            values += [float("inf"), float("nan"), 0.5]
        if sub in ("maximum_delivery_attempts", "max_consumers"):
            values += [2 ** 31]
        for v in values:
            yield pytest.param(key, sub, v, id="%s.%s-%r" % (key, sub, v if not isinstance(v, str) else v[:5]))


def _single(field, value):
    p = dict(GOOD)
    p[field] = value
    if field == "topic":
        p.update(type="subscription", plan="brokered-subscription", message_ttl=None, message_redelivery=None)
    return params(**dict((k, v) for k, v in p.items() if v is not None or k == field))


@pytest.mark.parametrize("field,value", list(_cases(STRING_FIELDS + MAPPINGS)))
def test_single_form_field_of_wrong_type_is_refused(field, value):
    errs = address_errors(_single(field, value))
    assert_refused(errs, field, value)


@pytest.mark.parametrize("field,value", list(_cases(STRING_FIELDS + MAPPINGS + ("state", "name"))))
def test_bulk_item_field_of_wrong_type_is_refused(field, value):
    item = dict(GOOD, **{field: value})
    errs = address_errors(params(addresses=[item]))
    assert_refused(errs, "addresses[0]", value)
    assert any(field in e for e in errs), errs


@pytest.mark.parametrize("key,sub,value", list(_number_cases()))
def test_numbers_of_wrong_type_or_beyond_the_broker_are_refused(key, sub, value):
    p = _single(key, {sub: value})
    if key == "subscription":
        p.update(type="subscription", plan="brokered-subscription", topic="t", message_ttl=None,
                 message_redelivery=None)
    errs = address_errors(p)
    assert_refused(errs, "%s.%s" % (key, sub), value)


@pytest.mark.parametrize("key,sub,bound", [
    ("message_ttl", "maximum", "9223372036854775807"), ("message_redelivery", "redelivery_delay", "9223372036854775807"),
    ("message_redelivery", "maximum_delivery_attempts", "2147483647"),
    ("subscription", "max_consumers", "2147483647")])
def test_the_message_names_the_bound(key, sub, bound):
    errs = model_types.address_type_errors({key: {sub: 2 ** 64}}, lambda k: k)
    assert errs and bound in errs[0] and "%s.%s" % (key, sub) in errs[0]


def test_largest_values_the_broker_stores_are_accepted():
    a = {"address": "a", "type": "queue", "plan": "brokered-queue",
         "message_ttl": {"minimum": 1, "maximum": 2 ** 63 - 1},
         "message_redelivery": {"maximum_delivery_attempts": 2 ** 31 - 1, "redelivery_delay": 2 ** 63 - 1,
                                "redelivery_delay_multiplier": 1e300, "maximum_delivery_delay": 2 ** 63 - 1}}
    assert model_types.address_type_errors(a, lambda k: k) == []
    assert model_types.redelivery_errors({"maximum_delivery_attempts": -1}, "r") == []


DOC = {"apiVersion": V1, "kind": "Address", "metadata": {"name": "demo.orders"},
       "spec": {"address": "orders", "type": "queue", "plan": "brokered-queue"}}
DOC_PATHS = [("spec", k) for k in ("address", "type", "plan", "topic", "deadletter", "expiry", "messageTtl",
                                   "messageRedelivery", "subscription", "addressSpace")] + [
    ("metadata", "name"), (None, "metadata"), (None, "spec"), (None, "kind"), (None, "apiVersion")]


def _doc_cases():
    for parent, key in DOC_PATHS:
        for value, vid in zip(WRONG, IDS):
            if value is None and parent == "spec" and key not in REQUIRED:
                continue
            if value is None and key == "metadata":
                continue  # metadata left out: the name is then missing, checked below
            yield pytest.param(parent, key, value, id="%s.%s-%s" % (parent, key, vid))


@pytest.mark.parametrize("parent,key,value", list(_doc_cases()))
def test_enmasse_document_field_of_wrong_type_is_refused(parent, key, value):
    doc = copy.deepcopy(DOC)
    (doc[parent] if parent else doc)[key] = value
    for p in (params(definition=doc), params(addresses=[doc])):
        errs = address_errors(p)
        assert_refused(errs, key if parent != "metadata" else "metadata.name", value)


def test_document_checks():
    def errs(**changes):
        doc = copy.deepcopy(DOC)
        for path, v in changes.items():
            cur = doc
            parts = path.split("__")
            for part in parts[:-1]:
                cur = cur.setdefault(part, {})
            cur[parts[-1]] = v
        return " | ".join(address_errors(params(definition=doc)))
    assert errs(kind="Queue") == ("definition.kind: 'Queue' is not accepted here: this module takes an EnMasse "
                                  "Address (enmasse.io/v1beta1)")
    assert "definition.apiVersion: 'enmasse.io/v1alpha1' is not accepted" in errs(apiVersion="enmasse.io/v1alpha1")
    assert "belongs to address space 'other'" in errs(metadata__name="other.orders")
    assert "must be <address space>.<name>" in errs(metadata__name="orders")
    assert "Kubernetes name" in errs(metadata__name="demo.Orders")
    assert "Kubernetes name" in errs(metadata__name="demo.-orders")
    assert "at most 253" in errs(metadata__name="demo." + "a." * 130)
    assert errs(spec__messageTtl={"minimim": 5}) == ("definition.spec.messageTtl.minimim: unknown field "
                                                     "(did you mean 'minimum'?)")
    assert "did you mean 'deadletter'" in errs(spec__deadLetter="dlq")
    assert "definition.spec.forwarders: not supported" in errs(spec__forwarders=[])
    assert "spec.addressSpace: 'other' must be the address space 'demo'" in errs(spec__addressSpace="other")
    # legacy spec.addressSpace equal to the space, status and server-set metadata: accepted
    assert errs(spec__addressSpace="demo", status={"isReady": True}, metadata__uid="u", metadata__labels={"a": "b"},
                metadata__resourceVersion="7", metadata__namespace="ns", metadata__managedFields=[]) == ""
    assert "did you mean 'name'" in errs(metadata__nmae="x")


def test_address_list_as_definition_as_bulk_item_and_as_src():
    other = dict(copy.deepcopy(DOC), metadata={"name": "demo.invoices"})
    other["spec"]["address"] = "invoices"
    lst = {"apiVersion": V1, "kind": "AddressList", "items": [DOC, other]}
    for p in (params(definition=lst), params(addresses=[lst]), params(addresses=address_list(lst, "f.yml"))):
        present, absent, errs, unused = model_inputs.address_inputs(p, "demo")
        assert not errs and [a["address"] for a in present] == ["orders", "invoices"]
    bad = dict(lst, items=[DOC, dict(DOC, kind="Queue")])
    unused1, unused2, errs, unused3 = model_inputs.address_inputs(params(definition=bad), "demo")
    assert errs == ["definition.items[1].kind: 'Queue' is not accepted here: this module takes an EnMasse "
                    "Address (enmasse.io/v1beta1)"]
    unused1, unused2, errs, unused3 = model_inputs.address_inputs(params(definition=dict(lst, items="x")), "demo")
    assert "definition.items: 'x' is a string, it must be a list" in errs[0]


def test_plain_unknown_keys_get_a_suggestion():
    unused1, unused2, errs, unused3 = model_inputs.address_inputs(params(addresses=[dict(GOOD, dedletter="d")]), "demo")
    assert errs == ["addresses[0].dedletter: unknown field (did you mean 'deadletter'?)"]
    errs = address_errors(params(addresses=[dict(GOOD, message_redelivery={"maximum_delivery_attemps": 3})]))
    assert "addresses[0].message_redelivery.maximum_delivery_attemps: unknown field (did you mean " \
           "'maximum_delivery_attempts'?)" in errs


def test_single_form_takes_no_conversion():
    for value in (True, 12345):
        errs = address_errors(params(address=value, type="queue", plan="brokered-queue"))
        assert errs == ["address: %r is %s, it must be a string (quote it in YAML)"
                        % (value, model_types.type_name(value))]


def test_sub_options_ansible_left_unset_are_dropped():
    present, unused, errs, unused2 = model_inputs.address_inputs(
        params(address="a", type="queue", plan="brokered-queue", message_ttl={"minimum": None, "maximum": 5}), "demo")
    assert not errs and present[0]["message_ttl"] == {"maximum": 5}


# ------------------------------------------------------------ address space

SPACE_FIELDS = ("name", "type", "plan")


@pytest.mark.parametrize("field,value", [pytest.param(f, v, id="%s-%s" % (f, i)) for f in SPACE_FIELDS
                                         for v, i in zip(WRONG, IDS) if v is not None or f == "name"])
def test_address_space_field_of_wrong_type_is_refused(field, value):
    p = {"name": "demo", "type": "brokered", "plan": "brokered-single-broker", "authentication_service": None,
         "endpoints": None, "definition": None}
    p[field] = value
    errs = model_inputs.space_params_errors(p)
    if not errs:
        errs = model_validation.validate_address_space(model_inputs.space_input(p, None, {}), CAT, field="x")
    assert_refused(errs, field, value)


@pytest.mark.parametrize("value", [v for v in WRONG if v is not None], ids=[i for i in IDS if i != "none"])
@pytest.mark.parametrize("where", ["authentication_service.name", "authentication_service.type", "endpoints",
                                   "definition", "definition.spec.type", "definition.spec.plan",
                                   "definition.spec.authenticationService", "definition.metadata"])
def test_address_space_nested_field_of_wrong_type_is_refused(where, value):
    p = {"name": "demo", "type": None, "plan": None, "authentication_service": None, "endpoints": None,
         "definition": None}
    doc = {"apiVersion": V1, "kind": "AddressSpace", "metadata": {"name": "demo"},
           "spec": {"type": "brokered", "plan": "brokered-single-broker"}}
    parts = where.split(".")
    if parts[0] == "authentication_service":
        if value == "x" * 100000 and parts[1] == "name":
            pytest.skip("any string names an authentication service")
        p["authentication_service"] = {"name": "none", "type": "none", parts[1]: value}
    elif parts[0] == "endpoints":
        p["endpoints"] = value if isinstance(value, list) and value != ["a"] else [value]
    elif len(parts) == 1:
        p["definition"] = value
    else:
        p["definition"] = doc
        if len(parts) == 3:
            doc[parts[1]][parts[2]] = value
        else:
            doc[parts[1]] = value
    try:
        errs = model_inputs.space_params_errors(p)
        if not errs:
            errs = model_validation.validate_address_space(model_inputs.space_input(p, None, {}), CAT)
    except (errors.ValidationError, errors.ConfigError) as e:
        errs = e.errors
    if where == "definition.metadata" and isinstance(value, dict):
        assert errs and "definition.metadata.k: unknown field" in errs[0]
        return
    if where == "authentication_service.type" and value == HUGE:
        assert any("authentication_service.type" in e for e in errs)
        return
    assert errs, (where, value)
    assert all(len(e) < 2000 for e in errs)


def test_space_definition_kind_and_version():
    p = {"name": "demo", "type": None, "plan": None, "authentication_service": None, "endpoints": None,
         "definition": {"apiVersion": V1, "kind": "Address", "metadata": {"name": "demo"}, "spec": {}}}
    assert model_inputs.space_params_errors(p) == [
        "definition.kind: 'Address' is not accepted here: this module takes an EnMasse AddressSpace "
        "(enmasse.io/v1beta1)"]
    p["definition"] = {"apiVersion": V1, "kind": "AddressSpace", "metadata": {"name": "demo"},
                       "spec": {"type": "brokered", "plna": "x"}}
    assert model_inputs.space_params_errors(p) == ["definition.spec.plna: unknown field (did you mean 'plan'?)"]


# ----------------------------------------------------------------- names

@pytest.mark.parametrize("name", ["demo\n", "tenänt", "Demo", "-demo", "a" * 61, "", "ｄemo"])
def test_space_name_rule_is_ascii_and_has_no_trailing_newline(name):
    assert model_names.space_name_errors(name)
    with pytest.raises(errors.ValidationError):
        model_inputs.check_space_name(name)


def test_a_huge_value_is_named_not_echoed():
    errs = model_names.space_name_errors(HUGE)
    assert errs and all(len(e) < 400 for e in errs) and "100002 characters" in errs[0]


# ----------------------------------------------------------------- ledger

class NoBroker(object):
    """A service that must not be called."""

    def apply(self, requests):
        raise AssertionError("the broker was changed although the ledger cannot be written")


def _changes():
    ch = Changes()
    ch.requests = [(0, "a", {"operation": "createAddress"})]
    ch.record = {"a": {"address": "a"}}
    ch.created = ["a"]
    return ch


def test_ledger_under_a_regular_file_fails_before_the_broker_even_for_root(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LedgerError, match="Not a directory"):
        Ledger.load(str(blocker / "ledger.json"))  # opening the space already fails, cleanly
    ledger = Ledger(str(blocker / "ledger.json"))
    changes = _changes()
    assert changes.changed
    with pytest.raises(LedgerError, match="is not a directory"):
        artemis_apply.commit(NoBroker(), ledger, changes, check_mode=False)
    with pytest.raises(LedgerError, match="is not a directory"):
        artemis_apply.commit(NoBroker(), ledger, changes, check_mode=True)
    with pytest.raises(LedgerError, match=str(blocker)):
        ledger.save()  # an OS error is a LedgerError naming the path, never a traceback


ROOT_SKIP = "runs as root: root ignores file permissions (the regular-file parent test covers root)"


@pytest.mark.skipif(os.geteuid() == 0, reason=ROOT_SKIP)
@pytest.mark.parametrize("what", ["directory", "file"])
def test_read_only_ledger_fails_before_the_broker(tmp_path, what):
    directory = tmp_path / "ledger"
    directory.mkdir()
    path = directory / "ledger.json"
    Ledger(str(path), {"version": 1, "addresses": {}}).save()
    os.chmod(str(path if what == "file" else directory), 0o444 if what == "file" else 0o555)
    try:
        ledger = Ledger.load(str(path))
        with pytest.raises(LedgerError, match="cannot write the ownership ledger %s" % path):
            artemis_apply.commit(NoBroker(), ledger, _changes(), check_mode=False)
    finally:
        os.chmod(str(directory), 0o755)


# ----------------------------------------------------------- argument specs

def _validate(module, **given):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.enmasse.messaging.plugins.module_utils import args
    spec = args.argument_spec(**module.OPTIONS)
    kwargs = dict((k, getattr(module, k.upper())) for k in ("mutually_exclusive", "required_one_of", "required_by")
                  if hasattr(module, k.upper()))
    return ArgumentSpecValidator(spec, **kwargs).validate(dict(given))


@pytest.mark.parametrize("given", [
    dict(address="a", type="queue", plan="brokered-queue"), dict(address="a", state="absent"),
    dict(addresses=[], prune=True), dict(src="/tmp/x.json"), dict(definition={"kind": "Address"}),
    dict(address="a", type="queue", plan="brokered-queue", message_ttl={"maximum": 5}, prune=True),
])
def test_address_forms_that_stay_valid(given):
    from ansible_collections.enmasse.messaging.plugins.modules import address as address_module
    res = _validate(address_module, address_space="demo", **given)
    assert not res.error_messages, res.error_messages


@pytest.mark.parametrize("given,fragment", [
    (dict(address="a", addresses=[]), "mutually exclusive"), (dict(src="x", definition={}), "mutually exclusive"),
    (dict(plan="p", addresses=[]), "mutually exclusive"), (dict(type="queue"), "required by"),
    ({}, "one of the following is required"),
])
def test_address_forms_refused_by_the_argument_spec(given, fragment):
    from ansible_collections.enmasse.messaging.plugins.modules import address as address_module
    res = _validate(address_module, address_space="demo", **given)
    assert any(fragment in m for m in res.error_messages), res.error_messages


def test_raw_options_are_not_converted():
    from ansible_collections.enmasse.messaging.plugins.modules import address as address_module
    res = _validate(address_module, address_space=True, address=12345, message_ttl={"maximum": "5"})
    assert not res.error_messages
    assert res.validated_parameters["address"] == 12345 and res.validated_parameters["address_space"] is True
    assert res.validated_parameters["message_ttl"] == {"maximum": "5"}


SINGLE_MAPPING_VALUES = [5000, 3, 2, "5000", [1], True, 1.5, {"minimim": 1}, {"maximum_delivery_attemps": 3},
                         {"max_consumer": 2}]


@pytest.mark.parametrize("field", MAPPINGS)
@pytest.mark.parametrize("value", SINGLE_MAPPING_VALUES, ids=repr)
def test_single_form_mapping_gets_the_bulk_forms_message(field, value):
    """``message_ttl: 5000`` (or any value that is not the mapping, or an
    unknown key) in the single form: through the module's argument spec
    (which crashed with "argument of type 'int' is not iterable") and the
    model, the same message as the bulk form's, without its position."""
    from ansible_collections.enmasse.messaging.plugins.modules import address as address_module
    fields = dict(address="a", type="queue", plan="brokered-queue")
    if field == "subscription":
        fields.update(type="subscription", plan="brokered-subscription", topic="t")
    res = _validate(address_module, address_space="demo", **dict(fields, **{field: value}))
    assert not res.error_messages, res.error_messages
    unused1, unused2, single, unused3 = model_inputs.address_inputs(res.validated_parameters, "demo")
    unused1, unused2, bulk, unused3 = model_inputs.address_inputs(
        params(addresses=[dict(fields, **{field: value})]), "demo")
    assert single and single == [e.replace("addresses[0].", "", 1) for e in bulk], (single, bulk)
    assert all(e.startswith(field) for e in single), single


# ------------------------------------------------ message_ttl: queue and topic

TTL_SPACES = [("brokered", "brokered-single-broker", "brokered-"), ("standard", "standard-small", "standard-small-")]


@pytest.mark.parametrize("stype,splan,prefix", TTL_SPACES, ids=["brokered", "standard"])
def test_message_ttl_is_for_queues_and_topics_only(stype, splan, prefix):
    """EnMasse: a TTL restriction "applies to address types queue and topic
    only": a deadletter (or subscription) with message_ttl is refused, in the
    single and the bulk form, in brokered and standard spaces alike."""
    space = {"name": "demo", "type": stype, "plan": splan}
    dl_plan = "brokered-deadletter" if stype == "brokered" else "standard-deadletter"
    ttl = {"maximum": 60000}
    topic = {"address": "t", "type": "topic", "plan": prefix + "topic"}
    rule = "message_ttl: {'maximum': 60000} is only allowed on queue, topic addresses"
    for form in ("single", "bulk"):
        dlq = {"address": "dlq", "type": "deadletter", "plan": dl_plan, "message_ttl": ttl}
        sub = {"address": "s", "type": "subscription", "plan": prefix + "subscription", "topic": "t",
               "message_ttl": ttl}
        for bad in (dlq, sub):
            p = params(**bad) if form == "single" else params(addresses=[bad])
            present, unused, errs, positions = model_inputs.address_inputs(p, "demo")
            assert not errs, errs
            errs = model_validation.validate_addresses(space, present + [topic], CAT, positions=positions + ["t"])
            assert any(rule in e for e in errs), (form, bad["type"], errs)
    good = [dict(topic, message_ttl=ttl), {"address": "q", "type": "queue", "plan": prefix + "queue",
                                           "message_ttl": ttl}]
    assert model_validation.validate_addresses(space, good, CAT) == []
