"""The load benchmark's CPU accounting (harness/cpu_usage.py) on real processes: a process
that exits inside the window keeps the CPU it used there, and one that had used CPU before the
window is not charged for it (reading only at both ends once subtracted a whole lifetime)."""

from __future__ import annotations

import subprocess
import sys
import time

from harness.cpu_usage import CpuMeter, machine_ticks

BURN = ("import sys, time\nt = time.process_time()\n"
        "while time.process_time() - t < float(sys.argv[1]): pass\nprint('burnt', flush=True)\n")


def burner(seconds: float, then_wait: str = "") -> subprocess.Popen:
    """A process that burns ``seconds`` of CPU, prints a line, then (``then_wait``: Python code) waits."""
    return subprocess.Popen([sys.executable, "-c", BURN + then_wait, str(seconds)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_exits_inside_the_window_keep_their_cpu_and_the_past_is_not_charged():
    old = burner(0.6, "sys.stdin.read()")  # burns before the window, exits inside it
    assert old.stdout.readline().strip() == "burnt"
    procs = {"old": [old.pid], "new": []}
    meter = CpuMeter(lambda: procs, period=0.05)
    meter.start()
    new = burner(0.4)  # starts inside the window, burns, exits before it ends
    procs["new"] = [new.pid]
    new.wait(30)
    old.stdin.close()
    old.wait(30)
    time.sleep(0.2)
    used, busy = meter.finish()
    assert 0.0 <= used["old"] < 0.1  # its 0.6 s came before the window
    assert 0.3 <= used["new"] <= 0.5  # its 0.4 s, less at most one period lost at its exit
    assert 0.0 < busy <= 1.0


def test_machine_ticks_grow_and_busy_is_at_most_total():
    busy0, total0 = machine_ticks()
    time.sleep(0.05)
    busy1, total1 = machine_ticks()
    assert total1 > total0 and 0 <= busy1 - busy0 <= total1 - total0
