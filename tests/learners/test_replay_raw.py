"""Replay on raw streams: the app's upload files, featurized as the app does.

The equality tests import the same file through the app's real ingest (``parse_upload`` +
``import_records`` into a project made by ``create_project``) and compare the stored vectors
and gold labels with what ``python -m learners.replay --kind`` replays.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import scipy.sparse as sp

from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.ingest import import_records, parse_upload
from annotator.labelling.projects.creation import create_project
from annotator.labelling.projects.demo import digit_png
from learners.evaluation.cli import main
from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import DEFAULT, featurizer_names
from tests.support.app import SPAM, zip_bytes

URLS = ["http://example.com/a?x=1", "paypal-login.verify-account.xyz/secure", "192.168.0.1/admin.php",
        "www.python.org/downloads/", "free-gift-cards.top/claim?id=77", "en.wikipedia.org/wiki/URL"]


def _csv(header: str, rows: list[tuple[str, str]]) -> bytes:
    lines = [header] + [f'"{a}",{b}' for a, b in rows]
    return ("\n".join(lines) + "\n").encode()


def _texts() -> bytes:
    return _csv("text,label", [(t, "spam" if i % 2 == 0 else "ham") for i, t in enumerate(SPAM * 3)])


def _digits() -> bytes:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return zip_bytes({f"{int(digits.target[i])}/d{i:03d}.png": digit_png(digits.data[i]) for i in range(40)})


def _app_stream(kind: str, classes: list, filename: str, data: bytes, **fields):
    """Vectors and gold labels of ``data`` imported by the app into a new project."""
    project = create_project(name=f"raw {kind} {filename}", item_kind=kind, classes=classes,
                             task="binary" if len(classes) == 2 else "multiclass",
                             algorithm="paa-i" if len(classes) == 2 else "mpaa-i", **fields)
    items = import_records(project, parse_upload(project, filename, data))
    n = project.featurizer().n_features
    X = sp.vstack([decode(it.vector, n) for it in items], format="csr")
    return project, X, [it.gold for it in items]


@pytest.mark.django_db
@pytest.mark.parametrize("kind,classes,filename,make", [
    ("text", ["ham", "spam"], "sms.csv", _texts),
    ("text", ["ham", "spam"], "sms.csv.gz", lambda: gzip.compress(_texts())),
    ("url", ["benign", "phishing"], "urls.jsonl",
     lambda: "\n".join(json.dumps({"url": u, "label": "phishing" if i % 3 == 1 else "benign"})
                       for i, u in enumerate(URLS * 2)).encode()),
    ("image", list(range(10)), "digits.zip", _digits),
])
def test_raw_replay_featurizes_as_the_app_does(tmp_path, kind, classes, filename, make):
    data = make()
    path = tmp_path / filename
    path.write_bytes(data)
    project, X_app, gold = _app_stream(kind, classes, filename, data)
    ds = load_raw([path], kind, featurizer_config(kind))  # the CLI's default featurizer
    assert project.featurizer_config == featurizer_config(kind)  # = a new project's default
    assert ds.X.shape == X_app.shape and ds.X.nnz > 0
    assert (X_app != ds.X).nnz == 0  # bit-identical vectors, in file order
    assert [str(g) for g in gold] == [str(v) for v in ds.y]


@pytest.mark.django_db
def test_a_configured_featurizer_matches_a_project_configured_alike(tmp_path):
    data = _digits()
    path = tmp_path / "d.zip"
    path.write_bytes(data)
    _, X_app, _ = _app_stream("image", list(range(10)), "d.zip", data,
                              featurizer_config={"kind": "image", "width": 8, "height": 8, "invert": True})
    ds = load_raw([path], "image", featurizer_config("image", "pixels", {"width": "8", "height": "8",
                                                                        "invert": "true"}))
    assert ds.X.shape == (40, 64) and (X_app != ds.X).nnz == 0


def test_cli_replays_a_raw_file_and_lists_featurizers(tmp_path, capsys):
    path = tmp_path / "sms.csv"
    path.write_bytes(_texts())
    out = tmp_path / "o.json"
    assert main(["--data", str(path), "--kind", "text", "--featurizer", "hashed-ngrams",
                 "--feature", "n_features=1024", "--algo", "paa-i", "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "learners.replay/1"
    assert doc["data"]["kind"] == "text" and doc["data"]["n_items"] == 18
    assert doc["data"]["featurizer"]["name"] == "hashed-ngrams"
    # 1,024 hashed columns and a new project's intercept column
    assert doc["data"]["featurizer"]["n_features"] == 1024 and doc["data"]["n_features"] == 1025
    assert doc["data"]["class_counts"] == {"ham": 9, "spam": 9}
    capsys.readouterr()
    for kind in ("text", "url", "image"):
        assert main(["--list-featurizers", kind]) == 0
        names = capsys.readouterr().out.split()
        assert names[0] == DEFAULT[kind] and sorted(names) == sorted(featurizer_names(kind))


def _one_line_error(capsys, args: list[str]) -> str:
    capsys.readouterr()
    assert main(["--quiet", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize("case,pattern", [
    ("image kind for a CSV", "CSV and JSONL uploads hold text or URLs, not image items"),
    ("text kind for a ZIP", "ZIP uploads hold images, not text items"),
    ("text kind for a URL CSV", "the header needs a 'text' column"),
    ("unknown featurizer", "unknown text featurizer 'bert'; valid: "),
    ("bad option", "unknown option(s) ['width'] for the text featurizer"),
    ("no label column", "no 'label' column (or 'gold'); the replay needs the class of every item"),
    ("unlabelled row", "line 3: no label"),
    ("unlabelled images", "no labels.csv and no class folders"),
    ("not gzip", "not a readable gzip file"),
    ("featurizer without kind", "--featurizer and --feature need --kind"),
])
def test_bad_raw_inputs_give_one_line_errors(case, pattern, tmp_path, capsys):
    files = {"t.csv": _texts(), "d.zip": zip_bytes({"a.png": digit_png(np.ones(64))}),
             "u.csv": _csv("url,label", [(u, "benign") for u in URLS]),
             "nolabel.csv": _csv("text,kind", [(t, "x") for t in SPAM]),
             "gap.csv": b"text,label\nhello,ham\nbye,\n", "bad.csv.gz": b"plain text"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    args = {
        "image kind for a CSV": ["t.csv", "--kind", "image"],
        "text kind for a ZIP": ["d.zip", "--kind", "text"],
        "text kind for a URL CSV": ["u.csv", "--kind", "text"],
        "unknown featurizer": ["t.csv", "--kind", "text", "--featurizer", "bert"],
        "bad option": ["t.csv", "--kind", "text", "--feature", "width=3"],
        "no label column": ["nolabel.csv", "--kind", "text"],
        "unlabelled row": ["gap.csv", "--kind", "text"],
        "unlabelled images": ["d.zip", "--kind", "image"],
        "not gzip": ["bad.csv.gz", "--kind", "text"],
        "featurizer without kind": ["t.csv", "--featurizer", "pixels"],
    }[case]
    line = _one_line_error(capsys, ["--data", str(tmp_path / args[0]), *args[1:], "--algo", "paa-i"])
    assert pattern in line, line
