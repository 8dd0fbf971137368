"""The day2_loop role rendered by ansible-playbook on localhost into a
temporary directory (prereqs.yml, files.yml, uninstall.yml; no systemd
needed): the oneshot service runs the loop playbook under flock -n with the
variables file, the timer's schedule, the variables file (0600, no_log,
report by default), the handlers (the timer restarts only when its unit
changed), bad inputs refused before any file is written, state absent
removes everything; systemd-analyze verify on the rendered units."""
import os
import shutil
import subprocess

import pytest
import yaml

from role_play import failed, role_play

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or "/usr/bin/ansible-playbook"


FAKE_SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/systemctl.log"
case "$1" in show) printf 'Id=%s\\nLoadState=loaded\\nActiveState=active\\nSubState=waiting\\nUnitFileState=enabled\\n' "$2";; esac
"""


def systemctl_calls(tmp_path):
    log = tmp_path / "bin" / "systemctl.log"
    calls = log.read_text().splitlines() if log.exists() else []
    if log.exists():
        log.unlink()
    return [c for c in calls if not c.startswith("show")]


def play(tmp_path, task_files, variables):
    # the handlers' systemctl: a script logging its arguments (this machine has no running systemd)
    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "bin" / "systemctl").write_text(FAKE_SYSTEMCTL)
    (tmp_path / "bin" / "systemctl").chmod(0o755)
    return role_play(tmp_path, "day2_loop", task_files, variables,
                     env={"PATH": "%s:%s" % (tmp_path / "bin", os.environ["PATH"])})


def loop_vars(tmp_path, **extra):
    (tmp_path / "units").mkdir(exist_ok=True)
    v = {"day2_loop_inventory": "/etc/enmasse/inventory.yml",
         "day2_loop_config_dir": str(tmp_path / "etc"),
         "day2_loop_state_dir": str(tmp_path / "state"),
         "day2_loop_unit_dir": str(tmp_path / "units"),
         "day2_loop_ansible_playbook": ANSIBLE_PLAYBOOK}
    v.update(extra)
    return v


def ran(results, name):
    return [res for n, res in results if n.endswith(" : " + name)]


def unit(path):
    """The unit's keys -> list of values (systemd allows repeated keys)."""
    keys = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            k, v = line.split("=", 1)
            keys.setdefault(k, []).append(v)
    return keys


def test_defaults_render_a_report_loop_under_flock_with_a_0600_vars_file(tmp_path):
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path))
    assert not failed(results), failed(results)
    svc = unit(tmp_path / "units" / "enmasse-loop.service")
    lock = str(tmp_path / "state" / "loop.lock")
    varsfile = str(tmp_path / "etc" / "loop-vars.yml")
    assert svc["Type"] == ["oneshot"]
    assert svc["ExecStart"] == ["/usr/bin/flock -n -E 75 %s %s -i /etc/enmasse/inventory.yml "
                                "enmasse.messaging.capacity_loop -e @%s" % (lock, ANSIBLE_PLAYBOOK, varsfile)]
    assert svc["SuccessExitStatus"] == ["75"]
    for key, value in (("NoNewPrivileges", "yes"), ("ProtectSystem", "full"), ("PrivateTmp", "yes"),
                       ("ProtectHome", "read-only"), ("StandardOutput", "journal"),
                       ("ReadWritePaths", str(tmp_path / "state")), ("CapabilityBoundingSet", "")):
        assert svc[key] == [value], key
    timer = unit(tmp_path / "units" / "enmasse-loop.timer")
    assert timer["OnUnitInactiveSec"] == ["1h"] and timer["OnActiveSec"] == ["15min"]
    assert "OnCalendar" not in timer and timer["Unit"] == ["enmasse-loop.service"]
    # the variables: report by default, the guardrails, the report directory; 0600; never printed
    st = os.stat(varsfile)
    assert oct(st.st_mode & 0o777) == "0o600"
    assert oct(os.stat(str(tmp_path / "etc")).st_mode & 0o777) == "0o700"
    doc = yaml.safe_load(open(varsfile))
    assert doc == {"day2_mode": "report", "day2_max_hosts_changed": 1, "day2_max_moves": 20,
                   "day2_max_bytes_moved": 0, "day2_cooldown": 3600, "day2_min_brokers": 2,
                   "day2_min_routers": 2, "day2_plan_max_age": 7200, "day2_min_valid_window_ratio": 0.9,
                   "capacity_report_dir": str(tmp_path / "state" / "reports"),
                   "day2_metrics_file": str(tmp_path / "state" / "metrics" / "enmasse_loop.prom")}
    assert oct(os.stat(str(tmp_path / "state")).st_mode & 0o777) == "0o711"  # the node exporter reaches metrics/
    written = ran(results, "Write the playbook's variables (mode, guardrails, extra variables)")
    assert written and written[0]["censored"].startswith("the output has been hidden")
    # the variables are not in the unit
    assert "day2_mode" not in (tmp_path / "units" / "enmasse-loop.service").read_text()
    assert systemctl_calls(tmp_path) == ["daemon-reload", "restart enmasse-loop.timer"]


