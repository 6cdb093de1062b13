"""The client package (``client/``) is imported from its source tree when it is not installed."""

from __future__ import annotations

import sys

from tests.support.app import ROOT

try:
    import annotator_client  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "client" / "src"))
