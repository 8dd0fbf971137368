"""TLS checks of a broker's client acceptors with real clients.

Standalone (Molecule copies it onto the broker host): python-qpid-proton for
AMQP, paho-mqtt for MQTT (``--pythonpath`` names a directory holding the
``paho`` package when it is not installed). One line per check, exit status 0
only if all pass::

    tls_checks.py --host localhost --user demo-user --password ... \\
        --ca /etc/artemis/tls/ca.pem --other-ca /tmp/other-ca.pem

Checks: AMQP over TLS with the CA sends and receives on ``--queue``; a plain
AMQP client on the TLS port never gets an AMQP open (refused or no answer); an AMQP client trusting another CA
refuses the broker's certificate; MQTT over TLS with the CA publishes and
receives on ``--topic``; a plain MQTT client on the TLS port gets no CONNACK;
an MQTT client trusting another CA refuses the broker's certificate.
"""

import argparse
import ssl
import sys
import threading
import uuid

from proton import Message, ProtonException, SSLDomain, Timeout
from proton.utils import BlockingConnection


class CheckFailed(Exception):
    """A check did not hold; the message says what a user would notice."""


def amqp_connect(args, tls=True, ca=None):
    kw = {"timeout": args.timeout, "user": args.user, "password": args.password, "allowed_mechs": "PLAIN",
          "allow_insecure_mechs": True}
    if tls:
        dom = SSLDomain(SSLDomain.MODE_CLIENT)
        dom.set_trusted_ca_db(ca or args.ca)
        dom.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        kw["ssl_domain"] = dom
    return BlockingConnection("%s://%s:%d" % ("amqps" if tls else "amqp", args.host, args.amqp_port), **kw)


def check_amqp_tls(args):
    body = "tls-" + uuid.uuid4().hex
    conn = amqp_connect(args)
    try:
        rcv = conn.create_receiver(args.queue)
        conn.create_sender(args.queue).send(Message(body=body, durable=True))
        while True:
            msg = rcv.receive(timeout=args.timeout)
            rcv.accept()
            if msg.body == body:
                break
    finally:
        conn.close()
    return "sent and received %r on %r over TLS (certificate and host name %s verified)" % (
        body, args.queue, args.host)


def _amqp_refused(args, timeout_is_refusal=False, **kw):
    try:
        conn = amqp_connect(args, **kw)
        try:
            conn.create_sender(args.queue).send(Message(body="must not be accepted"))
        finally:
            conn.close()
    except Timeout as e:
        if timeout_is_refusal:
            # a TLS port waits for a TLS ClientHello: the AMQP header never gets an answer
            return "no AMQP open frame within %ss (%s)" % (args.timeout, e)
        raise CheckFailed("the broker neither accepted nor refused the connection: %s" % e)
    except ProtonException as e:
        return "refused (%s: %s)" % (type(e).__name__, str(e)[:200])
    raise CheckFailed("the connection was accepted and a message sent")


def check_amqp_plain_refused(args):
    return _amqp_refused(args, timeout_is_refusal=True, tls=False)


def check_amqp_other_ca_refused(args):
    return _amqp_refused(args, ca=args.other_ca)


def _mqtt_client(args, tls=True, ca=None):
    from paho.mqtt import client as mqtt
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="tls-check-" + uuid.uuid4().hex[:8])
    c.username_pw_set(args.user, args.password)
    if tls:
        c.tls_set(ca_certs=ca or args.ca, cert_reqs=ssl.CERT_REQUIRED)
    return c


def _mqtt_connect(args, c):
    """Connects and waits for the CONNACK: (True, reason) or (False, why)."""
    done = threading.Event()
    result = {}

    def on_connect(client, userdata, flags, reason, props):
        result["reason"] = str(reason)
        result["ok"] = not reason.is_failure
        done.set()

    c.on_connect = on_connect
    try:
        c.connect(args.host, args.mqtt_port, keepalive=30)
    except (ssl.SSLError, OSError) as e:
        return False, "%s: %s" % (type(e).__name__, e)
    c.loop_start()
    try:
        if not done.wait(args.timeout):
            return False, "no CONNACK within %ss" % args.timeout
        return result["ok"], result["reason"]
    finally:
        if not result.get("ok"):
            c.loop_stop()


def check_mqtt_tls(args):
    c = _mqtt_client(args)
    ok, why = _mqtt_connect(args, c)
    if not ok:
        raise CheckFailed("MQTT over TLS with the CA was refused: %s" % why)
    got = threading.Event()
    payload = uuid.uuid4().hex.encode()
    subscribed = threading.Event()
    c.on_message = lambda client, userdata, msg: got.set() if msg.payload == payload else None
    c.on_subscribe = lambda client, userdata, mid, codes, props: subscribed.set()
    try:
        c.subscribe(args.topic, qos=1)
        if not subscribed.wait(args.timeout):
            raise CheckFailed("no SUBACK for %r" % args.topic)
        c.publish(args.topic, payload, qos=1).wait_for_publish(args.timeout)
        if not got.wait(args.timeout):
            raise CheckFailed("the message published on %r over TLS did not come back" % args.topic)
    finally:
        c.disconnect()
        c.loop_stop()
    return "published and received on %r over MQTT/TLS (certificate verified)" % args.topic


def _mqtt_refused(args, **kw):
    try:
        c = _mqtt_client(args, **kw)
        ok, why = _mqtt_connect(args, c)
    except ssl.SSLError as e:
        return "refused (%s)" % e
    if ok:
        c.disconnect()
        c.loop_stop()
        raise CheckFailed("the MQTT connection was accepted")
    return "refused (%s)" % why


def check_mqtt_plain_refused(args):
    return _mqtt_refused(args, tls=False)


def check_mqtt_other_ca_refused(args):
    return _mqtt_refused(args, ca=args.other_ca)


CHECKS = [
    ("amqp_tls_send_receive", check_amqp_tls),
    ("amqp_plain_refused", check_amqp_plain_refused),
    ("amqp_other_ca_refused", check_amqp_other_ca_refused),
    ("mqtt_tls_publish_receive", check_mqtt_tls),
    ("mqtt_plain_refused", check_mqtt_plain_refused),
    ("mqtt_other_ca_refused", check_mqtt_other_ca_refused),
]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="localhost")
    p.add_argument("--amqp-port", type=int, default=5672)
    p.add_argument("--mqtt-port", type=int, default=1883)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--ca", required=True, help="the CA of the broker's certificate")
    p.add_argument("--other-ca", required=True, help="a CA that did not sign it")
    p.add_argument("--queue", default="orders")
    p.add_argument("--topic", default="events")
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--pythonpath", help="directory holding the paho package")
    args = p.parse_args(argv)
    if args.pythonpath:
        sys.path.insert(0, args.pythonpath)
    failed = 0
    for name, fn in CHECKS:
        try:
            ok, detail = True, fn(args)
        except CheckFailed as e:
            ok, detail = False, str(e)
        except Exception as e:  # noqa: BLE001 - report, keep checking
            ok, detail = False, "error: %s: %s" % (type(e).__name__, e)
        failed += not ok
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    print("%d/%d checks passed" % (len(CHECKS) - failed, len(CHECKS)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
