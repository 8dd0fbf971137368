#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: metrics_collect
short_description: Sample broker and router metrics into the capacity-planning store
version_added: "0.1.0"
description:
  - Takes one sample of every queue, topic and broker of the given brokered address
    spaces (one Jolokia bulk request per broker) and, when O(router_url) is set, of a
    router's addresses, links and connections (AMQP management C(QUERY), paged), and
    appends them to a Parquet dataset partitioned by C(date=YYYY-MM-DD/address_space=<name>)
    under C(<store>/addresses/) and C(<store>/nodes/). The layout and every column are
    described in C(docs/metrics-schema.md) and the collection in C(docs/metrics-collection.md);
    the Spark capacity planner reads it.
  - Every run adds new files (a unique name per run and partition, written under a
    hidden temporary name and then renamed), it never rewrites earlier samples, so the
    module always reports C(changed) when it wrote something.
  - Run it on the broker host (it reads the connection files the broker role writes and
    Jolokia listens on 127.0.0.1 only). The C(capacity_planner) role schedules the same
    collection every minute with a systemd timer (C(enmasse-collect)).
  - Check mode samples (reads only) and writes nothing.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection
  - enmasse.messaging.attributes
attributes:
  check_mode:
    support: full
    details: Samples (reads) only and writes nothing.
  diff_mode:
    support: none
