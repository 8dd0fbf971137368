"""A role's task files run by ansible-playbook on localhost (no systemd, no
container): the unit tier's one way to run a play and read each task's result
(the ansible.posix.json callback)."""
import json
import os
import subprocess
import sys


def run_book(tmp_path, book, inventory="localhost,", env=None):
    """Runs ``book`` (a list of plays); returns (stdout, [(task name, result)])."""
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(book))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_RETRY_FILES_ENABLED="False",
               **(env or {}))
    out = subprocess.run(["ansible-playbook", "-i", inventory, str(path),
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=300)
    data = json.loads(out.stdout[out.stdout.index("{"):])
    results = [(t["task"]["name"], h) for p in data["plays"] for t in p["tasks"] for h in t["hosts"].values()]
    return out.stdout, results


def role_play(tmp_path, role, tasks_from, variables, env=None):
    """The role's ``tasks_from`` (a file name or a list of them, in order)
    with ``variables``."""
    files = [tasks_from] if isinstance(tasks_from, str) else list(tasks_from)
    tasks = [{"name": "role %s" % f, "ansible.builtin.include_role": {
        "name": "enmasse.messaging.%s" % role, "tasks_from": f}, "vars": variables} for f in files]
    book = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": tasks}]
    return run_book(tmp_path, book, env=env)


def check_mode_content(tmp_path, role, tasks_from, variables, task, env=None):
    """What the task named ``task`` of the role's ``tasks_from`` would write
    (check mode with --diff: its diff's ``after``), with ``variables``."""
    book = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "check_mode": True,
             "tasks": [{"name": "role %s" % tasks_from, "ansible.builtin.include_role": {
                 "name": "enmasse.messaging.%s" % role, "tasks_from": tasks_from}, "vars": variables}]}]
    _out, results = run_book(tmp_path, book, env=dict(env or {}, ANSIBLE_DIFF_ALWAYS="True"))
    assert not failed(results), failed(results)
    written = [res for name, res in results if name.endswith(" : " + task)]
    assert len(written) == 1, results
    return written[0]["diff"][0]["after"]


def failed(results):
    return [(name, res) for name, res in results if res.get("failed")]


def changed(results):
    return [name for name, res in results if res.get("changed")]