def test_apply_mode_guardrails_calendar_and_extra_vars_and_the_timer_restart(tmp_path):
    extra = {"apply_plan_infra": "prod", "capacity_planner_secret": "s3cret-value"}
    v = loop_vars(tmp_path, day2_loop_mode="apply", day2_loop_max_moves=5, day2_loop_cooldown=600,
                  day2_loop_min_brokers=3, day2_loop_max_bytes_moved=1048576,
                  day2_loop_on_calendar="*-*-* 02:00:00", day2_loop_extra_vars=extra,
                  day2_loop_playbook="/opt/collections/enmasse/messaging/playbooks/capacity_loop.yml")
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not failed(results), failed(results)
    assert "s3cret-value" not in out
    doc = yaml.safe_load((tmp_path / "etc" / "loop-vars.yml").read_text())
    assert doc["day2_mode"] == "apply" and doc["day2_max_moves"] == 5 and doc["day2_cooldown"] == 600
    assert doc["day2_min_brokers"] == 3 and doc["day2_max_bytes_moved"] == 1048576
    assert doc["apply_plan_infra"] == "prod" and doc["capacity_planner_secret"] == "s3cret-value"
    assert "s3cret-value" not in (tmp_path / "units" / "enmasse-loop.service").read_text()
    svc = unit(tmp_path / "units" / "enmasse-loop.service")
    assert " /opt/collections/enmasse/messaging/playbooks/capacity_loop.yml -e @" in svc["ExecStart"][0]
    timer = unit(tmp_path / "units" / "enmasse-loop.timer")
    assert timer["OnCalendar"] == ["*-*-* 02:00:00"] and timer["Persistent"] == ["true"]
    assert "OnUnitInactiveSec" not in timer

    systemctl_calls(tmp_path)
    # only the mode changes: the variables file and the service's description, not the timer -> no restart
    v["day2_loop_mode"] = "report"
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not failed(results), failed(results)
    assert systemctl_calls(tmp_path) == ["daemon-reload"]
    assert yaml.safe_load((tmp_path / "etc" / "loop-vars.yml").read_text())["day2_mode"] == "report"
    # the same again: nothing changes, no handler
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not [n for n, r in results if r.get("changed")]
    assert systemctl_calls(tmp_path) == []
    # a new interval changes the timer: it restarts
    v.update(day2_loop_on_calendar="", day2_loop_interval="30min")
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert systemctl_calls(tmp_path) == ["daemon-reload", "restart enmasse-loop.timer"]
    assert unit(tmp_path / "units" / "enmasse-loop.timer")["OnUnitInactiveSec"] == ["30min"]


