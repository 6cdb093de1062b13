"""OASIS and KMC on a 2^18-feature project (hashed text, ``hashed-ngrams``): bounded in
the replay CLI and in the app (console, planner, stream), and an oversized filter refused up
front with a clear message in each."""

from __future__ import annotations

import tracemalloc

import pytest

import learners
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Item, LearnerState, Membership, PlannerRun
from annotator.labelling.reporting import planner
from annotator.labelling.reporting.simulation import simulate
from learners.evaluation.cli import main
from learners.features import default_config, make_featurizer
from tests.support.app import SPAM, member, text_project

TEXTS = [f"{t} {i}" for i, t in enumerate(SPAM * 8)]  # 48 texts, spam on even positions
LABELS = ["spam" if i % 2 == 0 else "ham" for i in range(len(TEXTS))]
OVERSIZED = {"m": "100000", "max_dim": "4096"}  # 10 GiB of particles for 3 classes
HASHED = "hashed-ngrams"  # the hashed word n-grams featurizer
WIDTH = 2**18 + 1  # a new project's hashed-ngrams rows: the hashed columns and the intercept column
BOUND = 256 * 2**20  # bytes numpy may hold at peak (the raw 2^18 filter needed 2-10 GB)


def _csv(tmp_path):
    path = tmp_path / "sms.csv"
    rows = [f'"{t}",{y}' for t, y in zip(TEXTS, LABELS, strict=True)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def _peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_cli_replays_oasis_on_2_18_hashed_features_within_bounded_memory(tmp_path):
    path = _csv(tmp_path)
    args = ["--data", str(path), "--kind", "text", "--featurizer", HASHED, "--algo", "oasis",
            "--algo", "osis", "--budget", "0.2", "--runs", "1", "--quiet"]
    code, peak = _peak(lambda: main(args))
    assert code == 0 and peak < BOUND, peak


def test_cli_refuses_an_oversized_filter_in_one_line(tmp_path, capsys):
    path = _csv(tmp_path)
    args = ["--data", str(path), "--kind", "text", "--featurizer", HASHED, "--algo", "oasis", "--quiet"]
    for key, value in OVERSIZED.items():
        args += ["--param", f"{key}={value}"]
    code, peak = _peak(lambda: main(args))
    err = capsys.readouterr().err
    assert code == 2 and peak < BOUND
    assert err.count("\n") == 1 and "oasis" in err
    assert "MiB of particles" in err and "lower m or max_dim" in err


@pytest.mark.django_db
def test_the_app_runs_oasis_on_a_2_18_feature_project_and_refuses_an_oversized_one(client):
    def build():
        project = text_project(None, algorithm="oasis", params={"s0": 0.1}, look_ahead=4,
                               featurizer_config=default_config("text", HASHED))
        import_records(project, [Record(f"line {i}", t, gold=y)
                                 for i, (t, y) in enumerate(zip(TEXTS, LABELS, strict=True))])
        simulate(project)  # the label pipeline, an oracle answering from the gold labels
        return project

    project, peak = _peak(build)
    assert project.featurizer().n_features == WIDTH and peak < BOUND, peak
    assert Item.objects.filter(project=project, queried__isnull=False).count() == len(TEXTS)
    state = LearnerState.objects.get(project=project)
    assert len(bytes(state.blob)) < 16 * 2**20  # the saved filter lives in max_dim dimensions

    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    form = {"action": "learner", "algorithm": "oasis", "param-query": "active", "param-p": "0.1",
            **{f"param-{k}": v for k, v in OVERSIZED.items()}}
    response, peak = _peak(lambda: client.post(f"/projects/{project.pk}/console", form))
    assert response.status_code == 400 and peak < BOUND
    assert "MiB of particles" in response.content.decode()
    project.refresh_from_db()
    assert project.params == {"s0": 0.1}  # nothing stored

    # the planner replays OASIS (bounded) on the project's gold labels, and refuses the oversized
    response = client.post(f"/projects/{project.pk}/planner",
                           {"algorithm-0": "oasis", "delta-0": "0.01", "algorithm-1": "osis",
                            "delta-1": "1", "runs": "1"})
    assert response.status_code == 302
    job, peak = _peak(lambda: planner.run(PlannerRun.objects.get(project=project).pk))
    assert job.status == "done" and len(job.results) == 2 and peak < BOUND, (job.error, peak)
    project.params = {**project.params, "m": 100_000, "max_dim": 4096}  # not saved: what a
    with pytest.raises(ValueError, match="MiB of particles"):  # candidate would inherit
        planner.candidate_params(project, "oasis", "0.01")


def test_kmc_on_2_18_features_keeps_only_its_labelled_rows():
    feat = make_featurizer(default_config("text", HASHED))
    X = feat.transform(TEXTS)
    lrn = learners.make("kmc", n_features=feat.n_features, classes=["ham", "spam", "other"], delta=0.5)
    import numpy as np

    rng = np.random.default_rng(0)

    def stream():
        for i in range(len(TEXTS)):
            d = lrn.decide(X[i], rng)
            lrn.learn(X[i], LABELS[i]) if d.queried else lrn.observe(X[i])

    _, peak = _peak(stream)
    assert peak < 64 * 2**20 and lrn.X.shape[1] == WIDTH and lrn.X.nnz < 41 * len(TEXTS)
