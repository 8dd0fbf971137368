# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options that pick the backend and connect to a Kubernetes or OpenShift
cluster, shared by every module that has the ``backend`` option; documented
once in the doc fragments ``enmasse.messaging.kubernetes`` (connection) and
``enmasse.messaging.kubernetes.apply`` (the converging modules' options).
Names as in kubernetes.core; their K8S_AUTH_* environment variables are read
by ``kubernetes/connection.py``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

BACKENDS = ("hosts", "kubernetes")

KUBERNETES_ARGS = dict(
    backend=dict(type="str", choices=list(BACKENDS), default="hosts"),
    namespace=dict(type="str"),
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    proxy=dict(type="str"),
)

# the modules that change objects (address, address_space, the plan modules)
KUBERNETES_APPLY_ARGS = dict(
    KUBERNETES_ARGS,
    force_conflicts=dict(type="bool", default=False),
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=120),
)

# the connection options (without backend): given with backend=hosts they are an error
CONNECTION_KEYS = tuple(k for k in KUBERNETES_ARGS if k != "backend")
APPLY_KEYS = ("force_conflicts", "wait", "wait_timeout")
