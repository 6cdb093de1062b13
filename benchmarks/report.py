"""The closing lines of a benchmark's Markdown report: wall time and the machine's load (the
machine is shared, so every figure is written beside the load it was measured under)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def write(name: str, lines: list[str], started: float, load_at_start: float) -> None:
    """Append the wall time since ``started`` (``time.monotonic()``) and the 1-minute load average
    at the start and now to ``lines``, write them to ``benchmarks/<name>`` and print them."""
    lines = [*lines, "", f"Wall time {time.monotonic() - started:.0f} s; load average {load_at_start:.1f} at "
             f"the start, {os.getloadavg()[0]:.1f} at the end (1 min, 2 cores shared)."]
    Path(__file__).with_name(name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
