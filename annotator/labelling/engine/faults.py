"""Fault-injection points for the reliability tests; inert unless their variable is set.

``hold_point("APPLY")`` is called inside the label pipeline's transaction after the labels were
applied, ``hold_point("LABEL")`` inside the label request's transaction after the label row was
written. When ``ANNOTATOR_TEST_HOLD_<NAME>`` names a file, the process creates ``<file>.reached``
and waits while ``<file>`` exists (at most 120 s), so that a test can kill the process or its
database connection at exactly that point.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PREFIX = "ANNOTATOR_TEST_HOLD_"


def hold_point(name: str) -> None:
    """Wait at point ``name`` while the test's hold file exists (no-op when the variable is unset)."""
    hold = os.environ.get(PREFIX + name)
    if not hold:
        return
    Path(hold + ".reached").touch()
    deadline = time.monotonic() + 120
    while Path(hold).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
