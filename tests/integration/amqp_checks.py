"""End-to-end AMQP 1.0 checks for a brokered address space.

Standalone: needs only Python 3 and python-qpid-proton. The Molecule verify
step copies this file onto the broker host and runs it; the integration tests
import its functions. One line per check, exit status 0 only if all pass::

    amqp_checks.py --url amqp://app:secret@127.0.0.1:5672 --phase all

Phases: ``all`` runs every check; ``before-restart`` runs every check and then
leaves durable messages on the subscription; ``after-restart`` (after the
broker was restarted) checks that those messages survived.

Defaults match the demo space: queue ``orders``, topic ``events`` with the
durable subscription ``events-audit``, deadletter ``dlq``, queue ``retry``
(3 delivery attempts, deadletter dlq) and queue ``short-lived`` (message TTL
at most 2000 ms, expiry dlq).
"""

import argparse
import contextlib
import sys
import time
import uuid
from urllib.parse import unquote, urlsplit

from proton import Delivery, Message, ProtonException, SSLDomain, Timeout
from proton.utils import BlockingConnection

DEFAULTS = {
    "url": "amqp://127.0.0.1:5672",
    "user": None,
    "password": None,
    "queue": "orders",
    "topic": "events",
    "subscription": "events-audit",
    "deadletter": "dlq",
    "retry_queue": "retry",
    "max_delivery_attempts": 3,
    "ttl_queue": "short-lived",
    "expiry": "dlq",
    "max_ttl": 2000,
    "timeout": 10.0,
    "idle": 0.5,
    # amqps: the CA the broker's certificate (and host name) is verified against
    "ca": None,
}
RESTART_BATCH = "enmasse_restart_batch"


class CheckFailed(Exception):
    """A check did not hold; the message says what a user would notice."""


def config(**overrides):
    cfg = dict(DEFAULTS)
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise TypeError("unknown check settings: %s" % ", ".join(sorted(unknown)))
    cfg.update(overrides)
    return argparse.Namespace(**cfg)


# ---------------------------------------------------------------- connections

def parse_url(url, user=None, password=None):
    """(scheme, host, port, user, password); URL credentials are percent-decoded."""
    u = urlsplit(url if "://" in url else "amqp://" + url)
    scheme = u.scheme or "amqp"
    port = u.port or (5671 if scheme == "amqps" else 5672)
    if user is None:
        user = unquote(u.username) if u.username else None
    if password is None:
        password = unquote(u.password) if u.password is not None else None
    return scheme, u.hostname or "127.0.0.1", port, user, password


def connect(url, user=None, password=None, anonymous=False, timeout=10.0, ca=None):
    """A BlockingConnection: SASL PLAIN with the URL's (or given) credentials,
    or SASL ANONYMOUS when ``anonymous`` or no user is known. ``amqps`` with
    ``ca``: the server's certificate and host name verified against it."""
    scheme, host, port, user, password = parse_url(url, user, password)
    kw = {"timeout": timeout}
    if scheme == "amqps":
        kw["ssl_domain"] = SSLDomain(SSLDomain.MODE_CLIENT)
        if ca:
            kw["ssl_domain"].set_trusted_ca_db(ca)
            kw["ssl_domain"].set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    if anonymous or not user:
        kw["allowed_mechs"] = "ANONYMOUS"
    else:
        kw.update(user=user, password=password or "", allowed_mechs="PLAIN",
                  allow_insecure_mechs=True)
    return BlockingConnection("%s://%s:%d" % (scheme, host, port), **kw)


@contextlib.contextmanager
def connection(cfg, user=None, password=None, anonymous=False):
    conn = connect(cfg.url, user if user is not None else cfg.user,
                   password if password is not None else cfg.password, anonymous, cfg.timeout,
                   getattr(cfg, "ca", None))
    try:
        yield conn
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


# ------------------------------------------------------------------ messages

def send_accepted(sender, message, timeout=False):
    """Send ``message`` and return only once the far end accepted it.

    proton's BlockingSender.send raises for rejected and released only: a
    delivery settled as modified (a router whose receiver went away with the
    message in flight) returns as if it had arrived. A test that counts what
    was accepted must count only this.
    """
    delivery = sender.send(message, timeout=timeout)
    if delivery.remote_state != Delivery.ACCEPTED:
        raise CheckFailed("not accepted: the delivery of %r settled as %s" % (
            message.id or message.body, delivery.remote_state))
    return delivery


