"""CPU seconds used by groups of processes and by the whole machine, read from ``/proc`` (Linux),
for the load benchmark's "what limits it": how many CPU milliseconds each part of the system
spends per label, and how busy the cores were."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads); None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
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


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from ``/proc/stat`` (busy = all but
    idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuMeter(threading.Thread):
    """Samples, every ``period`` seconds from :meth:`start` to :meth:`finish`, the CPU seconds of
    the processes ``groups()`` names (group name -> pids; called at every sample, so processes
    that start later are found).

    A process seen at the first sample counts from its reading then, a later one from zero (it
    started inside the window); a process that exits keeps its last reading, so it loses at most
    ``period`` of CPU. (Reading only at both ends subtracted the whole lifetime of a process that
    exited in between, e.g. a PostgreSQL backend whose connection reached its maximum age.)
    """

    def __init__(self, groups: Callable[[], dict[str, list[int]]], period: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.groups, self.period = groups, period
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.group_of: dict[int, str] = {}
        self.done = threading.Event()
        self.machine_start = machine_ticks()
        self.sample(initial=True)

    def sample(self, initial: bool = False) -> None:
        for name, pids in self.groups().items():
            for pid in pids:
                cpu = process_cpu(pid)
                if cpu is None:
                    continue
                self.group_of.setdefault(pid, name)
                self.first.setdefault(pid, cpu if initial else 0.0)
                self.last[pid] = cpu

    def run(self) -> None:
        while not self.done.wait(self.period):
            self.sample()

    def finish(self) -> tuple[dict[str, float], float]:
        """Stop sampling; returns (CPU seconds used by each group, machine busy fraction 0..1)."""
        self.done.set()
        self.join()
        self.sample()
        busy, total = (end - start for end, start in zip(machine_ticks(), self.machine_start, strict=True))
        used = dict.fromkeys(self.groups(), 0.0)
        for pid, name in self.group_of.items():
            used[name] += self.last[pid] - self.first[pid]
        return used, busy / max(1, total)
