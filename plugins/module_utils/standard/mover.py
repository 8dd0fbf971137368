# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving the stored messages off a pool broker that leaves the pool (scale
in, docs/standard-spaces.md "A broker leaving the pool"): what the routers
cannot pull because nobody consumes it.

For every standard space of the infrastructure, every stored address homed
(or draining) on the leaving broker with messages is copied to its new home
over AMQP, broker to broker, as the pool's router user (the credentials and
TLS the routers use): a message is accepted on the leaving broker only after
the new home *accepted* its copy, so a crash between the two leaves the
message where it was (at least once, never lost). A message that carries a
``message-id`` is sent with Artemis' duplicate-detection property
``_AMQ_DUPL_ID`` = ``enmasse-move/<broker>/<queue>/<message-id>``, so the
copy sent again after such a crash is dropped by the new home.

Queues (and their partitions) go to the address's first home; a
subscription's queue ``S/N`` of topic ``S/T`` goes to the fully qualified
queue ``S/T::S/N`` on the topic's new home; dead letters ``S/<deadletter>``
to the dead-letter queue of the first active broker. Needs
python-qpid-proton, imported only when something moves. No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent

DUP_PREFIX = "enmasse-move"
DUP_PROPERTY = "_AMQ_DUPL_ID"


def plan_moves(space, ledger, broker, active, live):
    """What to move off ``broker`` for one space: a list of {address, type,
    source, target, to, count} (``source``: the queue on the leaving broker,
    ``target``: the address (or FQQN) to send to on broker ``to``).
    ``active``: the brokers that stay, in pool order; ``live``: the leaving
    broker's {internal name: {message_count, ...}} for this space."""
    out = []
    for name in sorted(ledger.addresses):
        a = ledger.addresses[name]
        queue = _ent.internal(space, name)
        count = int((live.get(queue) or {}).get("message_count") or 0)
        if count <= 0 or a["type"] == "topic":  # a topic's messages are in its subscriptions' queues
            continue
        home = [b for b in (ledger.homes.get(name) or {}).get("brokers") or [] if b != broker and b in active]
        if a["type"] == "deadletter":
            home = list(active[:1])
        if not home:
            raise ServiceError("address space %r: %r (%s) holds %d message(s) on %r and has no home on an active "
                               "broker yet: converge the space first (enmasse.messaging.address), then move"
                               % (space, name, a["type"], count, broker))
        fqqn = queue
        if a["type"] == "subscription":  # a queue of the topic's (multicast) address
            fqqn = "%s::%s" % (_ent.internal(space, a["topic"]), queue)
        out.append({"address_space": space, "address": name, "type": a["type"], "source": fqqn,
                    "target": fqqn, "from": broker, "to": home[0], "count": count})
    return out


def connect(broker, timeout):
    """A proton BlockingConnection to ``broker`` (an infrastructure entry) as
    the pool's router user, TLS when the routers use it."""
    try:
        from proton import SSLDomain
        from proton.utils import BlockingConnection
    except ImportError as e:
        raise ClientError("moving messages needs python-qpid-proton (python3-qpid-proton): %s" % e)
    with open(broker["password_file"]) as f:
        password = f.read().strip()
    kw = {}
    scheme = "amqp"
    if broker.get("ssl_profile"):
        scheme = "amqps"
        domain = SSLDomain(SSLDomain.MODE_CLIENT)
        ca = broker.get("amqp_ca") or broker.get("management_ca")
        if ca:
            domain.set_trusted_ca_db(ca)
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        kw["ssl_domain"] = domain
    url = "%s://%s:%d" % (scheme, broker["host"], int(broker["amqp_port"]))
    try:
        return BlockingConnection(url, user=broker["user"], password=password, allowed_mechs="PLAIN",
                                  timeout=timeout, **kw)
    except Exception as e:  # proton raises several types; the URL carries no secret
        raise ClientError("cannot connect to broker %r at %s as %r: %s" % (broker["name"], url, broker["user"], e))


def _outcome(delivery):
    """The target's outcome of a copy is known (it settled or said how)."""
    return bool(delivery.settled or delivery.remote_state)