def send(conn, address, count=1, durable=False, ttl=None, properties=None, tag=None):
    """Send ``count`` messages (each acknowledged by the broker); returns their ids.

    ``ttl`` is in seconds (proton's unit); ids are ``<tag>-<n>``.
    """
    tag = tag or uuid.uuid4().hex[:12]
    snd = conn.create_sender(address)
    ids = []
    try:
        for i in range(count):
            mid = "%s-%d" % (tag, i)
            props = dict(properties or {})
            props.update({"check_id": mid, "seq": i})
            msg = Message(id=mid, body="enmasse check %s" % mid, durable=durable, properties=props)
            if ttl is not None:
                msg.ttl = ttl
            send_accepted(snd, msg)
            ids.append(mid)
    finally:
        snd.close()
    return ids


def drain(conn, address, idle=0.5, limit=100000, credit=100):
    """Accept every message on ``address`` until none arrives for ``idle`` s."""
    rcv = conn.create_receiver(address, credit=credit)
    msgs = []
    try:
        while len(msgs) < limit:
            try:
                msg = rcv.receive(timeout=idle)
            except Timeout:
                break
            rcv.accept()
            msgs.append(msg)
    finally:
        rcv.close()
    return msgs


def receive_ids(receiver, expected, timeout):
    """Receive (and accept) until every id in ``expected`` arrived or
    ``timeout`` s passed; returns the ids of ours in arrival order (with any
    duplicates). Messages that are not ours are accepted and ignored."""
    expected = set(expected)
    got = []
    deadline = time.monotonic() + timeout
    while not expected.issubset(got):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            msg = receiver.receive(timeout=left)
        except Timeout:
            break
        receiver.accept()
        if msg.id in expected:
            got.append(msg.id)
    return got


def _fail_delivery(receiver):
    """Settle the last received message as modified(delivery-failed): the
    broker counts a delivery attempt and redelivers (or dead-letters) it."""
    delivery = receiver.fetcher.unsettled.popleft()
    delivery.local.failed = True
    delivery.update(Delivery.MODIFIED)
    delivery.settle()


def _exactly(name, sent, got):
    missing = [i for i in sent if i not in got]
    dups = sorted(set(i for i in got if got.count(i) > 1))
    if missing or dups:
        raise CheckFailed("%s: %d sent, %d received; missing %s; duplicated %s"
                          % (name, len(sent), len(got), missing[:10], dups[:10]))


# -------------------------------------------------------------------- checks

def check_login(cfg):
    with connection(cfg) as conn:
        conn.create_sender(cfg.queue).close()
    return "user %r logged in and attached a sender to %r" % (parse_url(cfg.url, cfg.user)[3], cfg.queue)


def _must_be_refused(cfg, **kw):
    try:
        with connection(cfg, **kw) as conn:
            snd = conn.create_sender(cfg.queue)
            snd.send(Message(body="must not be accepted"))
    except Timeout as e:
        raise CheckFailed("the broker neither accepted nor refused the connection: %s" % e)
    except ProtonException as e:  # connection, link or send refused: what we want
        return "refused (%s: %s)" % (type(e).__name__, str(e)[:200])
    raise CheckFailed("the broker accepted the connection and a message on %r" % cfg.queue)


def check_anonymous_refused(cfg):
    return _must_be_refused(cfg, anonymous=True)


def check_wrong_password_refused(cfg):
    unused1, unused2, unused3, user, password = parse_url(cfg.url, cfg.user, cfg.password)
    return _must_be_refused(cfg, user=user or "app", password=(password or "") + "-wrong")


def check_queue_competing_consumers(cfg, count=20):
    with connection(cfg) as conn:
        drain(conn, cfg.queue, cfg.idle)
    with connection(cfg) as c1, connection(cfg) as c2, connection(cfg) as cs:
        receivers = [c1.create_receiver(cfg.queue, credit=1), c2.create_receiver(cfg.queue, credit=1)]
        sent = send(cs, cfg.queue, count)
        got = [[], []]
        deadline = time.monotonic() + cfg.timeout
        while sum(len(g) for g in got) < count and time.monotonic() < deadline:
            for rcv, ids in zip(receivers, got):
                try:
                    msg = rcv.receive(timeout=0.2)
                except Timeout:
                    continue
                rcv.accept()
                if msg.id in sent:
                    ids.append(msg.id)
        for rcv in receivers:
            rcv.close()
    _exactly("queue %r" % cfg.queue, sent, got[0] + got[1])
    if not got[0] or not got[1]:
        raise CheckFailed("queue %r: consumers did not compete: one consumer got %d, the other %d"
                          % (cfg.queue, len(got[0]), len(got[1])))
    return "%d messages on %r shared by two consumers (%d + %d), none lost, none duplicated" % (
        count, cfg.queue, len(got[0]), len(got[1]))


