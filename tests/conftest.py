"""Shared test fixtures and the rules for tests that need outside resources.

* ``../shared/datasets`` (real data): tests marked ``datasets`` use :func:`shared_dataset`,
  which skips with a clear message when the folder is absent outside CI and fails in CI.
* PostgreSQL and Redis: tests marked ``services`` must fail, not skip, when
  ``REQUIRE_SERVICES=1`` (set by ``.ci/run``) and the services are unreachable.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def services_required() -> bool:
    """True when service-backed tests must fail rather than skip (CI)."""
    return os.environ.get("REQUIRE_SERVICES") == "1" or os.environ.get("CI") == "true"


def shared_dataset(relative: str) -> Path:
    """Path of a file under ``../shared/datasets``; skip (laptop) or fail (CI) when missing."""
    path = DATASETS / relative
    if not path.exists():
        message = f"dataset {path} is missing (the ../shared/datasets folder is not beside the repo)"
        if services_required():
            pytest.fail(message)
        pytest.skip(message)
    return path
