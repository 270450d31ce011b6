"""The suite's own machinery: what the tests rely on to run once per worker."""
from __future__ import annotations

import os

import pytest


@pytest.mark.xdist_group("test_suite")
def test_xdist_groups_keep_their_tests_on_one_worker(request: pytest.FixtureRequest) -> None:
    """pytest-xdist's loadgroup sends a group's tests to one worker by a `@group` suffix on their ids: the modules
    whose module fixtures take seconds, and the tests that share the corpus cache, rely on it. A pytest that ignores
    the suffix splits them silently (pytest 9.2 with pytest-xdist 3.8)."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not request.config.getvalue("loadgroup"):
        pytest.skip("not run by pytest-xdist's loadgroup")
    assert request.node.nodeid.endswith("@test_suite"), request.node.nodeid
