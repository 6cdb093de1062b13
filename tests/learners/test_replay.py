"""Replay engine and CLI: protocol, fast path equivalence, calibration, metrics, outputs, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.evaluation.cli import main, parse_ratio, parse_values
from learners.evaluation.engine import (
    Setting,
    calibrate,
    make_task,
    replay,
    replay_fast,
    replay_per_item,
    run_once,
)
from learners.evaluation.metrics import stream_metrics
from tests.support.synthetic import synthetic

ROOT = Path(__file__).resolve().parents[2]


def test_bulk_uniforms_equal_sequential_draws():
    # the fast path pre-draws rng.random(n); decide() draws rng.random() one at a time
    a = np.random.default_rng(7).random(1000)
    g = np.random.default_rng(7)
    np.testing.assert_array_equal(a, [g.random() for _ in range(1000)])


@pytest.mark.parametrize("query", ["random", "all"])
def test_fast_path_in_random_and_all_modes(query):
    X, y = synthetic(300, 10, 2)
    a = learners.make("paa-i", n_features=10, classes=[0, 1], query=query, p=0.2)
    b = learners.make("paa-i", n_features=10, classes=[0, 1], query=query, p=0.2)
    ref = replay_per_item(a, X, y, np.random.default_rng(2))
    fast = replay_fast(b, X, y, np.random.default_rng(2), max_block=7)
    np.testing.assert_array_equal(fast.queried, ref.queried)
    np.testing.assert_allclose(b.w, a.w, atol=1e-12)


@pytest.mark.parametrize("algo", ["md-amd", "mpaa-i", "soal"])
def test_replay_with_every_label_takes_the_per_item_loop(algo):
    """replay() of a learner without a compiled loop in query="all" mode takes the per-item
    loop (a block would stop at its first row): the same decisions and model as the block
    path, and none of the block path's calls."""
    classes = [0, 1] if algo == "soal" else [0, 1, 2]
    X, y = synthetic(300, 10, len(classes))
    a, b = (learners.make(algo, n_features=10, classes=classes, query="all") for _ in range(2))
    blocks = replay_fast(a, X, y, np.random.default_rng(4), max_block=7)
    calls = []
    b.decide_block = lambda M: calls.append(M)  # the per-item loop never calls it
    got = replay(b, X, y, np.random.default_rng(4))
    assert not calls and got.queried.all()
    np.testing.assert_array_equal(got.pred, blocks.pred)
    want, have = a.get_state()["arrays"], b.get_state()["arrays"]
    assert want.keys() == have.keys()
    for name in want:
        np.testing.assert_allclose(have[name], want[name], rtol=1e-12, atol=1e-12)


def test_metrics_against_hand_counted_confusion():
    y_true = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    y_pred = np.array([1, 0, 1, 1, 0, 0, 0, 1])
    queried = np.array([1, 0, 0, 1, 0, 0, 0, 1], dtype=bool)
    m = stream_metrics(y_true, y_pred, queried, binary=True)
    # TP=3, FN=1, FP=1, TN=3 over all 8 rounds (queried or not)
    assert m["precision"] == pytest.approx(3 / 4) and m["recall"] == pytest.approx(3 / 4)
    assert m["f1"] == pytest.approx(0.75) and m["accuracy"] == pytest.approx(6 / 8)
    assert m["specificity"] == pytest.approx(3 / 4) and m["sum"] == pytest.approx(0.75)
    assert m["cost"] == pytest.approx(0.5 * 1 + 0.5 * 1)  # c_p = T_n/T = 4/8
    assert m["mistakes"] == 2 and m["queries"] == 3 and m["query_ratio"] == pytest.approx(3 / 8)
    mc = stream_metrics(np.array([0, 1, 2, 2]), np.array([0, 2, 2, 2]), np.zeros(4, bool), binary=False)
    assert mc == {"accuracy": 0.75, "mistakes": 1.0, "queries": 0.0, "query_ratio": 0.0}


