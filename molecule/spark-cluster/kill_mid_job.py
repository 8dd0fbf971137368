"""Kill a worker (SIGKILL, the worker and its executor) while the planning
job has tasks running on the executors; run on the controller.

    kill_mid_job.py <driver container> <worker container> [timeout seconds]

Polls the job's progress file in the driver's container (podman exec, about
every 0.2 s: an Ansible slurp loop took ~2 s a round on a loaded machine and
missed a 9 s phase) until an aggregation phase has tasks running, then kills
the worker at once. Prints the snapshot it acted on. Exit 0 when the worker
was killed mid-job, 1 when the job ended (or the timeout passed) first.
"""
import json
import subprocess
import sys
import time

PROGRESS = "/var/lib/enmasse-capacity/progress.json"


def snapshot(driver):
    proc = subprocess.run(["podman", "exec", driver, "cat", PROGRESS], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return None


def running_on_executors(snap):
    return (snap.get("state") == "running" and (snap.get("phase") or "").startswith("aggregate")
            and sum(s.get("running", 0) for s in snap.get("stages") or []) > 0)


def main(driver, worker, timeout=300.0):
    deadline = time.time() + timeout
    snap = None
    while time.time() < deadline:
        snap = snapshot(driver)
        if snap is not None and snap.get("state") in ("done", "failed"):
            break
        if snap is not None and running_on_executors(snap):
            subprocess.run(["podman", "exec", worker, "systemctl", "kill", "--signal=SIGKILL",
                            "enmasse-spark-worker.service"], check=True)
            # the run's id while it runs (systemd forgets a oneshot's when it ends)
            inv = subprocess.run(["podman", "exec", driver, "systemctl", "show", "-p", "InvocationID", "--value",
                                  "enmasse-capacity-plan.service"], capture_output=True, text=True, check=False)
            print(json.dumps({"killed": worker, "invocation_id": inv.stdout.strip(), "progress": snap}, indent=2))
            return 0
        time.sleep(0.2)
    print(json.dumps({"killed": None, "reason": "the job ended or %ss passed before tasks ran on the executors"
                      % timeout, "progress": snap}, indent=2))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *[float(a) for a in sys.argv[3:4]]))
