"""molecule/router verify-identity: what clients of a standard space see of
its users and permissions (SASL PLAIN through the routers, checked by the
auth service in the space's Keycloak realm). Debian's python3-qpid-proton.

Config (JSON, path in IDENTITY_CONFIG; written by the verify with no_log):
{"url": "amqp://enmasse-router-1:5700", "ca": null | "/path/ca.pem",
 "users": {"<name>": "<password>", ...}}

    identity_check.py matrix        every case once, a JSON object case -> outcome
    identity_check.py login <user> [<key>]  "ok" or "refused: ..." (the
                                    password of users[<key>], default <user>)

An outcome is "ok" or "refused: <what the client saw>"; no password is printed."""
import json
import os
import sys
import uuid

from proton import Message, SSLDomain
from proton.utils import BlockingConnection


def config():
    with open(os.environ["IDENTITY_CONFIG"]) as f:
        return json.load(f)


def connect(cfg, user, password):
    kw = dict(timeout=20, sasl_enabled=True, allowed_mechs="PLAIN" if user else "ANONYMOUS",
              allow_insecure_mechs=True)
    if user:
        kw.update(user=user, password=password)
    url = cfg["url"]
    if cfg.get("ca"):   # the space listeners take TLS: amqps, trusting the collection's CA
        domain = SSLDomain(SSLDomain.MODE_CLIENT)
        domain.set_trusted_ca_db(cfg["ca"])
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME, cfg["ca"])
        kw["ssl_domain"] = domain
        url = url.replace("amqp://", "amqps://", 1)
    return BlockingConnection(url, **kw)


def outcome(fn):
    try:
        fn()
        return "ok"
    except Exception as exc:  # what the client sees, whatever proton raises
        return "refused: %s" % (" ".join(str(exc).split())[:200])


def as_user(cfg, user, action, password=None):
    def run():
        conn = connect(cfg, user, cfg["users"].get(user) if password is None else password)
        try:
            action(conn)
        finally:
            conn.close()
    return outcome(run)


def send(address, tag):
    def action(conn):
        sender = conn.create_sender(address)
        sender.send(Message(body=tag, durable=True, id=tag))
    return action


def receive(address, tag):
    def action(conn):
        receiver = conn.create_receiver(address, credit=50)
        while True:   # the message sent before; other checks may have left others
            msg = receiver.receive(timeout=15)
            receiver.accept()
            if msg.body == tag:
                return
    return action


def attach_receiver(address):
    def action(conn):
        conn.create_receiver(address)
    return action


def nothing(conn):
    return None


def matrix(cfg):
    tag = "identity-%s" % uuid.uuid4().hex[:8]
    out = {}
    out["sender sends to orders"] = as_user(cfg, "sender", send("orders", tag))
    out["sender receives from orders"] = as_user(cfg, "sender", attach_receiver("orders"))
    out["reader sends to orders"] = as_user(cfg, "reader", send("orders", tag + "-x"))
    out["reader receives from orders"] = as_user(cfg, "reader", receive("orders", tag))
    out["sender sends to news (not granted)"] = as_user(cfg, "sender", send("news", tag))
    out["bob of tenant-b logs in at tenant-a"] = as_user(cfg, "bob", nothing)
    out["sender with a wrong password"] = as_user(cfg, "sender", nothing, password="wrong-" + tag)
    out["unknown user"] = as_user(cfg, "nobody-" + tag, nothing, password="x")
    out["anonymous"] = as_user(cfg, None, nothing)
    return out


def main(argv):
    cfg = config()
    if argv[1:2] == ["matrix"]:
        print(json.dumps(matrix(cfg), indent=1, sort_keys=True))
    elif argv[1:2] == ["login"] and len(argv) in (3, 4):
        print(as_user(cfg, argv[2], nothing, password=cfg["users"][argv[-1]]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
