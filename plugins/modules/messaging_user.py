#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: messaging_user
short_description: Manage the messaging users of an address space (EnMasse MessagingUser) in Keycloak or on a cluster
version_added: "0.1.0"
description:
  - Converges the messaging users of an address space, C(standard) or C(brokered), to the given data. Users live in
    the space's Keycloak realm (named after the address space, made with the address space; docs/identity.md);
    the routers' auth service checks passwords and permissions there.
  - "Brokered spaces: when the space's broker is reachable (its connection file, or the connection options), the
    users are also converged into the broker through Artemis management (salted PBKDF2 hashes made by Artemis),
    with roles that encode their permissions, and every address of the space gets a security setting derived from
    them (C(orders/*) grants C(orders/eu), not C(ordersx)); a disabled or deleted user is removed from the broker.
    Changes apply to new connections without a restart. The broker keeps authenticating the last converged users
    while Keycloak is down. See docs/identity.md, Brokered spaces."
  - A user's O(authorization) becomes group memberships in EnMasse's encoding (C(send_<url-encoded pattern>),
    C(recv_<pattern>), C(manage), C(monitor)); groups are created in the realm when first needed. Groups a user
    has that are not of this encoding (added by hand) are left alone.
  - All input is validated before Keycloak is contacted; any violation fails the task with every message
    (field, value, rule) and changes nothing.
  - Users the module creates carry the attribute C(enmasse.messaging.owned=true). O(state=absent) and O(prune)
    only ever delete owned users. A listed user that exists and is not owned is adopted (marked owned).
  - Keycloak never returns a password. With O(update_password=always) the user keeps a salted PBKDF2-SHA256 hash
    of the password the module set (attribute C(enmasse.messaging.password), readable by realm administrators
    only); the password is set again when the given one does not match that hash, or when there is none (a user
    made by hand). The diff shows C((hidden, changed)), never a password.
  - With O(backend=kubernetes) the users are EnMasse C(user.enmasse.io/v1beta1) C(MessagingUser) objects in
    O(namespace) (named C(<address space>.<username>), the password base64-encoded in
    C(spec.authentication.password) as EnMasse keeps it), applied with server-side apply like the other kinds
    (docs/kubernetes.md); no Keycloak option is used. The same model validates the input, plus two rules of the
    cluster - C(<address space>.<username>) must be a Kubernetes object name (no C(_ @ :)) and O(enabled=false)
    is refused (EnMasse's MessagingUser has no such field). The address space's C(AddressSpace) object must exist.
    Ownership is the label C(app.kubernetes.io/managed-by=enmasse.messaging) and the field manager; prune and
    O(state=absent) delete owned objects only. The stored password is compared by value and never shown;
    O(update_password=on_create) keeps the stored password of an existing object. Check mode is a server dry
    run. See docs/identity.md.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.keycloak
  - enmasse.messaging.keycloak.users
  - enmasse.messaging.connection
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.converge
  - enmasse.messaging.kubernetes
  - enmasse.messaging.kubernetes.apply
attributes:
  diff_mode:
    details: Before and after are keyed by user name and hold only the changed users; passwords are shown as
      C((hidden)) or C((hidden, changed)).
options:
  address_space:
    description:
      - The address space (its realm has the same name; with O(backend=kubernetes) its C(AddressSpace) object).
    type: raw
    required: true
  username:
    description:
      - "Single form. The user name (lowercase letters and digits, with C(_ @ . : -) inside, as EnMasse)."
      - Mutually exclusive with O(users) and O(definition).
    type: raw
  password:
    description:
      - Single form. The password (required with O(state=present)). Never logged.
    type: str
  authentication:
    description:
      - "Single form, instead of O(password). EnMasse's C(authentication) - C({type: password, password: <plain>}).
        C(serviceaccount) and C(federated) are refused (the host backends have no Kubernetes tokens or identity
        providers to check them)."
    type: dict
  authorization:
    description:
      - "Single form. A list of rules C({addresses: [patterns], operations: [send, recv, view, manage]})."
      - A pattern is an address, a prefix ending in C(*) (C(orders/*) grants C(orders/eu), not C(ordersx)) or C(*)
        (every address); C(*) elsewhere is refused. C(send) and C(recv) need at least one pattern; C(view) and
        C(manage) are for the whole space and need none.
    type: raw
  enabled:
    description:
      - Single form. A disabled user keeps its data and cannot log in. Default C(true).
    type: bool
  definition:
    description:
      - Single form. An EnMasse C(user.enmasse.io/v1beta1) C(MessagingUser) document (or a C(MessagingUserList)).
        C(metadata.name) is C(<address space>.<username>); C(spec.authentication.password) is base64-encoded as
        in EnMasse.
    type: dict
  users:
    description:
      - Bulk form. A list of users, each a mapping with the keys of the single form (C(username), C(password) or
        C(authentication), C(authorization), C(enabled), C(state)) or a C(MessagingUser) document. A user name given
        twice is refused.
    type: list
    elements: dict
  prune:
    description:
      - Bulk form. Delete the owned users of the realm (with O(backend=kubernetes) the owned C(MessagingUser)
        objects named C(<address space>.*)) that are not listed. Users not owned are never deleted.
    type: bool
    default: false
  update_password:
    description:
      - V(always) sets the password when it differs from the one the module set last (see the description;
        with O(backend=kubernetes) when it differs from the object's C(spec.authentication.password)),
        V(on_create) only when the user is created (with O(backend=kubernetes) also when the object has no
        password, with a warning).
    type: str
    choices: [always, on_create]
    default: always
  state:
    description:
      - C(present) creates or updates the user(s); C(absent) deletes them if they are owned.
    type: str
    choices: [present, absent]
    default: present
seealso:
  - module: enmasse.messaging.messaging_user_info
  - module: enmasse.messaging.address_space
'''

EXAMPLES = r'''
- name: One user who may send to orders/* and receive from everything
  enmasse.messaging.messaging_user:
    keycloak_url: https://keycloak.example.com:8443
    keycloak_admin_password: "{{ vault_keycloak_admin_password }}"
    keycloak_ca_file: /etc/enmasse-messaging/ca.crt
    address_space: myspace
    username: app1
    password: "{{ vault_app1_password }}"
    authorization:
      - {addresses: ["orders/*"], operations: [send]}
      - {addresses: ["*"], operations: [recv]}

- name: All users of a space, removing owned users that are not listed
  enmasse.messaging.messaging_user:
    keycloak_url: https://keycloak.example.com:8443
    keycloak_admin_password: "{{ vault_keycloak_admin_password }}"
    address_space: myspace
    prune: true
    users:
      - {username: app1, password: "{{ vault_app1_password }}", authorization: [{addresses: ["*"], operations: [send, recv]}]}
      - apiVersion: user.enmasse.io/v1beta1
        kind: MessagingUser
        metadata: {name: myspace.monitor}
        spec:
          username: monitor
          authentication: {type: password, password: "{{ vault_monitor_password | b64encode }}"}
          authorization: [{operations: [view]}]

- name: Users as MessagingUser objects on a cluster (no Keycloak option)
  enmasse.messaging.messaging_user:
    backend: kubernetes
    namespace: messaging
    address_space: myspace
    prune: true
    users:
      - {username: app1, password: "{{ vault_app1_password }}", authorization: [{addresses: ["*"], operations: [send]}]}
'''

RETURN = r'''
users:
  description:
    - The users named in the task, as they are after the task (or would be, in check mode); no password.
    - With O(backend=kubernetes) each has C(name) (the object), C(authentication) (its type only) and C(status)
      (C(phase), C(message) as the operator reports them) instead of C(groups).
  returned: always
  type: list
  elements: dict
  sample:
    - username: app1
      enabled: true
      owned: true
      authorization: [{addresses: ["orders/*"], operations: [send]}]
      groups: ["send_orders%2F%2A"]
    - username: app2
      name: myspace.app2
      enabled: true
      owned: true
      authentication: {type: password}
      authorization: [{addresses: ["*"], operations: [send]}]
      status: {phase: Active, message: null}
changes:
  description: Names of the users created, updated and deleted (or that would be, in check mode).
  returned: always
  type: dict
  sample: {created: [app1], updated: [], deleted: [old]}
broker:
  description:
    - Brokered spaces with a reachable broker. C(users) names the broker users added, updated and removed;
      C(security_settings) the addresses whose security setting was set or removed. In diff mode the diff has a
      C((broker)) entry with the broker users' roles and the realm roles of the changed security settings.
  returned: when the space's broker is reachable
  type: dict
  sample: {changed: true, users: {added: [app1], updated: [], removed: []}, security_settings: {set: [orders/eu], removed: []}}
diff:
  description: Before and after of the changed users, keyed by user name (passwords hidden).
  returned: in diff mode
  type: dict
errors:
  description: Every validation or refusal message (field, value, rule), when the task fails.
  returned: failure
  type: list
  elements: str
'''

from ansible_collections.enmasse.messaging.plugins.module_utils import backends, runner
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import KEYCLOAK_OPTIONAL_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_APPLY_ARGS

RAW = dict(type="raw")
OPTIONS = dict(
    KEYCLOAK_OPTIONAL_ARGS,
    address_space=dict(type="raw", required=True),
    username=RAW,
    password=dict(type="str", no_log=True),
    authentication=dict(type="dict", no_log=True),
    authorization=RAW,
    enabled=dict(type="bool"),
    definition=dict(type="dict"),
    users=dict(type="list", elements="dict"),
    prune=dict(type="bool", default=False),
    update_password=dict(type="str", choices=["always", "on_create"], default="always", no_log=False),
    state=dict(type="str", choices=["present", "absent"], default="present"),
)
OPTIONS.update(KUBERNETES_APPLY_ARGS)
FORMS = ("username", "definition", "users")
FIELDS = ("password", "authentication", "authorization", "enabled")
MUTUALLY_EXCLUSIVE = ([(a, b) for i, a in enumerate(FORMS) for b in FORMS[i + 1:]]
                      + [(f, form) for f in FIELDS for form in FORMS[1:]] + [("password", "authentication")])


def converge(module):
    return backends.run("messaging_user", runner.request(module))


def main():
    # no_log: the target host's log gets no "Invoked with" line, which would hold the
    # passwords of users and definition (Ansible masks only no_log options there)
    runner.main(OPTIONS, converge, mutually_exclusive=MUTUALLY_EXCLUSIVE, no_log=True,
                required_one_of=[FORMS], required_by=dict((f, "username") for f in FIELDS))


if __name__ == "__main__":
    main()
