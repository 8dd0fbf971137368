"""A real Keycloak 26.4.7 on the test host, for the identity tests.

``KeycloakServer(base_dir)`` runs the Quarkus distribution from
``~/.m2/repository/org/keycloak/keycloak-quarkus-dist/26.4.7/`` (or
``$ENMASSE_KEYCLOAK_ARCHIVE``) on free loopback ports: HTTP (``.url``) and the
management interface (``/health/ready``), the ``dev-file`` (H2) database in
``base_dir``, a bootstrap admin (``.admin_user``, ``.admin_password``).
``start()`` waits until ``/health/ready`` answers UP; ``stop()`` ends the whole
process group (SIGTERM, SIGKILL after a grace); ``start()`` again runs on the
same data and ports (the "Keycloak down" tests).

Why ``start --optimized`` and not ``start-dev``: ``start-dev`` re-runs the
Quarkus augmentation (about 40 s on 2 cores) on every start. Here the archive
is unpacked and built (``kc.sh build --db=dev-file --health-enabled=true``)
ONCE into ``~/.cache/enmasse-messaging/keycloak-<version>-<key>/`` under a
file lock; every server then starts the prebuilt server with ``--optimized``.
A fresh database costs another ~35 s (schema + master realm), so the first
server also leaves a seed database (master realm and an admin with a random
password, kept in the cache dir, mode 0600) that later servers copy: a start
is then the ~14 s of the JVM and Keycloak itself. Each server gets its own
``base_dir/home`` (bin and conf copied, lib/providers/themes linked to the
cache) so the cache is never written at run time and servers do not share
data, temp or transaction logs.

``missing_prerequisites()`` gives the reason to skip (no Java, no archive),
else None.
"""

import ctypes
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

import helpers

KEYCLOAK_VERSION = "26.4.7"
ARCHIVE_NAME = "keycloak-quarkus-dist-%s.tar.gz" % KEYCLOAK_VERSION
BUILD_OPTIONS = ("--db=dev-file", "--health-enabled=true")
# C1 only: Keycloak starts ~20% faster on a busy 2-core host, which is what tests need
JAVA_OPTS_APPEND = "-XX:TieredStopAtLevel=1 -Xms64m -Xmx768m"
ADMIN_USER = "admin"


def default_archive():
    explicit = os.environ.get("ENMASSE_KEYCLOAK_ARCHIVE")
    if explicit:
        return explicit
    return os.path.join(os.path.expanduser("~"), ".m2", "repository", "org", "keycloak", "keycloak-quarkus-dist",
                        KEYCLOAK_VERSION, ARCHIVE_NAME)


def missing_prerequisites():
    """A reason to skip, or None when Java and the Keycloak archive are there."""
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (Keycloak %s needs a JVM 17+)" % KEYCLOAK_VERSION
    archive = default_archive()
    if not os.path.isfile(archive):
        return "Keycloak %s archive not found at %s (set ENMASSE_KEYCLOAK_ARCHIVE)" % (KEYCLOAK_VERSION, archive)
    return None


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "enmasse-messaging")


def _archive_key(archive):
    """Names the cache by the archive's content (its .sha1 beside it when
    Maven left one, else size and mtime) and the build options."""
    sidecar = archive + ".sha1"
    if os.path.isfile(sidecar):
        with open(sidecar) as f:
            ident = f.read().split()[0]
    else:
        st = os.stat(archive)
        ident = "%d-%d" % (st.st_size, int(st.st_mtime))
    return hashlib.sha256(("%s %s %s" % (ident, BUILD_OPTIONS, JAVA_OPTS_APPEND)).encode()).hexdigest()[:12]


class _Lock(object):
    """An exclusive flock on ``path`` (other pytest runs and helpers share the cache)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _die_with_parent():
    """preexec_fn: Keycloak gets SIGKILL if the test process dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def prepared_home(archive=None):
    """The cached, built Keycloak home (unpacked and built once, under a lock)."""
    archive = archive or default_archive()
    root = cache_root()
    os.makedirs(root, exist_ok=True)
    home = os.path.join(root, "keycloak-%s-%s" % (KEYCLOAK_VERSION, _archive_key(archive)))
    marker = os.path.join(home, ".enmasse-built")
    if os.path.exists(marker):
        return home
    with _Lock(home + ".lock"):
        if os.path.exists(marker):
            return home
        work = tempfile.mkdtemp(prefix=".unpack-", dir=root)
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(work)
            top = os.path.join(work, "keycloak-%s" % KEYCLOAK_VERSION)
            out = subprocess.run([os.path.join(top, "bin", "kc.sh"), "build"] + list(BUILD_OPTIONS),
                                 capture_output=True, text=True, timeout=900, env=_env(),
                                 stdin=subprocess.DEVNULL)
            if out.returncode != 0:
                raise RuntimeError("kc.sh build failed (%s): %s" % (out.returncode, (out.stdout + out.stderr)[-2000:]))
            with open(os.path.join(top, ".enmasse-built"), "w") as f:
                f.write(" ".join(BUILD_OPTIONS) + "\n")
            shutil.rmtree(home, ignore_errors=True)
            os.rename(top, home)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return home


