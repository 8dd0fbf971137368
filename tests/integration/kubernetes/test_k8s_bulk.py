"""10,000 Address objects in one namespace converged by one task, then the
same task again (nothing applied), then one changed among them. A test of
behaviour: the timings are the benchmark's (bench/kubernetes/run.py,
docs/benchmarks.md)."""

N = 10000


def addresses(n=N, changed=None):
    out = [{"address": "queue-%05d" % i, "type": "queue", "plan": "bulk-queue"} for i in range(n)]
    if changed is not None:
        out[changed]["message_ttl"] = {"maximum": 30000}
    return out


def test_ten_thousand_addresses_in_one_task(ns):
    # plans that allow 10,000 queues, made with the plan modules
    space = ns
    assert not ns.run("address_plan", name="bulk-queue", address_type="queue", resources={"broker": 0.0001}).failed
    assert not ns.run("address_space_plan", name="bulk", address_space_type="brokered",
                      resource_limits={"broker": 1000}, address_plans=["bulk-queue"]).failed
    assert not ns.run("address_space", name="shop", type="brokered", plan="bulk").failed
    first = space.run("address", address_space="shop", addresses=addresses())
    assert not first.failed, first.msg
    assert first.changed and len(first["changes"]["created"]) == N
    assert len(first["addresses"]) == N  # the changed ones (return_addresses defaults to changed in bulk)
    live = space.addresses()
    assert len(live) == N and all(o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "enmasse.messaging"
                                  for o in live.values())
    again = space.run("address", address_space="shop", addresses=addresses())
    assert not again.failed and not again.changed and again["addresses"] == [], again.msg
    one = space.run("address", address_space="shop", addresses=addresses(changed=1234))
    assert one["changes"] == {"created": [], "updated": ["queue-01234"], "deleted": []}, one.msg
    assert space.addresses()["queue-01234"]["spec"]["messageTtl"] == {"maximum": 30000}