def check_topic_fanout(cfg, count=10):
    with connection(cfg) as c1, connection(cfg) as c2, connection(cfg) as cs:
        receivers = [c1.create_receiver(cfg.topic, credit=count), c2.create_receiver(cfg.topic, credit=count)]
        sent = send(cs, cfg.topic, count)
        got = [receive_ids(rcv, sent, cfg.timeout) for rcv in receivers]
        for rcv in receivers:
            rcv.close()
    for n, ids in enumerate(got):
        _exactly("topic %r subscriber %d" % (cfg.topic, n + 1), sent, ids)
    return "%d messages on %r reached both subscribers (%d + %d)" % (count, cfg.topic, len(got[0]), len(got[1]))


def _fqqn(cfg):
    return "%s::%s" % (cfg.topic, cfg.subscription)


def check_durable_subscription(cfg, count=5):
    fq = _fqqn(cfg)
    with connection(cfg) as conn:
        drain(conn, fq, cfg.idle)  # the subscriber was here, then goes away
        sent = send(conn, cfg.topic, count, durable=True)
    with connection(cfg) as conn:  # ... and comes back
        rcv = conn.create_receiver(fq, credit=count)
        got = receive_ids(rcv, sent, cfg.timeout)
        rcv.close()
    _exactly("subscription %r" % fq, sent, got)
    return "%d messages sent to %r while the subscriber was away were kept on %r" % (count, cfg.topic, fq)


def send_before_restart(cfg, count=5):
    fq = _fqqn(cfg)
    batch = uuid.uuid4().hex[:12]
    with connection(cfg) as conn:
        drain(conn, fq, cfg.idle)
        send(conn, cfg.topic, count, durable=True, tag="restart-" + batch,
             properties={RESTART_BATCH: batch, "restart_total": count, "restart_sent": time.time()})
    return "%d durable messages (batch %s) sent to %r and left on %r for after-restart" % (
        count, batch, cfg.topic, fq)


def check_after_restart(cfg):
    fq = _fqqn(cfg)
    with connection(cfg) as conn:
        msgs = drain(conn, fq, max(cfg.idle, 1.0))
    batches = {}
    for m in msgs:
        props = m.properties or {}
        if RESTART_BATCH in props:
            b = batches.setdefault(props[RESTART_BATCH], {"sent": props.get("restart_sent", 0),
                                                          "total": props.get("restart_total"), "seqs": []})
            b["seqs"].append(props.get("seq"))
    if not batches:
        raise CheckFailed("no message sent before the restart was found on %r (%d other messages)"
                          % (fq, len(msgs)))
    name, newest = max(batches.items(), key=lambda kv: kv[1]["sent"])
    want = list(range(newest["total"] or 0))
    if sorted(newest["seqs"]) != want:
        raise CheckFailed("batch %s on %r: expected messages %s, got %s" % (name, fq, want, sorted(newest["seqs"])))
    return "all %d durable messages of batch %s survived the restart on %r" % (len(want), name, fq)


def check_deadletter(cfg):
    with connection(cfg) as conn:
        drain(conn, cfg.retry_queue, cfg.idle)
        drain(conn, cfg.deadletter, cfg.idle)
        [mid] = send(conn, cfg.retry_queue, 1)
        rcv = conn.create_receiver(cfg.retry_queue, credit=1)
        deliveries = 0
        wait = cfg.timeout
        while deliveries <= cfg.max_delivery_attempts:
            try:
                msg = rcv.receive(timeout=wait)
            except Timeout:
                break
            if msg.id != mid:
                rcv.accept()
                continue
            deliveries += 1
            _fail_delivery(rcv)
            wait = min(cfg.timeout, 2.0) if deliveries >= cfg.max_delivery_attempts else cfg.timeout
        rcv.close()
        dlq = conn.create_receiver(cfg.deadletter, credit=10)
        moved = receive_ids(dlq, [mid], cfg.timeout)
        dlq.close()
    if deliveries != cfg.max_delivery_attempts:
        raise CheckFailed("%r: the message was delivered %d times, expected %d attempts before dead-lettering"
                          % (cfg.retry_queue, deliveries, cfg.max_delivery_attempts))
    if moved != [mid]:
        raise CheckFailed("%r: after %d failed deliveries the message did not arrive on %r"
                          % (cfg.retry_queue, deliveries, cfg.deadletter))
    return "%r: delivered %d times (delivery-failed each time), then moved to %r" % (
        cfg.retry_queue, deliveries, cfg.deadletter)