def move(step, source, target, timeout=30, idle=2.0, credit=100, dedup=True, limit=None):
    """Move the messages of ``step`` from the open connection ``source`` to
    ``target`` until none arrives for ``idle`` seconds, or ``limit`` moved
    (the count read before: what arrives later stays for the next call);
    returns the count. Each is accepted on the source only once the target
    accepted the copy (from a non-destructive queue accepting removes
    nothing: a copy). Up to ``credit`` copies are in flight at once (the
    target stores them in one journal write instead of one each); the
    originals are accepted in the order they came, each after its own copy.
    ``dedup`` False: no duplicate-detection id (a last-value queue's copy
    made again replaces the first; an id remembered by the target from an
    earlier move would drop a value moved back later)."""
    from collections import deque
    from proton import Delivery, Timeout
    where = (step["source"], step["from"], step["to"], step["target"])
    moved = 0
    try:
        rcv = source.create_receiver(step["source"], credit=credit)
        snd = target.create_sender(step["target"])
    except Exception as e:  # proton's LinkDetached, ConnectionException...
        raise ServiceError("moving %s from %r to %r (%s): %s" % (where + (e,)))
    pending = deque()  # the copies in flight, in the order their originals came
    receiving = True
    try:
        while receiving or pending:
            # take what the source has (wait up to ``idle`` only when no copy is in flight)
            while receiving and len(pending) < credit:
                if limit is not None and moved + len(pending) >= limit:
                    receiving = False
                    break
                # not 0 with copies in flight: proton's wait gives up after one pass of its loop, which
                # may read the socket without dispatching the message yet (one message per round trip again)
                try:
                    msg = rcv.receive(timeout=0.01 if pending else idle)
                except Timeout:
                    receiving = bool(pending)
                    break
                if not dedup:
                    msg.properties = dict(msg.properties or {})
                    msg.properties.pop(DUP_PROPERTY, None)
                elif msg.id is not None:
                    msg.properties = dict(msg.properties or {})
                    msg.properties[DUP_PROPERTY] = "%s/%s/%s/%s" % (DUP_PREFIX, step["from"], step["source"], msg.id)
                pending.append(snd.link.send(msg))
            if not pending:
                continue
            try:
                target.wait(lambda: _outcome(pending[0]), timeout=timeout,
                            msg="the new home's outcome of a moved message")
            except Exception as e:  # a Timeout, the connection lost: the originals not copied stay
                moved += _give_back(rcv, pending)
                raise ServiceError("moving %s from %r to %r (%s): the new home did not accept a message (%s); "
                                   "%d moved, the rest stays on %r" % (where + (e, moved, step["from"])))
            while pending and _outcome(pending[0]):
                copy = pending.popleft()
                copy.settle()
                if copy.remote_state != Delivery.ACCEPTED:  # the copy was not taken: the original stays
                    rcv.release(delivered=False)
                    moved += _give_back(rcv, pending)
                    outcome = {Delivery.REJECTED: "rejected", Delivery.RELEASED: "released",
                               Delivery.MODIFIED: "modified"}.get(copy.remote_state, copy.remote_state)
                    raise ServiceError("moving %s from %r to %r (%s): the new home did not accept a message (%s); "
                                       "%d moved, the rest stays on %r" % (where + (outcome, moved, step["from"])))
                rcv.accept()
                moved += 1
    finally:
        for link in (rcv, snd):
            try:
                link.close()
            except Exception:  # pylint: disable=broad-except
                pass
    return moved


def _give_back(rcv, pending):
    """After a failure: the originals of the copies in flight, in order,
    accepted where the target accepted the copy, else released (a copy
    still on its way is dropped by the target as a duplicate next time).
    Returns how many were accepted (moved)."""
    from proton import Delivery
    accepted = 0
    while pending:
        copy = pending.popleft()
        try:
            if copy.remote_state == Delivery.ACCEPTED:
                copy.settle()
                rcv.accept()
                accepted += 1
            else:
                rcv.release(delivered=False)
        except Exception:  # pylint: disable=broad-except  # the link is gone: the broker gives them back
            break
    return accepted


def _close(*connections):
    for c in connections:
        try:
            if c is not None:
                c.close()
        except Exception:  # pylint: disable=broad-except
            pass


def copy_queue(service, broker, queue, to, to_queue, timeout=30, idle=2.0):
    """Copy every message of the last-value queue ``queue`` on ``broker``
    to ``to_queue`` on ``to`` (the same broker or another) as ``move`` does,
    without duplicate-detection ids; returns the count. The MQTT retained
    values of a standard space (mqtt_service.broker_queue_requests)."""
    step = {"source": queue, "target": to_queue, "from": broker, "to": to}
    source, target = connect(service.brokers[broker], timeout), None
    try:
        target = connect(service.brokers[to], timeout)
        return move(step, source, target, timeout=timeout, idle=idle, dedup=False)
    finally:
        _close(source, target)


