# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the cluster is and who we are: the module's options (as
kubernetes.core names them), else their K8S_AUTH_* environment variables,
else a kubeconfig, else the pod's service account.

Resolution, as kubernetes.core does it:

1. ``kubeconfig``/``context`` (option or K8S_AUTH_KUBECONFIG/K8S_AUTH_CONTEXT)
   given: that kubeconfig and context;
2. else, when no ``host`` is given: the pod's service account when the module
   runs in a pod (KUBERNETES_SERVICE_HOST and the token file), else the
   default kubeconfig (KUBECONFIG, ~/.kube/config);
3. ``host``, ``api_key``, ``ca_cert``, ``client_cert``, ``client_key``,
   ``validate_certs``, ``proxy`` given are laid over that.

The namespace: the option, else K8S_AUTH_NAMESPACE, else the kubeconfig
context's namespace, else the pod's (service account) namespace, else
``default``. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError

try:
    from kubernetes import client as _kclient
    from kubernetes import config as _kconfig
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - checked at run time
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = str(e)

# option -> environment variable (kubernetes.core's names)
ENV = {
    "kubeconfig": "K8S_AUTH_KUBECONFIG",
    "context": "K8S_AUTH_CONTEXT",
    "host": "K8S_AUTH_HOST",
    "api_key": "K8S_AUTH_API_KEY",
    "ca_cert": "K8S_AUTH_SSL_CA_CERT",
    "client_cert": "K8S_AUTH_CERT_FILE",
    "client_key": "K8S_AUTH_KEY_FILE",
    "validate_certs": "K8S_AUTH_VERIFY_SSL",
    "proxy": "K8S_AUTH_PROXY",
    "namespace": "K8S_AUTH_NAMESPACE",
}
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_NAMESPACE = "default"
DEFAULT_TIMEOUT = 60
TRUE = ("1", "true", "yes", "on", "y")


def option(params, key, environ=None):
    """The option's value, else its K8S_AUTH_* variable (booleans parsed)."""
    value = params.get(key)
    if value is not None:
        return value
    raw = (os.environ if environ is None else environ).get(ENV[key])
    if raw in (None, ""):
        return None
    if key == "validate_certs":
        return raw.strip().lower() in TRUE
    return os.path.expanduser(raw) if key in ("kubeconfig", "ca_cert", "client_cert", "client_key") else raw


def secrets_of(params, environ=None):
    """The secrets among the options and their variables (to be masked)."""
    key = option(params, "api_key", environ)
    return [key] if key else []


class Connection(object):
    """A resolved connection: ``configuration`` (a kubernetes client
    Configuration), ``namespace``, ``timeout``, ``source`` (how it was found,
    for messages; never a secret)."""

    def __init__(self, configuration, namespace, timeout, source):
        self.configuration = configuration
        self.namespace = namespace
        self.timeout = timeout
        self.source = source


def _in_cluster(environ, sa_dir):
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token_file = os.path.join(sa_dir, "token")
    return bool(host and port and os.path.isfile(token_file))


def _load_in_cluster(cfg, environ, sa_dir):
    """The pod's service account: the API server the pod's environment names,
    the token and CA the kubelet mounts."""
    host = environ["KUBERNETES_SERVICE_HOST"]
    if ":" in host:  # IPv6
        host = "[%s]" % host
    cfg.host = "https://%s:%s" % (host, environ["KUBERNETES_SERVICE_PORT"])
    with open(os.path.join(sa_dir, "token")) as f:
        cfg.api_key = {"authorization": "Bearer " + f.read().strip()}
    ca = os.path.join(sa_dir, "ca.crt")
    if os.path.isfile(ca):
        cfg.ssl_ca_cert = ca
    ns_file = os.path.join(sa_dir, "namespace")
    if os.path.isfile(ns_file):
        with open(ns_file) as f:
            return f.read().strip() or None
    return None


def _kubeconfig_namespace(path, context):
    try:
        contexts, active = _kconfig.list_kube_config_contexts(config_file=path)
    except Exception:  # a kubeconfig without contexts: no namespace from it
        return None
    ctx = active
    if context:
        ctx = next((c for c in contexts if c.get("name") == context), None)
    return ((ctx or {}).get("context") or {}).get("namespace")


def resolve(params, environ=None, sa_dir=SERVICE_ACCOUNT_DIR):
    """The ``Connection`` for a module's ``params``; ConfigError when there is
    nothing to connect with (naming what was looked at)."""
    if not HAS_KUBERNETES:
        raise ConfigError("backend kubernetes needs the Python package 'kubernetes' where the module runs "
                          "(pip install kubernetes; it is in the collection's requirements.txt): %s"
                          % KUBERNETES_IMPORT_ERROR)
    environ = os.environ if environ is None else environ
    opt = dict((k, option(params, k, environ)) for k in ENV)
    cfg = _kclient.Configuration()
    namespace = None
    source = None
    if opt["kubeconfig"] or opt["context"]:
        path = opt["kubeconfig"]
        if path and not os.path.isfile(path):
            raise ConfigError("kubeconfig: %r is not a file" % path)
        try:
            _kconfig.load_kube_config(config_file=path, context=opt["context"], client_configuration=cfg,
                                      persist_config=False)
        except Exception as e:
            raise ConfigError("kubeconfig %s: cannot use context %r: %s"
                              % (path or "(default)", opt["context"], e))
        namespace = _kubeconfig_namespace(path, opt["context"])
        source = "kubeconfig %s" % (path or "(default)")
    elif not opt["host"]:
        if _in_cluster(environ, sa_dir):
            namespace = _load_in_cluster(cfg, environ, sa_dir)
            source = "the pod's service account"
        else:
            default = os.path.expanduser(environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
            if not os.path.isfile(default):
                raise ConfigError(
                    "backend kubernetes: no cluster to connect to: give host (and api_key or a client "
                    "certificate), kubeconfig (or K8S_AUTH_HOST, K8S_AUTH_KUBECONFIG), or run in a pod with "
                    "a service account; there is no %s" % default)
            try:
                _kconfig.load_kube_config(config_file=default, client_configuration=cfg, persist_config=False)
            except Exception as e:
                raise ConfigError("kubeconfig %s: %s" % (default, e))
            namespace = _kubeconfig_namespace(default, None)
            source = "kubeconfig %s" % default
    if opt["host"]:
        if "://" not in opt["host"]:
            raise ConfigError("host: %r has no scheme: give the API server's URL, e.g. https://%s (from %s)"
                              % (opt["host"], opt["host"].rstrip("/"),
                                 "K8S_AUTH_HOST" if params.get("host") is None else "the host option"))
        cfg.host = opt["host"].rstrip("/")
        source = source or "host %s" % cfg.host
    if opt["api_key"]:
        cfg.api_key = {"authorization": "Bearer " + opt["api_key"]}
    for key, attr in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if opt[key]:
            if not os.path.isfile(opt[key]):
                raise ConfigError("%s: %r is not a file" % (key, opt[key]))
            setattr(cfg, attr, opt[key])
    if opt["validate_certs"] is not None:
        cfg.verify_ssl = bool(opt["validate_certs"])
    if opt["proxy"]:
        cfg.proxy = opt["proxy"]
    namespace = opt["namespace"] or namespace or DEFAULT_NAMESPACE
    timeout = params.get("timeout") or DEFAULT_TIMEOUT
    return Connection(cfg, namespace, timeout, source)
