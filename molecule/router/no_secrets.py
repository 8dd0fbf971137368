"""Search an ansible-playbook output for secrets (controller side).

    no_secrets.py <output file> <credentials dir>

Secrets: the content of every file in the credentials directory (the
generated and the users' passwords, Keycloak's admin password; of a private
key, each line of its body), any JSON Web Token (Keycloak's access tokens
start with "eyJ"), and the collection's password hashes (pbkdf2-sha256$...).
Prints what was searched and which secret FILES leaked (never a value);
exit 1 when anything was found."""
import os
import re
import sys

JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.")
HASH = re.compile(r"pbkdf2-sha256\$\d+\$[A-Za-z0-9+/=]{8,}\$")


def secrets(directory):
    found = []
    for root, unused, files in os.walk(directory):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, errors="replace") as f:
                text = f.read()
            if name.endswith(".pem") or name.endswith(".lock"):
                continue   # certificates are public
            if "PRIVATE KEY" in text:
                values = [line for line in text.splitlines() if line and not line.startswith("-----")]
            else:
                values = [text.strip()]
            found.extend((os.path.relpath(path, directory), v) for v in values if len(v) >= 8)
    return found


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], errors="replace") as f:
        output = f.read()
    values = secrets(argv[2])
    leaked = sorted(set(name for name, v in values if v in output))
    tokens = len(JWT.findall(output))
    hashes = len(HASH.findall(output))
    print("searched %d bytes of output for %d secret values from %d files, JWTs and password hashes"
          % (len(output), len(values), len(set(n for n, v in values))))
    if leaked or tokens or hashes:
        print("LEAKED: values of %s; %d token(s); %d password hash(es)" % (", ".join(leaked) or "no file", tokens, hashes))
        return 1
    print("no secret found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