options:
  address_space:
    description:
      - One address space to sample. Its connection file is C(<spaces_dir>/<address_space>.json)
        unless O(connection_file) is given.
      - Mutually exclusive with O(address_spaces). Without either, every address space with a
        connection file in O(spaces_dir) is sampled.
    type: str
  address_spaces:
    description:
      - Several address spaces to sample (each with its own connection file). The connection
        options that name one broker (O(connection_file), O(management_url), O(broker_name),
        O(ledger_path)) cannot be combined with more than one address space.
    type: list
    elements: str
  spaces_dir:
    description: Directory of the connection files (C(<space>.json)) written by the broker role.
    type: path
    default: /etc/enmasse-messaging/spaces
  store:
    description:
      - Root of the metrics dataset. A local directory, or any URI C(pyarrow.fs) can open
        (C(s3://bucket/prefix), C(gs://...), C(hdfs://namenode:8020/path)) when the matching
        filesystem libraries and credentials are available on the host.
    type: str
    default: /var/lib/enmasse-messaging/metrics
  infra:
    description: Name of the messaging infrastructure, written into every row (C(infra) column).
    type: str
    default: default
  router_url:
    description:
      - AMQP URL of a router to sample, for example C(amqp://127.0.0.1:5672) or
        C(amqps://user:password@router:5671). Not set, no router is sampled (C(router=not configured)).
      - A password in the URL is masked (C(********)) in the task's output and in error messages.
      - Needs python-qpid-proton on the host that runs the module.
    type: str
  router_flavor:
    description:
      - Which management entity types the router speaks. V(qdrouterd) is Qpid Dispatch
        (C(org.apache.qpid.dispatch.*)), V(skrouterd) is skupper-router (C(io.skupper.router.*)),
        V(auto) tries qdrouterd's first.
    type: str
    choices: [auto, qdrouterd, skrouterd]
    default: auto
  router_address_spaces:
    description:
      - Further address spaces (for example standard spaces without a connection file on this
        host) whose tenant-prefixed router addresses (C(<space>/<address>)) are recorded.
    type: list
    elements: str
    default: []
  router_default_address_space:
    description:
      - Address space for router addresses without a tenant prefix (routers without a
        C(multiTenant) listener). Not set, such addresses are counted as unattributed and dropped.
    type: str
  router_memory_max:
    description:
      - Memory available to the router process in bytes, recorded as C(memory_max) of its node
        row (the router does not report a limit). Not set, C(memory_max) is null.
    type: int
  router_page_size:
    description: Entities per AMQP management C(QUERY) request (C(count)); larger sets are paged with C(offset).
    type: int
    default: 500
  router_timeout:
    description: Seconds to wait for the router (connect and each reply).
    type: int
    default: 30
  router_sasl_mechanisms:
    description: Space-separated SASL mechanisms allowed towards the router (for example C(PLAIN)).
    type: str
  router_ca_file:
    description: CA certificate(s) to verify an C(amqps://) router with.
    type: path
  router_cert_file:
    description: Client certificate for the router (TLS client authentication).
    type: path
  router_key_file:
    description: Private key of O(router_cert_file).
    type: path
  router_verify_hostname:
    description: Verify that the router's certificate matches its host name (C(amqps://) only).
    type: bool
    default: true
  fail_on_source_error:
    description:
      - Fail when any broker or the router could not be sampled. The samples of the others are
        written either way. With V(false) the module only fails when nothing could be sampled,
        and the problems are returned in RV(errors) and as warnings.
    type: bool
    default: true
requirements:
  - pyarrow (to write the Parquet files)
  - python-qpid-proton (only with O(router_url))
notes:
  - Counters (C(messages_added), C(messages_acknowledged), C(deliveries_*)) are cumulative as the
    components report them; rates are computed by the capacity planner from the differences
    between samples (a counter that goes down marks a restart).
"""

EXAMPLES = r"""
- name: Sample every address space on this broker host into the local store
  enmasse.messaging.metrics_collect:
    infra: prod

- name: Sample one space and the router in front of it (the router role's management listener), into S3
  enmasse.messaging.metrics_collect:
    address_space: tenant-a
    store: s3://metrics-bucket/enmasse
    infra: prod
    router_url: "{{ router_management.url }}"
    router_ca_file: "{{ router_management.tls.ca_file }}"
    router_cert_file: "{{ router_management.tls.cert_file }}"
    router_key_file: "{{ router_management.tls.key_file }}"
    router_sasl_mechanisms: EXTERNAL
    router_verify_hostname: false
    router_memory_max: 2147483648

- name: See what would be recorded, without writing
  enmasse.messaging.metrics_collect:
    address_space: tenant-a
  check_mode: true
  register: sample

- name: Explicit connection options (no connection file)
  enmasse.messaging.metrics_collect:
    address_space: tenant-a
    management_url: http://127.0.0.1:8161/console/jolokia
    management_user: tenant-a-admin
    management_password: "{{ vault_tenant_a_management_password }}"
    broker_name: tenant-a
    store: /srv/metrics
"""

RETURN = r"""
samples:
  description: Rows sampled, per record kind.
  returned: always
  type: dict
  sample: {"addresses": 12, "nodes": 2}
written:
  description: Rows written, per record kind (0 in check mode).
  returned: always
  type: dict
  sample: {"addresses": 12, "nodes": 2}
files:
  description: The files written (one per record kind and partition).
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/enmasse-messaging/metrics/addresses/date=2025-01-31/address_space=tenant-a/part-20250131T120000000000Z-broker1-3f2a9c1b7e4d.parquet"]
sources:
  description: Every node sampled, with the number of address rows it gave.
  returned: always
  type: list
  elements: dict
  sample: [{"node_kind": "broker", "node": "tenant-a", "address_space": "tenant-a", "addresses": 12}]
router:
  description: C(not configured), C(sampled) or C(failed).
  returned: always
  type: str
errors:
  description: The sources that could not be sampled and why.
  returned: always
  type: list
  elements: dict
summary:
  description:
    - What the samples say, per address space (addresses, stored messages, consumers,
      persistent bytes) and per node (memory, disk, connections, links, uptime).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.enmasse.messaging.plugins.module_utils import runner
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import secrets_of
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import EnmasseError
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import collect as metrics
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.store import HAS_PYARROW, PYARROW_IMPORT_ERROR
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import url_password


def main():
    d = metrics.COLLECT_DEFAULTS
    module = runner.new_module(
        dict(
            address_space=dict(type="str"),
            address_spaces=dict(type="list", elements="str"),
            spaces_dir=dict(type="path", default=d["spaces_dir"]),
            store=dict(type="str", default=d["store"]),
            infra=dict(type="str", default=d["infra"]),
            router_url=dict(type="str"),
            router_flavor=dict(type="str", default=d["router_flavor"], choices=["auto", "qdrouterd", "skrouterd"]),
            router_address_spaces=dict(type="list", elements="str", default=d["router_address_spaces"]),
            router_default_address_space=dict(type="str"),
            router_memory_max=dict(type="int"),
            router_page_size=dict(type="int", default=d["router_page_size"]),
            router_timeout=dict(type="int", default=d["router_timeout"]),
            router_sasl_mechanisms=dict(type="str"),
            router_ca_file=dict(type="path"),
            router_cert_file=dict(type="path"),
            router_key_file=dict(type="path"),
            router_verify_hostname=dict(type="bool", default=d["router_verify_hostname"]),
            fail_on_source_error=dict(type="bool", default=d["fail_on_source_error"]),
        ),
        mutually_exclusive=[("address_space", "address_spaces")],
    )
    runner.hide_secrets(module, url_password(module.params["router_url"]))
    if not HAS_PYARROW and not module.check_mode:
        module.fail_json(msg=missing_required_lib("pyarrow"), exception=str(PYARROW_IMPORT_ERROR))
    try:
        result = metrics.run(module.params, check_mode=module.check_mode,
                             on_connection=lambda conn: runner.hide_secrets(module, *secrets_of(conn)))
    except EnmasseError as e:
        errors = runner.error_list(e)
        module.fail_json(msg=runner.failure_message(errors), errors=errors, changed=False)
    failed = result.pop("failed")
    msg = result.pop("msg", None)
    if failed:
        module.fail_json(msg=msg, **result)
    for e in result["errors"]:
        module.warn("%s %s: %s" % (e["source"], e.get("address_space") or e.get("node"), e["error"]))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
