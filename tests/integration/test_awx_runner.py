"""A job as AWX / Automation Controller runs it: ansible-runner on a private
data directory with the project (a playbook that imports
enmasse.messaging.addresses, and the collection installed from the built
tarball through the project's collections/requirements.yml, as a project sync
does), an inventory, the extra vars a job gets from the survey
(extensions/awx/survey_addresses.json) and from the custom credential type
(extensions/awx/credential_type_management.yml), and runner settings.

Against a real Artemis: the job converges the addresses, a real AMQP client
sends and receives on a queue the survey declared, the management password
appears nowhere in the job's output, and the same job again changes nothing."""

import json
import os
import subprocess
import sys

import ansible_runner
import jinja2.sandbox
import pytest
import yaml

import helpers

pytestmark = [pytest.mark.integration, pytest.mark.awx]

REPO = helpers.REPO
AWX = os.path.join(REPO, "extensions", "awx")
HOST = "broker-1"
# the answer to the survey's address list question: its default plus our own
EXTRA_ADDRESSES = ("- {address: awx-dlq, type: deadletter, plan: brokered-deadletter}\n"
                   "- {address: awx-jobs, type: queue, plan: brokered-queue, deadletter: awx-dlq}\n")


def _path_env():
    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


@pytest.fixture(scope="module")
def collection_tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("tarball")
    env = dict(os.environ, PATH=_path_env())
    proc = subprocess.run(["ansible-galaxy", "collection", "build", "--output-path", str(out), REPO],
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [name] = [n for n in os.listdir(str(out)) if n.endswith(".tar.gz")]
    return os.path.join(str(out), name)


def survey_answers(space_name):
    """The extra vars the survey gives: the space's name, the address list
    as the textarea's text, the prune choice (strings, as AWX sends them)."""
    with open(os.path.join(AWX, "survey_addresses.json")) as f:
        spec = json.load(f)["spec"]
    by_type = dict((q["type"], q) for q in spec)
    return {
        by_type["text"]["variable"]: space_name,
        by_type["textarea"]["variable"]: by_type["textarea"]["default"] + EXTRA_ADDRESSES,
        by_type["multiplechoice"]["variable"]: by_type["multiplechoice"]["default"],
    }, by_type["textarea"]["variable"]


def credential_extra_vars(inputs):
    """The credential type's extra_vars injector rendered as AWX does (Jinja
    in a sandbox, with the credential's inputs)."""
    with open(os.path.join(AWX, "credential_type_management.yml")) as f:
        ct = yaml.safe_load(f)
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    return dict((k, env.from_string(v).render(**inputs)) for k, v in ct["injectors"]["extra_vars"].items())


def write_job(pdd, tarball, spaces_dir, extravars):
    project = os.path.join(pdd, "project")
    collections = os.path.join(project, "collections")
    os.makedirs(collections)
    for d in ("inventory", "env"):
        os.makedirs(os.path.join(pdd, d))
    with open(os.path.join(project, "addresses.yml"), "w") as f:
        f.write("---\n- name: Addresses of an address space\n"
                "  ansible.builtin.import_playbook: enmasse.messaging.addresses\n")
    # what a project sync does with collections/requirements.yml
    with open(os.path.join(collections, "requirements.yml"), "w") as f:
        yaml.safe_dump({"collections": [{"name": tarball, "type": "file"}]}, f)
    # only the project's collections count (not a copy in ~/.ansible/collections)
    env = dict(os.environ, PATH=_path_env(), ANSIBLE_COLLECTIONS_PATH=collections)
    proc = subprocess.run(["ansible-galaxy", "collection", "install", "--force",
                           "-r", os.path.join(collections, "requirements.yml"), "-p", collections],
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.path.isfile(os.path.join(collections, "ansible_collections", "enmasse", "messaging", "MANIFEST.json"))
    with open(os.path.join(pdd, "inventory", "hosts"), "w") as f:
        f.write("[brokers]\n%s ansible_connection=local ansible_python_interpreter=%s enmasse_spaces_dir=%s\n"
                % (HOST, sys.executable, spaces_dir))
    with open(os.path.join(pdd, "env", "extravars"), "w") as f:
        json.dump(extravars, f)
    with open(os.path.join(pdd, "env", "settings"), "w") as f:
        json.dump({"job_timeout": 600, "idle_timeout": 300}, f)
    with open(os.path.join(pdd, "env", "envvars"), "w") as f:
        # only the project's collections, not the checkout the other tests use
        json.dump({"ANSIBLE_COLLECTIONS_PATH": collections, "ANSIBLE_LOCALHOST_WARNING": "False",
                   "ANSIBLE_NOCOLOR": "1"}, f)


def run_job(pdd, ident):
    r = ansible_runner.run(private_data_dir=pdd, playbook="addresses.yml", ident=ident, quiet=True)
    stdout = r.stdout.read()
    assert r.status == "successful" and r.rc == 0, (r.status, r.rc, stdout[-4000:])
    events_dir = os.path.join(pdd, "artifacts", ident, "job_events")
    assert os.path.isdir(events_dir) and os.listdir(events_dir), events_dir
    return r


def task_result(r, task, pdd):
    found = [e["event_data"] for e in r.events
             if e["event"] == "runner_on_ok" and e["event_data"].get("task") == task]
    assert len(found) == 1, "task %r: %d results" % (task, len(found))
    # the playbook of the collection installed in the project, not of the checkout
    installed = os.path.join(pdd, "project", "collections", "ansible_collections", "enmasse", "messaging", "")
    assert found[0]["task_path"].startswith(installed), found[0]["task_path"]
    return found[0]["res"]


def job_output(pdd, ident):
    """Everything the job left in its artifacts (stdout and job events)."""
    out = []
    for root, _dirs, files in os.walk(os.path.join(pdd, "artifacts", ident)):
        for fn in files:
            with open(os.path.join(root, fn), errors="replace") as f:
                out.append(f.read())
    return "\n".join(out)


def test_job_template_converges_survey_addresses_and_amqp_works(space, tmp_path, monkeypatch, collection_tarball):
    broker = space.broker
    monkeypatch.setenv("PATH", _path_env())
    # The space exists (site.yml made it): its connection file is on the broker
    # host, here without the management secrets, which the credential gives.
    spaces_dir = tmp_path / "spaces"
    spaces_dir.mkdir()
    conn = broker.connection(space.name)
    del conn["management_user"], conn["management_password"]
    (spaces_dir / ("%s.json" % space.name)).write_text(json.dumps(conn))

    answers, addresses_var = survey_answers(space.name)
    creds = credential_extra_vars({"management_user": broker.management_user,
                                   "management_password": broker.management_password})
    assert not set(answers) & set(creds)
    pdd = str(tmp_path / "job")
    write_job(pdd, collection_tarball, str(spaces_dir), dict(answers, **creds))
    wanted = yaml.safe_load(answers[addresses_var])
    names = sorted(a["address"] for a in wanted)

    r = run_job(pdd, "job-1")
    res = task_result(r, "Converge the addresses", pdd)
    assert res["changed"] is True
    assert sorted(res["changes"]["created"]) == names
    assert r.stats["changed"].get(HOST, 0) >= 1 and not r.stats["failures"]
    assert set(names) - {a["address"] for a in wanted if a["type"] == "subscription"} <= set(broker.address_names())
    assert broker.management_password not in job_output(pdd, "job-1")

    # a real AMQP 1.0 client (the messaging user) on a queue the survey declared
    queue = [a["address"] for a in wanted if a["type"] == "queue"][-1]
    with helpers.connection(space.amqp_config()) as c:
        sent = helpers.send(c, queue, 5, durable=True)
        rcv = c.create_receiver(queue, credit=10)
        got = helpers.receive_ids(rcv, sent, 10)
        rcv.close()
    assert sorted(got) == sorted(sent)

    # the same job again: nothing to do
    r2 = run_job(pdd, "job-2")
    res2 = task_result(r2, "Converge the addresses", pdd)
    assert res2["changed"] is False
    assert res2["changes"] == {"created": [], "updated": [], "deleted": []}
    assert r2.stats["changed"].get(HOST, 0) == 0 and not r2.stats["failures"], r2.stats
    assert broker.management_password not in job_output(pdd, "job-2")
