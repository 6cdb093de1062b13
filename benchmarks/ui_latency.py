"""Key press -> next item painted, measured in Chromium on the demo project (target:
median under 100 ms locally).

    .venv/bin/python benchmarks/ui_latency.py [--labels 100] [--think-ms 300]

Starts what ``make run`` starts, in a temporary folder (SQLite + filesystem broker, the
development server and one Celery worker), logs in as the demo annotator in Debian's Chromium
(Playwright) and labels ``--labels`` digits with the keyboard, pausing ``--think-ms`` between
items like a person. In the page, ``performance.now()`` is taken at the keydown and again when
the new panel was swapped in and its image decoded, after the next animation frame (painted).
Prints the median, p95 and max in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 8765
PROBE = """
window.__lat = [];
document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, true);
const painted = () => {
  const t0 = window.__t0;
  const img = document.querySelector('#queue-item img');
  const done = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    if (t0 !== undefined) { window.__lat.push(performance.now() - t0); window.__t0 = undefined; }
  }));
  if (img && !img.complete) { img.addEventListener('load', done, {once: true}); } else { done(); }
};
document.addEventListener('htmx:afterSwap', painted);  // skip, undo
document.addEventListener('desk:shown', painted);  // a label: queue.js swapped a held item in
"""


def start(var: Path, port: int = PORT) -> list[subprocess.Popen]:
    """What ``make run`` starts (migrations, the demo, one Celery worker, the development server on
    ``port``) with its files in ``var``; ready when it returns."""
    env = {**os.environ, "DEBUG": "1", "VAR_DIR": str(var), "SECRET_KEY": "bench"}
    py = sys.executable
    subprocess.run([py, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([py, "manage.py", "demo"], cwd=ROOT, env=env, check=True, capture_output=True)
    log = open(var / "worker.log", "w")  # noqa: SIM115 - lives as long as the worker
    worker = subprocess.Popen([py, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
                               "--loglevel=WARNING"], cwd=ROOT, env=env, stdout=log, stderr=log)
    server = subprocess.Popen([py, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return [worker, server]


def measure(labels: int, think_ms: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        base = f"http://127.0.0.1:{PORT}"
        page.goto(f"{base}/accounts/login/")
        page.fill("input[name=username]", "annotator")
        page.fill("input[name=password]", "annotator-demo")
        page.click("button[type=submit]")
        page.click("text=OCR digits")
        page.wait_for_selector("#queue-item[data-item]")
        page.evaluate(PROBE)
        for i in range(labels):
            current = page.get_attribute("#queue-item", "data-item")
            page.wait_for_selector("#queue-item[data-ready]")  # keys count once htmx processed it
            page.keyboard.press(str(i % 10))
            page.wait_for_function(f"window.__lat.length === {i + 1}", timeout=30_000)
            if page.get_attribute("#queue-item", "data-item") == current:
                raise RuntimeError("the same item came back: the label was refused")
            page.wait_for_timeout(think_ms)
        out = page.evaluate("window.__lat")
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, default=100)
    ap.add_argument("--think-ms", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        procs = start(Path(tmp))
        try:
            lat = sorted(measure(args.labels, args.think_ms))
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=20)
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    print(f"{len(lat)} labels, think time {args.think_ms} ms: key press -> next item painted: "
          f"median {statistics.median(lat):.1f} ms, p95 {p95:.1f} ms, max {lat[-1]:.1f} ms")


if __name__ == "__main__":
    main()
