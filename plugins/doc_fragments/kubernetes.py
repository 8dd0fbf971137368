# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The backend option and the cluster connection (module_utils/kubernetes/args.py KUBERNETES_ARGS),
    # named as in kubernetes.core.
    DOCUMENTATION = r'''
options:
  backend:
    description:
      - Where the module works. V(hosts) (the default) drives the brokers and routers on hosts through their
        management APIs (the connection options above).
      - V(kubernetes) manages EnMasse custom resources (C(enmasse.io/v1beta1) C(AddressSpace) and C(Address),
        C(admin.enmasse.io/v1beta2) C(AddressPlan) and C(AddressSpacePlan), C(user.enmasse.io/v1beta1)
        C(MessagingUser)) in O(namespace) of a Kubernetes or
        OpenShift cluster, with server-side apply (field manager C(enmasse.messaging)); an EnMasse-compatible
        operator does the rest. The same inputs are accepted and refused with the same messages, before the
        cluster is contacted. See the collection's docs/kubernetes.md.
      - With V(kubernetes), the hosts options (C(connection_file), C(management_url), ... C(catalogue_path))
        are refused; with V(hosts), the kubernetes options below are refused.
      - V(kubernetes) needs the Python package C(kubernetes) where the module runs (usually the controller or
        the execution environment, C(delegate_to=localhost)).
    type: str
    choices: [hosts, kubernetes]
    default: hosts
  namespace:
    description:
      - O(backend=kubernetes). The namespace of the objects (plans included - the plan catalogue of a
        cluster is the C(AddressPlan) and C(AddressSpacePlan) objects of the namespace).
      - Defaults to E(K8S_AUTH_NAMESPACE), else the kubeconfig context's namespace, else the pod's
        service account namespace, else C(default).
    type: str
  kubeconfig:
    description:
      - O(backend=kubernetes). Path to a kubeconfig file. Can also be specified via K8S_AUTH_KUBECONFIG
        environment variable. Without it and without O(host), the module uses the pod's service account when
        it runs in a pod, else the default kubeconfig (E(KUBECONFIG), C(~/.kube/config)).
    type: path
  context:
    description:
      - O(backend=kubernetes). The context of the kubeconfig to use. Can also be specified via
        K8S_AUTH_CONTEXT environment variable.
    type: str
  host:
    description:
      - O(backend=kubernetes). URL of the API server. Can also be specified via K8S_AUTH_HOST environment
        variable.
    type: str
  api_key:
    description:
      - O(backend=kubernetes). Bearer token (for example a service account token). Can also be specified via
        K8S_AUTH_API_KEY environment variable. Never logged.
    type: str
  ca_cert:
    description:
      - O(backend=kubernetes). CA certificate (file) that signed the API server's certificate. Can also be
        specified via K8S_AUTH_SSL_CA_CERT environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - O(backend=kubernetes). Client certificate (file) to authenticate with. Can also be specified via
        K8S_AUTH_CERT_FILE environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - O(backend=kubernetes). Key (file) of O(client_cert). Can also be specified via K8S_AUTH_KEY_FILE
        environment variable.
    type: path
    aliases: [key_file]
  validate_certs:
    description:
      - O(backend=kubernetes). Whether to verify the API server's certificate. Can also be specified via
        K8S_AUTH_VERIFY_SSL environment variable.
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - O(backend=kubernetes). URL of an HTTP proxy to the API server. Can also be specified via
        K8S_AUTH_PROXY environment variable.
    type: str
notes:
  - With O(backend=kubernetes), the option C(timeout) (where the module has it) is the timeout of one API request.
requirements:
  - kubernetes (Python package, for O(backend=kubernetes) only)
'''

    # The options of the modules that change objects on a cluster.
    APPLY = r'''
options:
  force_conflicts:
    description:
      - O(backend=kubernetes). Take over fields that another field manager owns with a different value
        (server-side apply C(force)). Without it such a change fails, naming the fields and their managers,
        and changes nothing on that object.
    type: bool
    default: false
  wait:
    description:
      - O(backend=kubernetes). Wait until the operator reports every object of the task ready
        (C(status.isReady) true, C(status.phase) C(Active)) and every deleted object gone. The task fails
        after O(wait_timeout) with the objects' own C(status.messages). Not in check mode.
    type: bool
    default: false
  wait_timeout:
    description:
      - O(backend=kubernetes). Seconds O(wait) waits.
    type: int
    default: 120
'''
