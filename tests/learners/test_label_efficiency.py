"""``benchmarks/label_efficiency.py``'s planner: the default run leaves a learner too slow for
whole streams out, ``--full`` replays it on a prefix, and ``--plan-only`` stops before any
replay. Run as the script (tests never import benchmarks) on the first 300 URLs, with limits
set so that OASIS (about 30 ms of CPU per item for its 9 replays on ``url-ngrams``) is over
``--cell-minutes`` and ``d-amd`` (well under 1 ms) is not: a factor of 8 on either side."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.resources import shared_dataset

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "label_efficiency.py"

pytestmark = pytest.mark.datasets


@pytest.fixture(autouse=True)
def _urls() -> None:
    shared_dataset("raw_urls")  # the script reads it: skip on a laptop without it, fail in CI


def plan_of(tmp_path: Path, *extra: str) -> str:
    """The script's stderr for a plan of ``auto``, ``d-amd`` and ``oasis`` on 300 URLs."""
    out = tmp_path / "report.md"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--streams", "urls", "--limit", "300", "--runs", "1",
         "--learners", "auto,d-amd,oasis", "--no-river", "--cell-minutes", "0.02", "--prefix-minutes", "1",
         "--cache", str(tmp_path / "cache"), "--out", str(out), "--plan-only", *extra],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert not out.exists()  # --plan-only writes no report
    return proc.stderr


def probe_line(stderr: str, algo: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith(f"probe urls/url-ngrams/{algo}:")]
    return line


def test_default_run_leaves_slow_learners_out_and_full_replays_their_prefix(tmp_path):
    default = plan_of(tmp_path)
    assert "url-lexical" not in default  # the default featurizer alone
    assert "not run by default" in probe_line(default, "oasis")
    assert "not run" not in probe_line(default, "d-amd") and "first" not in probe_line(default, "d-amd")
    assert "not run" not in probe_line(default, "auto")
    assert "plan:" in default

    full = plan_of(tmp_path, "--full")
    assert "urls / url-lexical" in full  # every featurizer of the kind
    assert "first 200 items of each permutation" in probe_line(full, "oasis")


def test_disposition_examples():
    """The docstring examples of ``disposition`` (whole stream, prefix with --full, not run without)."""
    proc = subprocess.run([sys.executable, "-m", "doctest", str(SCRIPT)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
