"""Compiled paths on real files: the LIBSVM reader (learners/evaluation/libsvm.py) equals
scikit-learn's, and the compiled loops (Learner.compiled_loop) make the per-item decisions on a8a
(synthetic streams, every mode: tests/learners/test_learner_contract.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files

import learners
from learners.evaluation.datasets import load
from learners.evaluation.engine import replay, replay_per_item
from learners.evaluation.libsvm import read_libsvm

DATA = Path(__file__).resolve().parents[3] / "shared" / "datasets"
A8A = [DATA / "libsvm_binary" / "a8a.gz", DATA / "libsvm_binary" / "a8a.t.gz"]


def _same(got, paths, **kw):
    out = load_svmlight_files([str(p) for p in paths], dtype=np.float64, **kw)
    X = sp.vstack(out[0::2], format="csr")
    y = np.concatenate(out[1::2])
    assert got[0].shape == X.shape
    assert (got[0] != X).nnz == 0 and got[0].nnz == X.nnz
    np.testing.assert_array_equal(got[1], y)


@pytest.mark.parametrize("files", [A8A, [DATA / "libsvm_multiclass" / "usps.t.gz"],
                                   [DATA / "libsvm_binary" / "svmguide1.gz"]],
                         ids=["a8a", "usps", "svmguide1"])
def test_reader_equals_scikit_learn_on_the_datasets(files):
    got = read_libsvm(files, None)
    assert got is not None, "these files are on the fast path"
    _same(got, files)


EDGE = {
    "comments-blank-qid": b"# header\n+1 qid:3 1:0.5 3:2e-3 # tail\n\n-1 2:-1.25E+2\n   \n1 1:1\n",
    "crlf-tabs": b"1\t1:1.5\t4:7\r\n-1 2:.5\r\n",
    "zero-based": b"1 0:1 2:3\n0 1:4\n",
    "label-only": b"3\n2 5:1\n",
    "exact-decimals": b"1 1:0.1 2:123456.789 3:1e22 4:-7e-22 5:0.3000000000000001\n",
}


@pytest.mark.parametrize("name", sorted(EDGE))
def test_reader_edge_cases(tmp_path, name):
    path = tmp_path / "f.svm.gz"
    path.write_bytes(gzip.compress(EDGE[name]))
    got = read_libsvm([path], None)
    assert got is not None
    _same(got, [path])


@pytest.mark.parametrize("text", [b"1 1:1\nfoo 2:1\n", b"1 1:x\n", b"1 3:1 2:1\n", b"1 1:1e400\n",
                                  b"1 1:12345678901234567890\n", b"1 1:0.30000000000000004\n",
                                  b"1 1:nan\n", b"1 -1:2\n"])
def test_reader_leaves_anything_else_to_scikit_learn(tmp_path, text):
    path = tmp_path / "f.svm"
    path.write_bytes(text)
    assert read_libsvm([path], None) is None


def test_malformed_file_still_names_its_line(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n1 3:abc\n")
    with pytest.raises(ValueError, match="line 3"):
        load(path)


@pytest.mark.parametrize("name", ["paa-i", "d-ada", "d-amd"])
def test_compiled_loop_on_a8a(name):
    ds = load(A8A[1], n_features=123)
    y = (ds.y == 1).astype(np.int64)
    X = ds.X[:4000]
    a = learners.make(name, n_features=123, classes=[0, 1], delta=0.2)
    b = learners.make(name, n_features=123, classes=[0, 1], delta=0.2)
    ref = replay_per_item(a, X, y[:4000], np.random.default_rng(0))
    got = replay(b, X, y[:4000], np.random.default_rng(0))
    np.testing.assert_array_equal(got.queried, ref.queried)
    np.testing.assert_array_equal(got.pred, ref.pred)
    np.testing.assert_allclose(b.w, a.w, rtol=1e-10, atol=1e-12)