def test_delta_calibration_hits_target():
    X, y = synthetic(1500, 15, 2, seed=3)
    task = make_task(y)
    setting = Setting("paa-i", learners.validate_params("paa-i", {}))

    def evaluate(settings):
        from learners.evaluation.engine import Result, summarise
        out = []
        for s in settings:
            mean, std = summarise([run_once(s, X, task, 0, r) for r in range(2)])
            out.append(Result(s, mean, std, 2))
        return out

    res = calibrate(setting, 0.2, evaluate)
    assert res.calibration["reached"] and abs(res.mean["query_ratio"] - 0.2) <= 0.005
    assert res.calibration["knob"] == "delta" and res.setting.params["delta"] == res.calibration["value"]


def test_parse_values_and_ratio():
    assert [float(v) for v in parse_values("2^-2..2^1")] == [0.25, 0.5, 1.0, 2.0]
    assert [float(v) for v in parse_values("2^0..2^1:0.5")] == pytest.approx([1, 2 ** 0.5, 2])
    assert parse_values("a,b") == ["a", "b"]
    assert parse_ratio("10%") == pytest.approx(0.1) and parse_ratio("0.2") == 0.2
    for bad in ("0", "1.5", "x"):
        with pytest.raises(ValueError):
            parse_ratio(bad)