def check_ttl_expiry(cfg):
    with connection(cfg) as conn:
        drain(conn, cfg.ttl_queue, cfg.idle)
        drain(conn, cfg.expiry, cfg.idle)
        sent = send(conn, cfg.ttl_queue, 1, tag="no-ttl-" + uuid.uuid4().hex[:8])
        sent += send(conn, cfg.ttl_queue, 1, ttl=cfg.max_ttl * 10 / 1000.0,
                     tag="long-ttl-" + uuid.uuid4().hex[:8])
    time.sleep(cfg.max_ttl / 1000.0 + 1.0)
    with connection(cfg) as conn:
        left = [m.id for m in drain(conn, cfg.ttl_queue, max(cfg.idle, 1.0)) if m.id in sent]
        rcv = conn.create_receiver(cfg.expiry, credit=10)
        expired = receive_ids(rcv, sent, cfg.timeout)
        rcv.close()
    if left:
        raise CheckFailed("%r: %s still delivered after %d ms (maximum TTL %d ms)"
                          % (cfg.ttl_queue, left, cfg.max_ttl + 1000, cfg.max_ttl))
    missing = [i for i in sent if i not in expired]
    if missing:
        raise CheckFailed("%r: expired messages %s did not arrive on the expiry address %r"
                          % (cfg.ttl_queue, missing, cfg.expiry))
    return "%r: a message without TTL and one with TTL %d ms expired after the %d ms maximum and moved to %r" % (
        cfg.ttl_queue, cfg.max_ttl * 10, cfg.max_ttl, cfg.expiry)


MESSAGING_CHECKS = [
    ("login", check_login),
    ("anonymous-refused", check_anonymous_refused),
    ("wrong-password-refused", check_wrong_password_refused),
    ("queue-competing-consumers", check_queue_competing_consumers),
    ("topic-fanout", check_topic_fanout),
    ("durable-subscription", check_durable_subscription),
    ("deadletter", check_deadletter),
    ("ttl-expiry", check_ttl_expiry),
]
PHASES = {
    "all": MESSAGING_CHECKS,
    "before-restart": MESSAGING_CHECKS + [("durable-before-restart", send_before_restart)],
    "after-restart": MESSAGING_CHECKS[:3] + [("durable-after-restart", check_after_restart)],
}


def run_checks(cfg, phase="all", out=None):
    """Run the phase's checks; returns [(name, ok, detail)] and prints a line
    per check with ``out`` (e.g. ``print``)."""
    results = []
    for name, fn in PHASES[phase]:
        try:
            ok, detail = True, fn(cfg)
        except CheckFailed as e:
            ok, detail = False, str(e)
        except Exception as e:  # noqa: BLE001 - report, keep checking
            ok, detail = False, "error: %s: %s" % (type(e).__name__, e)
        results.append((name, ok, detail))
        if out:
            out("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="amqp://user:password@host:port")
    p.add_argument("--user", help="overrides the URL's user")
    p.add_argument("--password", help="overrides the URL's password")
    p.add_argument("--phase", choices=sorted(PHASES), default="all")
    for key in ("queue", "topic", "subscription", "deadletter", "retry_queue", "ttl_queue", "expiry"):
        p.add_argument("--" + key.replace("_", "-"), dest=key, default=DEFAULTS[key],
                       help="default: %(default)s")
    p.add_argument("--max-delivery-attempts", type=int, default=DEFAULTS["max_delivery_attempts"],
                   help="of the retry queue (default: %(default)s)")
    p.add_argument("--max-ttl", type=int, default=DEFAULTS["max_ttl"],
                   help="maximum message TTL of the ttl queue, ms (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=DEFAULTS["timeout"], help="seconds per wait")
    p.add_argument("--ca", help="amqps: CA file the broker's certificate and host name are verified against")
    args = p.parse_args(argv)
    cfg = config(**dict((k, v) for k, v in vars(args).items() if k != "phase"))
    results = run_checks(cfg, args.phase, out=lambda line: print(line, flush=True))
    failed = [r for r in results if not r[1]]
    print("%d/%d checks passed (phase %s)" % (len(results) - len(failed), len(results), args.phase))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
