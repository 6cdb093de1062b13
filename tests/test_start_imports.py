"""What a process imports to start (docs/performance.md): the replay command line loads no
scikit-learn and no Django, and a worker's ``django.setup()`` plus its task modules load no
scikit-learn (each cost ~1-2 s of CPU and 100-270 MiB of memory per process when they did).

Each check runs in a fresh interpreter and reads its ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_LOADED = """
import json, sys
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""

_REPLAY = """
import runpy, sys
sys.argv = ["learners.replay", *ARGS]
try:
    runpy.run_module("learners.replay", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
""" + _LOADED

_WORKER = """
import django
django.setup()
from annotator.celery import app
app.loader.import_default_modules()
import annotator.labelling.worker.tasks, annotator.urls
""" + _LOADED


def _top_modules(code: str, **env: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_replay_help_imports_neither_sklearn_nor_django() -> None:
    loaded = _top_modules(_REPLAY.replace("*ARGS", '"--help"'))
    assert "learners" in loaded
    assert not loaded & {"sklearn", "django"}


def test_replay_of_a_libsvm_file_imports_neither_sklearn_nor_django(tmp_path: Path) -> None:
    data = tmp_path / "tiny.libsvm"
    rng_lines = [f"{1 if i % 3 else -1} 1:{(i % 7) / 7:.3f} {2 + i % 4}:1 9:{i % 5}" for i in range(60)]
    data.write_text("\n".join(rng_lines) + "\n")
    args = ", ".join(json.dumps(a) for a in ["--data", str(data), "--algo", "paa-i", "--delta", "0.5",
                                            "--runs", "1", "--json", str(tmp_path / "out.json")])
    loaded = _top_modules(_REPLAY.replace("*ARGS", args))
    assert json.loads((tmp_path / "out.json").read_text())  # the replay did run
    assert not loaded & {"sklearn", "django"}


def test_replay_start_loads_no_unused_heavy_module() -> None:
    """The replay's modules load neither the batch refit's optimiser (scipy.optimize) nor the
    exported models, which a replay does not use at start (benchmarks/REPLAY_START.md)."""
    code = "import learners.evaluation.cli\n" + _LOADED.replace("m.split('.')[0] for m in", "m for m in")
    loaded = _top_modules(code)
    assert "learners.evaluation.cli" in loaded
    assert not {m for m in loaded if m.startswith(("scipy.optimize", "scipy.linalg",
                                                   "learners.model_file", "sklearn", "django"))}


def test_worker_start_imports_no_sklearn() -> None:
    loaded = _top_modules(_WORKER, DJANGO_SETTINGS_MODULE="tests.settings")
    assert "django" in loaded and "learners" in loaded
    assert "sklearn" not in loaded
