"""Everything under tests/unit is the unit tier (``-m unit``): pure Python,
no external component, no AMQP library."""
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/tests/unit/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.unit)