def _env(extra=None):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("KC_") or key.startswith("KEYCLOAK_"):
            del env[key]
    env["JAVA_OPTS_APPEND"] = JAVA_OPTS_APPEND
    env.update(extra or {})
    return env


def _http_get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read()


class KeycloakServer(object):
    """One Keycloak under ``base_dir`` (see the module doc)."""

    def __init__(self, base_dir, archive=None, use_seed=True):
        self.base_dir = os.path.abspath(base_dir)
        self.archive = archive or default_archive()
        self.use_seed = use_seed
        self.cache_home = None
        self.home = os.path.join(self.base_dir, "home")
        self.log_path = os.path.join(self.base_dir, "keycloak.log")
        self.http_port = helpers.free_port()
        self.management_port = helpers.free_port()
        self.admin_user = ADMIN_USER
        self.admin_password = None
        self.proc = None
        self.start_seconds = []   # how long each start() took until ready

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.http_port

    @property
    def management_url(self):
        return "http://127.0.0.1:%d" % self.management_port

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    # ------------------------------------------------------------ layout
    def _make_home(self, cache_home):
        if os.path.isdir(self.home):
            return
        os.makedirs(self.home)
        for name in ("bin", "conf"):
            shutil.copytree(os.path.join(cache_home, name), os.path.join(self.home, name), symlinks=True)
        for name in ("lib", "providers", "themes"):
            os.symlink(os.path.join(cache_home, name), os.path.join(self.home, name))
        os.makedirs(os.path.join(self.home, "data"))

    def _seed(self, cache_home):
        """(seed h2 dir, admin password): a database with the master realm and
        an admin, made once per cache (under its lock) by a throw-away server."""
        seed = cache_home + ".seed"
        creds = os.path.join(seed, "admin.json")
        with _Lock(cache_home + ".seed.lock"):
            if not os.path.exists(creds):
                work = tempfile.mkdtemp(prefix=".seed-", dir=os.path.dirname(cache_home))
                try:
                    maker = KeycloakServer(work, self.archive, use_seed=False)
                    maker.admin_password = secrets.token_urlsafe(18)
                    maker.start()
                    maker.stop()
                    shutil.rmtree(seed, ignore_errors=True)
                    os.makedirs(seed, mode=0o700)
                    shutil.copytree(os.path.join(maker.home, "data", "h2"), os.path.join(seed, "h2"))
                    fd = os.open(creds + ".tmp", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
                    with os.fdopen(fd, "w") as f:
                        json.dump({"user": maker.admin_user, "password": maker.admin_password}, f)
                    os.rename(creds + ".tmp", creds)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            with open(creds) as f:
                return os.path.join(seed, "h2"), json.load(f)["password"]

    def _prepare(self):
        if self.cache_home is not None:
            return
        self.cache_home = prepared_home(self.archive)
        fresh = not os.path.isdir(self.home)
        self._make_home(self.cache_home)
        if fresh and self.use_seed:
            h2, self.admin_password = self._seed(self.cache_home)
            shutil.copytree(h2, os.path.join(self.home, "data", "h2"))
        elif self.admin_password is None:
            self.admin_password = secrets.token_urlsafe(18)

    # ------------------------------------------------------------ process
    def command(self):
        return [os.path.join(self.home, "bin", "kc.sh"), "start", "--optimized",
                "--http-enabled=true", "--http-host=127.0.0.1", "--http-port=%d" % self.http_port,
                "--http-management-port=%d" % self.management_port, "--hostname-strict=false",
                "--cache=local", "--log-level=INFO"]

    def start(self, timeout=300):
        """Start (or start again on the same data and ports); wait until ready."""
        if self.running:
            return self
        self._prepare()
        began = time.monotonic()
        env = _env({"KC_BOOTSTRAP_ADMIN_USERNAME": self.admin_user,
                    "KC_BOOTSTRAP_ADMIN_PASSWORD": self.admin_password})
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.home, env=env,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        self.wait_ready(timeout)
        self.start_seconds.append(round(time.monotonic() - began, 1))
        return self

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("Keycloak exited with %s; log tail:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                status, body = _http_get(self.management_url + "/health/ready")
                if status == 200 and json.loads(body.decode()).get("status") == "UP":
                    return
            except (OSError, ValueError, urllib.error.URLError) as e:
                last = e
            time.sleep(0.25)
        self.stop(grace=5)
        raise RuntimeError("Keycloak was not ready within %ss (%s); log tail:\n%s" % (timeout, last, self.log_tail()))

    def stop(self, grace=20):
        """End the whole process group: SIGTERM, SIGKILL after ``grace`` s."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # whatever the JVM left in its group (it is the leader's child after exec)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._wait_port_free()

    def _wait_port_free(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                _http_get(self.url + "/", timeout=0.5)
            except urllib.error.HTTPError:
                pass  # still answering
            except OSError:  # refused: gone
                return
            time.sleep(0.2)

    def restart(self):
        self.stop()
        return self.start()

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""