def _write_libsvm(path: Path, X: sp.csr_matrix, y: np.ndarray) -> None:
    lines = []
    for i in range(X.shape[0]):
        row = X[i]
        feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in zip(row.indices, row.data, strict=True))
        lines.append(f"{'+1' if y[i] == 1 else '-1'} {feats}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def small_file(tmp_path):
    X, y = synthetic(300, 8, 2, seed=4)
    path = tmp_path / "small.libsvm"
    _write_libsvm(path, X, y)
    return path


RESULT_KEYS = {"algo", "params", "delta", "scale", "bias", "budget", "runs", "best", "best_of_algo",
               "calibration", "mean", "std"}
BINARY_METRICS = {"accuracy", "f1", "precision", "recall", "sensitivity", "specificity", "sum", "cost",
                  "query_ratio", "queries", "mistakes", "seconds", "items_per_second"}
#: the per-class figures of learners/evaluation/per_class.py (classes -1 and 1 of the small file)
FIGURES = {"macro_f1", "balanced_accuracy", "baseline_accuracy", "baseline_macro_f1",
           "baseline_balanced_accuracy",
           *(f"{f}[{c}]" for f in ("precision", "recall", "f1") for c in (-1, 1))}
BINARY_METRICS |= FIGURES | {f"{n}_iw{e}" for n in FIGURES | {"accuracy"} for e in ("", "_low", "_high")}


def test_cli_json_schema_grid_product_and_outputs(small_file, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["--data", str(small_file), "--algo", "paa-i", "--algo", "paa", "--grid", "C=0.5,2",
                 "--delta-sweep", "2^-2..2^-1", "--runs", "2", "--quiet", "--json", str(out),
                 "--csv", str(tmp_path / "r.csv"), "--plot", str(tmp_path / "r.svg")])
    assert code == 0
    doc = json.loads(out.read_text())
    assert set(doc) == {"schema", "data", "protocol", "results"} and doc["schema"] == "learners.replay/1"
    assert set(doc["data"]) == {"source", "n_items", "n_features", "classes", "class_counts", "binary",
                                "positive"}
    assert set(doc["protocol"]) == {"runs", "seed", "primary_metric", "target_query_ratio", "budget",
                                    "fast_path"}
    # paa-i: 2 C x 2 delta; paa has no C: 2 deltas
    assert [r["algo"] for r in doc["results"]] == ["paa-i"] * 4 + ["paa"] * 2
    for r in doc["results"]:
        assert set(r) == RESULT_KEYS and set(r["mean"]) == BINARY_METRICS == set(r["std"])
    assert sum(r["best"] for r in doc["results"]) == 1
    best = max(doc["results"], key=lambda r: r["mean"]["f1"])
    assert best["best"]
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 7
    svg = ET.parse(tmp_path / "r.svg").getroot()
    texts = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert {"paa-i", "paa"} <= texts
    printed = capsys.readouterr().out
    assert "*best*" in printed
    # per class and the majority baseline, exact and estimated (docs/estimates.md), per setting
    assert printed.count("majority baseline") == 3 * 6 and "per class: exact | importance-weighted" in printed
    assert printed.count("\n  -1 ") == printed.count("\n  1 ") == 6


def test_cli_jobs_give_the_same_numbers(small_file, tmp_path):
    docs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        assert main(["--data", str(small_file), "--algo", "paa-ii", "--runs", "3", "--jobs", jobs,
                     "--quiet", "--json", str(out)]) == 0
        docs.append(json.loads(out.read_text())["results"][0]["mean"])
    for key in ("f1", "query_ratio", "mistakes"):
        assert docs[0][key] == docs[1][key]


def test_cli_target_ratio_and_budget(small_file, tmp_path):
    out = tmp_path / "t.json"
    assert main(["--data", str(small_file), "--algo", "paa-i", "--target-query-ratio", "30%",
                 "--runs", "2", "--quiet", "--json", str(out)]) == 0
    r = json.loads(out.read_text())["results"][0]
    assert r["calibration"]["reached"] and abs(r["mean"]["query_ratio"] - 0.3) <= 0.005
    # the budget's plan spends an advance early and has repaid it by item 3000 (docs/budget.md):
    # a stream well past that holds R
    X, y = synthetic(6000, 8, 2, seed=4)
    long_file = tmp_path / "long.libsvm"
    _write_libsvm(long_file, X, y)
    assert main(["--data", str(long_file), "--algo", "paa-i", "--budget", "0.3", "--quiet",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())["results"][0]
    assert abs(r["mean"]["query_ratio"] - 0.3) < 0.01 and r["budget"] == 0.3


def test_cli_without_algo_runs_the_default_learner_and_fits_the_budget_to_the_stream(tmp_path):
    X, y = synthetic(300, 8, 2, seed=5)
    data, out = tmp_path / "short.libsvm", tmp_path / "d.json"
    _write_libsvm(data, X, y)
    assert main(["--data", str(data), "--budget", "0.1", "--quiet", "--json", str(out)]) == 0
    r = json.loads(out.read_text())["results"][0]
    assert r["algo"] == learners.DEFAULT_ALGORITHM["binary"] == "auto"
    # 300 items: the plan's advance is repaid by the last one, so the whole stream holds R
    assert abs(r["mean"]["query_ratio"] - 0.1) <= 0.01


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "learners.replay", "--quiet", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case,pattern", [
    ("missing", "data file not found"),
    ("algo", "unknown algorithm 'nope'"),
    ("malformed", "line 2: malformed LIBSVM line"),
    ("class", "class '7' is not in the data"),
    ("param", "C must be a number > 0"),
    ("option", "unrecognized arguments: --frobnicate"),
])
def test_cli_errors_are_one_line_with_nonzero_exit(case, pattern, small_file, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("+1 1:1\n-1 1:x\n")
    args = {
        "missing": ["--data", str(tmp_path / "none.txt"), "--algo", "paa-i"],
        "algo": ["--data", str(small_file), "--algo", "nope"],
        "malformed": ["--data", str(bad), "--algo", "paa-i"],
        "class": ["--data", str(small_file), "--algo", "paa-i", "--positive", "7"],
        "param": ["--data", str(small_file), "--algo", "paa-i", "--param", "C=-1"],
        "option": ["--data", str(small_file), "--algo", "paa-i", "--frobnicate"],
    }[case]
    proc = _cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: ") and pattern in lines[0]


def test_block_maker_builds_the_same_rows_as_scipy():
    from learners.evaluation.engine import _BlockMaker
    X, _ = synthetic(50, 9, 2)
    make_block = _BlockMaker(X)
    assert make_block.direct  # the pinned scipy has the expected layout
    for i, j in ((0, 1), (3, 17), (40, 50)):
        blk = make_block(i, j)
        assert blk.shape == (j - i, 9)
        np.testing.assert_array_equal(blk.toarray(), X[i:j].toarray())
        np.testing.assert_array_equal(blk @ np.arange(9.0), X[i:j] @ np.arange(9.0))