def test_the_alert_guardrail_and_a_metrics_file_elsewhere_go_to_the_playbook_and_the_unit(tmp_path):
    v = loop_vars(tmp_path, day2_loop_alertmanager_url="http://monitor:9093", day2_loop_alertmanager_user="loop",
                  day2_loop_alertmanager_password="am-s3cret", day2_loop_alert_severities=["critical", "page"],
                  day2_loop_metrics_file=str(tmp_path / "node-exporter" / "enmasse_loop.prom"))
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not failed(results), failed(results)
    assert "am-s3cret" not in out
    doc = yaml.safe_load((tmp_path / "etc" / "loop-vars.yml").read_text())
    assert {k: doc[k] for k in doc if k.startswith("apply_plan_")} == {
        "apply_plan_alertmanager_url": "http://monitor:9093", "apply_plan_alertmanager_user": "loop",
        "apply_plan_alertmanager_password": "am-s3cret", "apply_plan_alertmanager_ca_file": "",
        "apply_plan_alert_severities": ["critical", "page"]}
    # metrics outside the state directory: their directory is writable for the service, the state stays 0700
    assert doc["day2_metrics_file"] == str(tmp_path / "node-exporter" / "enmasse_loop.prom")
    assert unit(tmp_path / "units" / "enmasse-loop.service")["ReadWritePaths"] == [
        "%s %s" % (tmp_path / "state", tmp_path / "node-exporter")]
    assert oct(os.stat(str(tmp_path / "state")).st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("field,value,rule", [
    ("day2_loop_mode", "yolo", "mode report or apply (got yolo)"),
    ("day2_loop_interval", "soon", "(got soon, 15min, 3h)"),
    ("day2_loop_inventory", "inventory.yml", "day2_loop_inventory: must be the absolute path"),
    ("day2_loop_max_moves", -1, "integers >= 0 (got 1, -1,"),
    ("day2_loop_min_brokers", 0, "min_routers integers >= 1 (got 7200, 0, 2)"),
    ("day2_loop_min_valid_window_ratio", 1.5, "a number in 0..1 (got 1.5)"),
    ("day2_loop_playbook", "capacity_loop.yml", "(got capacity_loop.yml)"),
    ("day2_loop_inventory_file", "inventory.yml", "inventory_file the same, ending .yml or .yaml, or empty (got inventory.yml)"),
    ("day2_loop_inventory_file", "/var/lib/enmasse-loop/inventory.ini", "(got /var/lib/enmasse-loop/inventory.ini)"),
    ("day2_loop_inventory_file", "/var/lib/%n/inventory.yml", "(got /var/lib/%n/inventory.yml)"),
])
def test_bad_inputs_are_refused_before_any_file_is_written(tmp_path, field, value, rule):
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path, **{field: value}))
    bad = failed(results)
    assert bad and " : Check " in bad[0][0], bad
    assert rule in bad[0][1]["msg"], bad[0][1]["msg"]
    assert os.listdir(str(tmp_path / "units")) == [] and not (tmp_path / "etc").exists()


def test_state_absent_removes_everything(tmp_path):
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path))
    assert not failed(results)
    (tmp_path / "state" / "reports").mkdir()
    systemctl_calls(tmp_path)
    out, results = play(tmp_path, ["prereqs.yml", "uninstall.yml"],
                        loop_vars(tmp_path, day2_loop_state="absent", day2_loop_inventory=""))
    assert not failed(results), failed(results)
    calls = systemctl_calls(tmp_path)
    assert "stop enmasse-loop.timer" in " ".join(calls) and "daemon-reload" in calls, calls
    assert sorted(os.listdir(str(tmp_path / "units"))) == []
    assert not (tmp_path / "etc").exists() and not (tmp_path / "state").exists()


def test_systemd_analyze_verify_accepts_the_units(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.skip("no ansible-playbook program to name in ExecStart")
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path))
    assert not failed(results)
    units = tmp_path / "units"
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(units / "enmasse-loop.service"),
                          str(units / "enmasse-loop.timer")],
                         capture_output=True, text=True, check=False, timeout=60,
                         env=dict(os.environ, SYSTEMD_LOG_LEVEL="warning"))
    problems = [line for line in (res.stdout + res.stderr).splitlines()
                if "enmasse-loop" in line and "AssertPathExists" not in line]
    assert res.returncode == 0 and not problems, res.stdout + res.stderr


def stop_post(command, service_result):
    """Run the unit's ExecStopPost command as systemd would after a run: the "-" prefix dropped, $$ -> $
    (the command has no % specifier and no backslash, so the rest of systemd's quoting is the shell's),
    SERVICE_RESULT in the environment, the unit's UMask=0077."""
    assert command.startswith("-/bin/sh -c '") and command.endswith("'") and "%" not in command and "\\" not in command
    script = command[len("-/bin/sh -c '"):-1].replace("$$", "$")
    assert "'" not in script
    return subprocess.run(["/bin/sh", "-c", "umask 0077; " + script], env={"PATH": os.environ["PATH"],
                          "SERVICE_RESULT": service_result}, capture_output=True, text=True, check=True, timeout=30)


