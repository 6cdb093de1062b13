"""CPU seconds used by groups of processes, read from ``/proc`` (Linux), for the load benchmark's
"what limits it": how many CPU milliseconds each part of the system spends per label."""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads); 0.0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's list), [] if it is gone."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return []
    return out


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    return seen


def named(command: str) -> list[int]:
    """Processes whose executable name (``/proc/<pid>/comm``) is ``command``, e.g. ``postgres``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == command:
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def snapshot(groups: dict[str, list[int]]) -> dict[int, float]:
    """CPU seconds of every process named in ``groups`` (name -> pids), by pid."""
    return {pid: process_cpu(pid) for pids in groups.values() for pid in pids}


def used(groups: dict[str, list[int]], before: dict[int, float], after: dict[int, float]) -> dict[str, float]:
    """CPU seconds each group used between two snapshots (a process started in between counts
    from zero)."""
    return {name: sum(after.get(p, 0.0) - before.get(p, 0.0) for p in pids) for name, pids in groups.items()}
