"""Shared test fixtures; the rules for outside resources (datasets, PostgreSQL + Redis) are in
:mod:`tests.support.resources` and every helper tests share is in :mod:`tests.support`."""

from __future__ import annotations

import pytest

from tests.support.resources import absent, services_problem


@pytest.fixture(scope="session")
def services() -> None:
    """Request FIRST in service-backed tests: skip (laptop) or fail (CI) without PostgreSQL + Redis."""
    problem = services_problem()
    if problem is not None:
        absent(problem)


@pytest.fixture(scope="session", autouse=True)
def _remove_test_run_folder():
    """Delete this run's broker/temporary folder (tests/settings.py) at the end of the session."""
    yield
    import shutil

    from django.conf import settings

    if settings.VAR_DIR.name.startswith("annotator-test-"):
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty Django cache (the default, per process): the dashboard caches
    by a fingerprint of primary keys, which the next test's rolled-back database hands out again."""
    from django.core.cache import cache

    cache.clear()


# the Chromium fixture of the browser tests
from tests.support.browser import axe_page, chromium_page  # noqa: E402, F401
