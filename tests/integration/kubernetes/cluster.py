"""A real Kubernetes control plane for the tests and the benchmark: etcd
(Debian's etcd-server), kube-apiserver and kube-controller-manager v1.33.13
(built by scripts/build-kubernetes.sh, cached under
~/.cache/enmasse-messaging/kubernetes-v1.33.13/), started on free loopback
ports with their own CA, serving certificate, static tokens and
service-account keys, and stopped (process groups killed) no matter what.

No kubelet, no pods: there is no EnMasse operator either. Tests that need
an operator's answer write the status an operator would write with the
object, as EnMasse's operator does (``KubeClient.write_status``).

    with TestCluster() as cluster:
        cluster.kubeconfig      # admin kubeconfig file (token of system:masters)
        cluster.host, cluster.ca_cert, cluster.admin_token, cluster.job_token
"""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import threading
import urllib.request
import ssl

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BUILD_SCRIPT = os.path.join(REPO, "scripts", "build-kubernetes.sh")
CRD_DIR = os.path.join(REPO, "roles", "kubernetes_crds", "files", "crds")
# controllers a namespace lifecycle, garbage collection and service accounts need, by
# their v1.33 names (kube-controller-manager refuses an unknown name and exits at once)
CONTROLLERS = ("namespace-controller,garbage-collector-controller,serviceaccount-controller,"
               "serviceaccount-token-controller,root-ca-certificate-publisher-controller")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binaries():
    """The directory holding etcd, kube-apiserver, kube-controller-manager
    (built on first use; seconds when cached)."""
    proc = subprocess.run(["bash", BUILD_SCRIPT], capture_output=True, text=True, check=False, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError("scripts/build-kubernetes.sh failed:\n%s" % proc.stderr[-4000:])
    return proc.stdout.strip().splitlines()[-1]


def _die_with_parent():
    """preexec_fn: the component gets SIGKILL when the process that started it
    dies, however it dies (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


class TestCluster(object):
    __test__ = False

    def __init__(self, base_dir=None):
        self.bin = binaries()
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.dir = base_dir or tempfile.mkdtemp(prefix="enmasse-kube-")
        # etcd on tmpfs when there is one: fsyncs cost nothing there
        self.etcd_dir = tempfile.mkdtemp(prefix="enmasse-etcd-", dir=shm)
        self.procs = []
        self.admin_token = "admin-" + os.urandom(12).hex()
        self.job_token = "job-" + os.urandom(12).hex()
        self.port = free_port()
        self.host = "https://127.0.0.1:%d" % self.port
        self.ca_cert = os.path.join(self.dir, "ca.crt")
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")

    # ------------------------------------------------------------- set-up
    def _certs(self):
        d = self.dir
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                 "-subj", "/CN=enmasse-test-ca", cwd=d)
        with open(os.path.join(d, "san.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                 "-subj", "/CN=kube-apiserver", cwd=d)
        _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "server.crt", "-days", "2", "-extfile", "san.cnf", cwd=d)
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
        with open(os.path.join(d, "tokens.csv"), "w") as f:
            f.write('%s,admin,admin,"system:masters"\n' % self.admin_token)
            f.write("%s,job,job\n" % self.job_token)
        self.write_kubeconfig(self.kubeconfig, self.admin_token)

    def write_kubeconfig(self, path, token, namespace=None):
        ctx = "    namespace: %s\n" % namespace if namespace else ""
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: %s\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n"
                    "- name: test\n  context:\n    cluster: test\n    user: u\n%scurrent-context: test\n"
                    % (self.host, self.ca_cert, token, ctx))
        return path

    def _start(self, name, args):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent)
        self.procs.append((name, proc, log))
        return proc

    def _on_sigterm(self):
        """SIGTERM to the process that runs the cluster stops the whole cluster
        first (Python's default would exit at once, leaving it running)."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)

        def handler(signum, frame):
            self.cleanup()
            signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
            if callable(previous):
                previous(signum, frame)
            else:
                os.kill(os.getpid(), signal.SIGTERM)
        signal.signal(signal.SIGTERM, handler)
        self._previous_sigterm = previous

    def check(self):
        """Raise when a component is not running (the cluster is not what it claims)."""
        for name, proc, unused in self.procs:
            if proc.poll() is not None:
                raise RuntimeError("%s exited (%s):\n%s" % (name, proc.returncode, self.log_tail(name)))

    def start(self, timeout=120):
        self._on_sigterm()
        self._certs()
        d = self.dir
        etcd_port, peer_port = free_port(), free_port()
        self._start("etcd", [
            os.path.join(self.bin, "etcd"), "--name", "test", "--data-dir", self.etcd_dir,
            "--listen-client-urls", "http://127.0.0.1:%d" % etcd_port,
            "--advertise-client-urls", "http://127.0.0.1:%d" % etcd_port,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer_port,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer_port,
            "--initial-cluster", "test=http://127.0.0.1:%d" % peer_port,
            "--quota-backend-bytes", str(4 * 1024 ** 3), "--log-level", "warn"])
        self._start("kube-apiserver", [
            os.path.join(self.bin, "kube-apiserver"),
            "--etcd-servers", "http://127.0.0.1:%d" % etcd_port,
            "--bind-address", "127.0.0.1", "--secure-port", str(self.port), "--advertise-address", "127.0.0.1",
            "--endpoint-reconciler-type", "none",
            "--tls-cert-file", os.path.join(d, "server.crt"), "--tls-private-key-file", os.path.join(d, "server.key"),
            "--client-ca-file", self.ca_cert, "--token-auth-file", os.path.join(d, "tokens.csv"),
            "--authorization-mode", "RBAC",
            "--service-account-key-file", os.path.join(d, "sa.pub"),
            "--service-account-signing-key-file", os.path.join(d, "sa.key"),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", "10.96.0.0/24", "--profiling=false", "--v", "1"])
        self.wait_ready(timeout)
        kcm_config = self.write_kubeconfig(os.path.join(d, "kcm.kubeconfig"), self.admin_token)
        self._start("kube-controller-manager", [
            os.path.join(self.bin, "kube-controller-manager"), "--kubeconfig", kcm_config,
            "--controllers", CONTROLLERS, "--leader-elect=false",
            "--service-account-private-key-file", os.path.join(d, "sa.key"), "--root-ca-file", self.ca_cert,
            "--bind-address", "127.0.0.1", "--secure-port", "0", "--v", "1"])
        self.wait_controllers(timeout)
        return self

    def wait_controllers(self, timeout=120):
        """Until kube-controller-manager does its work: the service account
        controller has made the namespace default's ServiceAccount and the
        root CA publisher its ConfigMap."""
        deadline = time.monotonic() + timeout
        missing = None
        while time.monotonic() < deadline:
            self.check()
            missing = []
            for path in ("/api/v1/namespaces/default/serviceaccounts/default",
                         "/api/v1/namespaces/default/configmaps/kube-root-ca.crt"):
                try:
                    self._get(path)
                except Exception:  # 404 until the controller made it
                    missing.append(path)
            if not missing:
                return
            time.sleep(0.3)
        raise RuntimeError("kube-controller-manager did not make %s after %ss:\n%s"
                           % (", ".join(missing), timeout, self.log_tail("kube-controller-manager")))

    def _get(self, path, token=None):
        ctx = ssl.create_default_context(cafile=self.ca_cert)
        req = urllib.request.Request(self.host + path, headers={"Authorization": "Bearer " + (token or self.admin_token)})
        with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
            return resp.status, resp.read().decode()

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            self.check()
            try:
                status, unused = self._get("/readyz")
                if status == 200:
                    return
            except Exception as e:  # not listening yet
                last = e
            time.sleep(0.3)
        raise RuntimeError("kube-apiserver not ready after %ss (%s):\n%s" % (timeout, last,
                                                                             self.log_tail("kube-apiserver")))

    def log_tail(self, name, n=40):
        try:
            with open(os.path.join(self.dir, name + ".log")) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def version(self):
        unused, body = self._get("/version")
        return json.loads(body)["gitVersion"]

    # ------------------------------------------------------------- tear-down
    def stop(self):
        for name, proc, log in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(10)
                except (OSError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    proc.wait(10)
            log.close()
        self.procs = []
        shutil.rmtree(self.etcd_dir, ignore_errors=True)
        previous = getattr(self, "_previous_sigterm", None)
        if previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
            self._previous_sigterm = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc):
        self.cleanup()


if __name__ == "__main__":  # a manual run: start, print how to reach it, wait for ^C
    with TestCluster() as c:
        print("API server %s (%s); kubeconfig %s" % (c.host, c.version(), c.kubeconfig))
        print(json.dumps({"pids": dict((name, proc.pid) for name, proc, unused in c.procs), "dir": c.dir,
                          "etcd_dir": c.etcd_dir}))
        sys.stdout.flush()
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