def drain(service, infra, broker, check_mode=False, timeout=30, idle=2.0, load_ledger=None, spaces=None):
    """Move every message of every standard space off ``broker`` (draining).
    Returns {changed, moves: [step + moved], messages}. In check mode only
    the steps (what would move, from the live counts)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
    if broker not in service.brokers:
        raise ServiceError("broker: %r is not a broker of the standard pool (%s): the pool's brokers are %s"
                           % (broker, infra["path"], ", ".join(service.broker_names)))
    if broker not in service.draining_brokers:
        raise ServiceError("broker: %r is active: set standard_pool_state: draining on its host and run site.yml "
                           "(its addresses get new homes) before moving its messages" % broker)
    active = [b for b in service.broker_names if b not in service.draining_brokers]
    load_ledger = load_ledger or (lambda name: _infra.load_ledger(infra, name))
    steps = []
    for space in sorted(spaces if spaces is not None else _infra.space_names(infra)):
        live = service.read_brokers(space).get(broker) or {}
        steps.extend(plan_moves(space, load_ledger(space), broker, active, live))
    if check_mode or not steps:
        return {"changed": bool(steps), "moves": steps, "messages": sum(s["count"] for s in steps)}
    source = connect(service.brokers[broker], timeout)
    targets = {}
    try:
        for step in steps:
            if step["to"] not in targets:
                targets[step["to"]] = connect(service.brokers[step["to"]], timeout)
            step["moved"] = move(step, source, targets[step["to"]], timeout=timeout, idle=idle, limit=step["count"])
    finally:
        _close(source, *targets.values())
    return {"changed": any(s.get("moved") for s in steps), "moves": steps,
            "messages": sum(s.get("moved", 0) for s in steps)}


def _rehome_errors(service, broker, space, address, partition, to):
    if broker not in service.brokers or to not in service.brokers:
        return "broker %r, to %r: both must be brokers of the standard pool (%s)" % (
            broker, to, ", ".join(service.broker_names))
    if to in service.draining_brokers or to == broker:
        return "to: %r must be another broker than %r and active, not draining" % (to, broker)
    if not isinstance(partition, int) or partition < 0:
        return "partition: %r must be an integer >= 0" % (partition,)
    return ""


def rehome(service, infra, broker, space, address, partition, to, check_mode=False, timeout=30, idle=2.0):
    """One partition of a queue moves from ``broker`` to ``to`` (a capacity
    plan's move, playbooks/apply_plan.yml), in two calls around a converge:

    1. the partition still lives on ``broker`` (the ledger): its home becomes
       ``to`` and ``broker`` is *draining* for it, as a scale in does for a
       whole broker (``rehomed`` true). The caller converges the space: the
       queue is created on ``to``, the routers send there and pull from
       ``broker`` only what consumers take;
    2. re-homed: what is left on ``broker`` moves to ``to`` as ``drain``
       moves it (``moves``, until a call finds nothing), then a converge
       releases the old queue.

    Returns {changed, rehomed, moves, messages}; in check mode what would
    happen, from the live counts."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
    why = _rehome_errors(service, broker, space, address, partition, to)
    if why:
        raise ServiceError("address space %r, address %r: %s" % (space, address, why))
    ledger = _infra.load_ledger(infra, space)
    home = dict(ledger.homes.get(address) or {})
    kind = (ledger.addresses.get(address) or {}).get("type")
    if not home.get("placed") or kind != "queue":
        raise ServiceError("address space %r, address %r: %s" % (space, address, (
            "type %r: only a queue's partition is re-homed (topics and subscriptions move with their broker: "
            "scale_in.yml)" % kind) if home.get("placed") else "has no home in the ledger %s" % ledger.path))
    brokers, draining = list(home.get("brokers") or []), list(home.get("draining") or [])
    queue = _ent.internal(space, address)
    count = int(((service.read_brokers(space).get(broker) or {}).get(queue) or {}).get("message_count") or 0)
    step = {"address_space": space, "address": address, "type": kind, "source": queue, "target": queue,
            "from": broker, "to": to, "count": count, "partition": partition}
    if partition < len(brokers) and brokers[partition] == broker:
        if to in brokers:
            raise ServiceError("address space %r, address %r: to %r already holds partition %d: two partitions of "
                               "one address never share a broker" % (space, address, to, brokers.index(to)))
        if not check_mode:
            brokers[partition] = to
            home.update(brokers=brokers, draining=sorted(set(draining + [broker])))
            ledger.homes[address] = home
            ledger.save()
        return {"changed": True, "rehomed": True, "moves": [step] if check_mode else [], "messages": count}
    if partition >= len(brokers) or brokers[partition] != to:
        raise ServiceError("address space %r, address %r: partition %d lives on %r (the ledger), neither on %r nor "
                           "re-homed to %r: the plan is older than the pool" % (
                               space, address, partition, brokers[partition] if partition < len(brokers) else None,
                               broker, to))
    if count <= 0 or check_mode:
        return {"changed": count > 0, "rehomed": False, "moves": [step] if count > 0 else [], "messages": count}
    source, target = connect(service.brokers[broker], timeout), None
    try:
        target = connect(service.brokers[to], timeout)
        step["moved"] = move(step, source, target, timeout=timeout, idle=idle, limit=count)
    finally:
        _close(source, target)
    return {"changed": step["moved"] > 0, "rehomed": False, "moves": [step], "messages": step["moved"]}