def test_every_run_writes_whether_it_failed_beside_the_metrics(tmp_path):
    """ExecStopPost (docs/capacity-loop.md "Metrics"): enmasse_loop_last_run_failed 1 after a failed run
    (which writes none of the loop's metrics), 0 after a successful one; 0644 for the node exporter; none
    without a metrics file."""
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path))
    assert not failed(results), failed(results)
    post = unit(tmp_path / "units" / "enmasse-loop.service")["ExecStopPost"]
    assert len(post) == 1
    result = tmp_path / "state" / "metrics" / "enmasse_loop_service.prom"
    for service_result, value in (("exit-code", "1"), ("timeout", "1"), ("signal", "1"), ("success", "0")):
        stop_post(post[0], service_result)
        text = result.read_text()
        assert text.splitlines()[-1] == "enmasse_loop_last_run_failed " + value, (service_result, text)
        assert oct(os.stat(str(result)).st_mode & 0o777) == "0o644"
        assert os.listdir(str(result.parent)) == ["enmasse_loop_service.prom"]  # no temporary file left
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path, day2_loop_metrics_file=""))
    assert not failed(results), failed(results)
    assert "ExecStopPost" not in unit(tmp_path / "units" / "enmasse-loop.service")


def test_a_metrics_file_path_that_the_shell_would_read_is_refused(tmp_path):
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path, day2_loop_metrics_file="/x/a'b.prom"))
    bad = failed(results)
    assert bad and "letters, digits and ._+@,:/- only" in bad[0][1]["msg"], bad


def test_the_loops_inventory_file_is_a_second_inventory_of_every_run(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_inventory
    inv = tmp_path / "state" / "inventory.yml"
    v = loop_vars(tmp_path, day2_loop_mode="apply", day2_loop_inventory_file=str(inv))
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not failed(results), failed(results)
    svc = unit(tmp_path / "units" / "enmasse-loop.service")
    assert " -i /etc/enmasse/inventory.yml -i %s enmasse.messaging.capacity_loop -e @" % inv in svc["ExecStart"][0]
    assert svc["ReadWritePaths"] == [str(tmp_path / "state")]
    doc = yaml.safe_load((tmp_path / "etc" / "loop-vars.yml").read_text())
    assert doc["apply_plan_inventory_file"] == str(inv)
    # created empty, in the module's own words (it parses as an inventory), 0644; never overwritten
    assert inv.read_text() == loop_inventory.render({}) and oct(inv.stat().st_mode & 0o777) == "0o644"
    inv.write_text(loop_inventory.render({"brokers": ["spare-1"]}))
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], v)
    assert not [n for n, r in results if r.get("changed")] and "spare-1" in inv.read_text()

    # day2_loop_state absent is refused while the file lists a host, naming it; nothing is removed
    absent = loop_vars(tmp_path, day2_loop_state="absent", day2_loop_inventory="/etc/enmasse/inventory.yml",
                       day2_loop_inventory_file=str(inv))
    out, results = play(tmp_path, ["prereqs.yml", "uninstall.yml"], absent)
    bad = failed(results)
    assert bad and "lists spare-1 in the group brokers" in bad[0][1]["msg"], bad
    assert inv.exists() and (tmp_path / "units" / "enmasse-loop.service").exists()
    inv.write_text(loop_inventory.render({}))
    out, results = play(tmp_path, ["prereqs.yml", "uninstall.yml"], absent)
    assert not failed(results) and not (tmp_path / "state").exists()


def test_a_loop_inventory_file_elsewhere_is_writable_for_the_service_and_off_by_default(tmp_path):
    inv = tmp_path / "loop-inventory" / "inventory.yml"
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path, day2_loop_inventory_file=str(inv)))
    assert not failed(results), failed(results)
    assert unit(tmp_path / "units" / "enmasse-loop.service")["ReadWritePaths"] == [
        "%s %s" % (tmp_path / "state", tmp_path / "loop-inventory")]
    assert inv.exists() and oct((tmp_path / "loop-inventory").stat().st_mode & 0o777) == "0o755"
    out, results = play(tmp_path, ["prereqs.yml", "files.yml"], loop_vars(tmp_path))
    assert " -i " + str(inv) not in unit(tmp_path / "units" / "enmasse-loop.service")["ExecStart"][0]
    assert "apply_plan_inventory_file" not in (tmp_path / "etc" / "loop-vars.yml").read_text()
