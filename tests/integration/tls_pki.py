"""A CA and a broker certificate for the integration tests (the role makes
them with community.crypto on the controller; here the cryptography package):
``broker_tls_dir(path)`` writes ca.pem, broker.pem, broker.key (PKCS#8) and
keystore.pemcfg (what broker.xml.j2's acceptors read) for 127.0.0.1 and
localhost, and returns their paths."""
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, issuer, key, sign_key, extensions):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=2)))
    for ext, critical in extensions:
        b = b.add_extension(ext, critical=critical)
    return b.sign(sign_key, hashes.SHA256())


def broker_tls_dir(path, cn="127.0.0.1"):
    os.makedirs(path, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert(_name("itest CA"), _name("itest CA"), ca_key, ca_key,
               [(x509.BasicConstraints(ca=True, path_length=0), True)])
    key = ec.generate_private_key(ec.SECP256R1())
    # the routers dial 127.0.0.1 and verify the name: proton matches DNS names (and the CN) as strings
    san = x509.SubjectAlternativeName([x509.DNSName("127.0.0.1"), x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = _cert(_name(cn), ca.subject, key, ca_key, [(san, False)])
    out = {"dir": path, "ca": os.path.join(path, "ca.pem"), "certificate": os.path.join(path, "broker.pem"),
           "key": os.path.join(path, "broker.key"), "pemcfg": os.path.join(path, "keystore.pemcfg")}
    with open(out["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(out["certificate"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.open(out["key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(out["pemcfg"], "w") as f:
        f.write("source.key=%s\nsource.cert=%s\n" % (out["key"], out["certificate"]))
    return out
