"""Data readers (LIBSVM, CSV, .mat, format detection, .gz) and the scaling options."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from learners.evaluation.datasets import detect_format, load, preprocess
from tests.support.resources import shared_dataset

LIBSVM = "+1 1:0.5 3:2\n-1 2:1.5\n+1 1:1 2:0 3:-1\n"


def test_libsvm_plain_and_gz_with_n_features(tmp_path):
    (tmp_path / "a.txt").write_text(LIBSVM)
    with gzip.open(tmp_path / "a.gz", "wt") as fh:
        fh.write(LIBSVM)
    for name in ("a.txt", "a.gz"):
        ds = load(tmp_path / name, n_features=5)
        assert ds.X.shape == (3, 5)
        np.testing.assert_array_equal(ds.X.toarray()[:, :3], [[0.5, 0, 2], [0, 1.5, 0], [1, 0, -1]])
        assert ds.y.tolist() == [1, -1, 1] and ds.X.nnz == 5  # the explicit 2:0 is dropped


def test_libsvm_malformed_line_is_named(tmp_path):
    (tmp_path / "bad.txt").write_text("+1 1:0.5\n-1 2:abc\n")
    with pytest.raises(ValueError, match=r"line 2: malformed LIBSVM line"):
        load(tmp_path / "bad.txt")


def test_missing_file_and_mixed_formats(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load(tmp_path / "nope.txt")
    (tmp_path / "a.txt").write_text(LIBSVM)
    (tmp_path / "b.csv").write_text("1,2\n")
    with pytest.raises(ValueError, match="same format"):
        load([tmp_path / "a.txt", tmp_path / "b.csv"])


def test_detect_format():
    assert detect_format("x/a8a.t.gz") == "libsvm"
    assert detect_format("s.csv.gz") == "csv" and detect_format("B.mat") == "mat"


def test_csv_header_label_column_and_errors(tmp_path):
    (tmp_path / "d.csv").write_text("f1,label,f2\n1,spam,2\n3,ham,4\n")
    ds = load(tmp_path / "d.csv", label_column="label")
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 2], [3, 4]])
    assert ds.y.tolist() == ["spam", "ham"]
    (tmp_path / "e.csv").write_text("1,2,0\n3,x,1\n")
    with pytest.raises(ValueError, match=r"line 2: feature value 'x'"):
        load(tmp_path / "e.csv")
    with pytest.raises(ValueError, match="no column named"):
        load(tmp_path / "d.csv", label_column="nope")


def test_mat_layout_last_column_is_label(tmp_path):
    data = sp.csr_matrix(np.array([[1.0, 0, 1], [0, 2.0, -1]]))
    scipy.io.savemat(tmp_path / "t.mat", {"data": data})
    ds = load(tmp_path / "t.mat")
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 0], [0, 2]])
    assert ds.y.tolist() == [1, -1]
    scipy.io.savemat(tmp_path / "u.mat", {"other": data})
    with pytest.raises(ValueError, match="no variable 'data'"):
        load(tmp_path / "u.mat")


@pytest.mark.datasets
def test_real_files_load_with_published_counts():
    a8a = load([shared_dataset("libsvm_binary/a8a.gz"), shared_dataset("libsvm_binary/a8a.t.gz")])
    assert a8a.X.shape == (32561, 123)
    hock = load(shared_dataset("matlab/BaseHock.mat"))
    assert hock.X.shape == (1993, 11148)
    assert int(np.sum(hock.y == 1)) == 994 and int(np.sum(hock.y == -1)) == 999
    spam = load(shared_dataset("libsvm_binary/spambase.csv.gz"))
    assert spam.X.shape == (4601, 57) and int(np.sum(spam.y == 1)) == 1813


def test_scaling_options():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(50, 4)) * [1, 10, 100, 0]
    dense[:, 3] = 7.0  # constant feature
    X = sp.csr_matrix(dense)
    mm = preprocess(X, "minmax").toarray()
    np.testing.assert_allclose(mm[:, :3].min(axis=0), -1)
    np.testing.assert_allclose(mm[:, :3].max(axis=0), 1)
    np.testing.assert_array_equal(mm[:, 3], 0)
    st = preprocess(X, "standard").toarray()
    np.testing.assert_allclose(st[:, :3].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(st[:, :3].std(axis=0), 1)
    np.testing.assert_allclose(np.abs(preprocess(X, "maxabs").toarray()).max(axis=0), 1)
    l2 = preprocess(X, "l2").toarray()
    np.testing.assert_allclose(np.linalg.norm(l2, axis=1), 1)
    both = preprocess(X, "standard+l2").toarray()
    np.testing.assert_allclose(both, st / np.linalg.norm(st, axis=1, keepdims=True))
    biased = preprocess(X, "none", bias=True)
    assert biased.shape == (50, 5) and np.all(biased.toarray()[:, 4] == 1)
    with pytest.raises(ValueError, match="scale must be one of"):
        preprocess(X, "zscore")
