"""A brokered address space on a test broker (conftest.py's ``space``
fixture and the tests that make their own), and ways to drive it. A module
of its own: a test must not import from ``conftest`` (the directory
tests/integration/kubernetes has a conftest too; which one ``import
conftest`` finds depends on the collection order)."""

import amqp_checks
import helpers


class Space(object):
    """A brokered address space on the test broker, and ways to drive it."""

    def __init__(self, broker, name, connection_file):
        self.broker = broker
        self.name = name
        self.connection_file = connection_file
        self.baseline = None

    def args(self, **extra):
        out = {"connection_file": self.connection_file, "address_space": self.name}
        out.update(extra)
        return out

    def run(self, module, check_mode=False, diff=False, **args):
        """Run ``enmasse.messaging.<module>`` against this space."""
        if module in ("address_space", "address_space_info"):
            base = {"connection_file": self.connection_file, "name": self.name}
            base.update(args)
        else:
            base = self.args(**args)
        return helpers.run_module(module, base, check_mode=check_mode, diff=diff)

    def converge(self, addresses, **args):
        """Create the space (recorded in the ledger) and converge ``addresses``;
        fails the test if either module fails."""
        res = self.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN)
        assert not res.failed, res
        res = self.run("address", addresses=addresses, **args)
        assert not res.failed, res
        return res

    def amqp_config(self, **overrides):
        overrides.setdefault("url", self.broker.amqp_url())
        return amqp_checks.config(**overrides)

    def snapshot(self, settings_for=()):
        return self.broker.snapshot(settings_for)
