# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the monitoring role.

* ``monitoring_scrape_configs``: Prometheus ``scrape_configs`` from the
  inventory's groups, one job per component (routers, brokers, keycloak,
  auth service, MQTT gateways). The one implementation of the target rule:
  a job scrapes ``<host>:<port>`` for every host of its group, sorted, each
  once; a job whose group is absent or empty is left out; ``https`` jobs
  verify with the collection CA; a job with a user authenticates with basic
  auth from a password file (the password itself never enters the config);
  a job with ``cert_file``/``key_file`` presents that client certificate
  (routers: the metrics listener demands one signed by the collection CA);
  a job with ``ports_var`` scrapes, on each host, every port listed in that
  host variable (brokers: ``broker_metrics_ports``, one per Artemis
  instance, published by the broker role; the auth service:
  ``auth_service_metrics_ports``, published by the auth_service role; the
  MQTT gateways: ``mqtt_gateway_metrics_ports``, one per instance, published
  by the mqtt_gateway role) instead of ``port``.

The documentation of each filter is in the sidecar ``<filter>.yml``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt

JOB_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]*$")
KEYS = {"name", "group", "port", "scheme", "metrics_path", "username", "password_file", "password_src", "ca_file",
        "cert_file", "key_file", "ports_var"}


def _job_errors(i, job):
    where = "monitoring_jobs[%d]" % i
    if not isinstance(job, dict):
        return ["%s: %s must be a mapping {name, group, port, ...}" % (where, fmt(job))]
    errors = ["%s.%s: unknown field (known: %s)" % (where, k, ", ".join(sorted(KEYS)))
              for k in sorted(set(job) - KEYS)]
    if not isinstance(job.get("name"), str) or not JOB_NAME.match(job["name"]):
        errors.append("%s.name: %s must be letters, digits, '_', '-'" % (where, fmt(job.get("name"))))
    if not isinstance(job.get("group"), str) or not job["group"]:
        errors.append("%s.group: %s must be an inventory group name" % (where, fmt(job.get("group"))))
    port = job.get("port")
    if "ports_var" in job:
        if not isinstance(job["ports_var"], str) or not JOB_NAME.match(job["ports_var"]):
            errors.append("%s.ports_var: %s must be a host variable name" % (where, fmt(job["ports_var"])))
        if "port" in job:
            errors.append("%s: port and ports_var exclude each other" % where)
    elif not _is_port(port):
        errors.append("%s.port: %s must be an integer 1-65535" % (where, fmt(port)))
    if job.get("scheme", "https") not in ("http", "https"):
        errors.append("%s.scheme: %s must be http or https" % (where, fmt(job.get("scheme"))))
    if job.get("scheme", "https") == "https" and not job.get("ca_file"):
        errors.append("%s.ca_file: an https job needs the CA file that verifies its targets" % where)
    if bool(job.get("username")) != bool(job.get("password_file")):
        errors.append("%s: username and password_file go together (basic auth)" % where)
    if bool(job.get("cert_file")) != bool(job.get("key_file")):
        errors.append("%s: cert_file and key_file go together (client certificate)" % where)
    if job.get("cert_file") and job.get("scheme", "https") != "https":
        errors.append("%s.cert_file: a client certificate needs scheme https" % where)
    if job.get("password_src") and not job.get("password_file"):
        errors.append("%s.password_src: needs password_file (where the role copies it)" % where)
    path = job.get("metrics_path", "/metrics")
    if not isinstance(path, str) or not path.startswith("/"):
        errors.append("%s.metrics_path: %s must start with '/'" % (where, fmt(path)))
    return errors


def _is_port(port):
    return not isinstance(port, bool) and isinstance(port, int) and 1 <= port <= 65535


def _targets(i, job, hosts, hostvars):
    """``(targets, errors)``: ``<host>:<port>`` for ``port``, or for every port
    of the host variable ``ports_var`` (a host without it has none)."""
    if "ports_var" not in job:
        return ["%s:%d" % (h, job["port"]) for h in hosts], []
    targets, errors = [], []
    for h in hosts:
        ports = (hostvars or {}).get(h, {}).get(job["ports_var"]) or []
        if not isinstance(ports, (list, tuple)):
            ports = [ports]
        for p in ports:
            p = int(p) if isinstance(p, str) and p.isdigit() else p
            if _is_port(p):
                targets.append("%s:%d" % (h, p))
            else:
                errors.append("monitoring_jobs[%d].ports_var: %s of host %s: %s is not a port 1-65535"
                              % (i, job["ports_var"], h, fmt(p)))
    return targets, errors


def _scrape_config(job, targets):
    out = {
        "job_name": job["name"],
        "scheme": job.get("scheme", "https"),
        "metrics_path": job.get("metrics_path", "/metrics"),
        "static_configs": [{"targets": targets}],
    }
    if out["scheme"] == "https":
        out["tls_config"] = {"ca_file": job["ca_file"]}
        if job.get("cert_file"):
            out["tls_config"].update(cert_file=job["cert_file"], key_file=job["key_file"])
    if job.get("username"):
        out["basic_auth"] = {"username": job["username"], "password_file": job["password_file"]}
    return out


def monitoring_scrape_configs(jobs, groups, hostvars=None):
    """Prometheus ``scrape_configs`` for ``jobs`` over the inventory ``groups``
    (``hostvars``: for the jobs with ``ports_var``)."""
    if not isinstance(jobs, (list, tuple)):
        raise AnsibleFilterError("monitoring_scrape_configs: monitoring_jobs: %s must be a list"
                                 % type(jobs).__name__)
    if not isinstance(groups, dict):
        raise AnsibleFilterError("monitoring_scrape_configs: groups: %s must be a mapping"
                                 % type(groups).__name__)
    errors, names, out = [], set(), []
    for i, job in enumerate(jobs):
        bad = _job_errors(i, job)
        if not bad and job["name"] in names:
            bad = ["monitoring_jobs[%d].name: %s is given twice" % (i, fmt(job["name"]))]
        errors.extend(bad)
        if bad:
            continue
        names.add(job["name"])
        targets, bad = _targets(i, job, sorted(set(groups.get(job["group"]) or [])), hostvars)
        errors.extend(bad)
        if targets:
            out.append(_scrape_config(job, targets))
    if errors:
        raise AnsibleFilterError("monitoring_scrape_configs: " + "; ".join(errors))
    return out


class FilterModule(object):
    def filters(self):
        return {"monitoring_scrape_configs": monitoring_scrape_configs}
