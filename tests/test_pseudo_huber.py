"""The pseudo_huber distance (issue 24): psi, its gradient and curvature against autograd and L1; PyKEEN's scores
and the ranker against brute force; training, storing, link prediction and the estimator's label end to end; an
import may not name it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from pykeen.models import ERModel
from pykeen.triples import TriplesFactory

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.config import PSEUDO_HUBER_DELTA
from kgbias_core.embeddings.objective import (
    distance_gradient,
    pseudo_huber_curvature,
    residual_distance,
    transe_distance,
)
from kgbias_core.embeddings.pseudo_huber import PseudoHuberTransEInteraction
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import load_model
from kgbias_core.evaluation import link_prediction as lp
from kgbias_core.evaluation.link_prediction import filtered_ranks, head_scores, link_prediction, tail_scores
from kgbias_core.influence.closed_form import APPROXIMATE_FOR_DISTANCE
from kgbias_core.influence.prediction import DISTANCE_NOTES, predict_removal

torch.set_num_threads(1)


def _residuals() -> torch.Tensor:
    """Residual coordinates on both sides of delta, 0 included, in float64."""
    generator = torch.Generator().manual_seed(1)
    v = torch.randn(6, 5, generator=generator, dtype=torch.float64) * 3 * PSEUDO_HUBER_DELTA
    v[0, 0] = 0.0
    return v


def test_psi_is_the_pseudo_huber_sum_and_its_gradient_and_curvature_are_autograds() -> None:
    v = _residuals().requires_grad_(True)
    d = PSEUDO_HUBER_DELTA
    psi = residual_distance(v, distance="pseudo_huber")
    expected = sum(((x * x + d * d) ** 0.5 - d) for x in v.detach().reshape(-1).tolist())
    assert float(psi.detach().sum()) == pytest.approx(expected, rel=1e-12)
    (gradient,) = torch.autograd.grad(psi.sum(), v, create_graph=True)
    torch.testing.assert_close(distance_gradient(v.detach(), distance="pseudo_huber"), gradient.detach())
    # psi is a sum over coordinates: its Hessian is diagonal, d^2 psi / dv_i^2 per coordinate.
    (second,) = torch.autograd.grad(gradient.sum(), v)
    torch.testing.assert_close(pseudo_huber_curvature(v.detach()), second)
    assert float(pseudo_huber_curvature(torch.zeros(1, 1, dtype=torch.float64))) == pytest.approx(1 / d)


def test_psi_lies_within_delta_per_coordinate_below_l1() -> None:
    """sqrt(x^2 + d^2) - d is in [|x| - d, |x|]: L1 far from 0, with an error of at most delta a coordinate."""
    v = _residuals()
    gap = residual_distance(v, distance="l1") - residual_distance(v, distance="pseudo_huber")
    assert bool((gap >= 0).all()) and bool((gap <= PSEUDO_HUBER_DELTA * v.shape[1]).all())
    far = v.sign()[1:] * (1 + v.abs()[1:]) * 1e3  # |x| >= 1000 delta: the gradient is sign(x) to 1e-8
    torch.testing.assert_close(distance_gradient(far, distance="pseudo_huber"), far.sign(), atol=1e-8, rtol=0)


@pytest.fixture(scope="module")
def factory() -> TriplesFactory:
    rows = [[f"p{i}", "job", f"job{i % 3}"] for i in range(10)]
    rows += [[f"p{i}", "gender", "male" if i % 2 else "female"] for i in range(10)]
    return TriplesFactory.from_labeled_triples(np.asarray(rows))


def _brute_rank(model, triple: list[int], known: set, n: int, side: str) -> float:
    h, r, t = triple
    candidates = [[h, r, e] if side == "tail" else [e, r, t] for e in range(n)]
    scores = model.score_hrt(torch.tensor(candidates)).reshape(-1)
    true = t if side == "tail" else h
    better = tied = 0
    for e in range(n):
        if e == true or ((h, r, e) if side == "tail" else (e, r, t)) in known:
            continue
        better += int(scores[e] > scores[true])
        tied += int(scores[e] == scores[true])
    return 1 + better + tied / 2


def test_the_ranker_scores_as_pykeens_broadcast_in_blocks_and_ranks_as_brute_force(factory, monkeypatch) -> None:
    """The pseudo_huber ERModel: kgbias's blocked [b, E, d] scores equal PyKEEN's own score_t / score_h (a block
    of a few entities forces several blocks), and the filtered ranks equal a loop over every entity."""
    model = ERModel(triples_factory=factory, interaction=PseudoHuberTransEInteraction(),
                    entity_representations_kwargs={"shape": 4}, relation_representations_kwargs={"shape": 4},
                    random_seed=2)
    known = factory.mapped_triples
    monkeypatch.setattr(lp, "PSEUDO_HUBER_BLOCK", 3 * 4 * known.shape[0])  # 3 entities a block for all queries
    torch.testing.assert_close(tail_scores(model, known[:, :2]), model.score_t(known[:, :2]))
    torch.testing.assert_close(head_scores(model, known[:, 1:]), model.score_h(known[:, 1:]))
    test = known[torch.tensor([0, 3, 10, 11, 15])]
    known_set = {tuple(row) for row in known.tolist()}
    for side in ("tail", "head"):
        fast = filtered_ranks(model, triples=test, known=known, batch_size=2, side=side)
        slow = [_brute_rank(model, row, known_set, factory.num_entities, side) for row in test.tolist()]
        torch.testing.assert_close(fast, torch.tensor(slow, dtype=torch.float32))


def test_train_distance_pseudo_huber_end_to_end(tmp_path: Path, capsys) -> None:
    """``kgbias train --distance pseudo_huber``: stored and loaded with its distance, scored by PyKEEN's path as
    the loss scores it, link prediction in range, and the what-if's estimator and ``kgbias influence`` name the
    distance."""
    out = tmp_path / "ph"
    assert main(["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "2", "--negatives", "2", "--distance",
                 "pseudo_huber", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["distance"] == "pseudo_huber"
    model = load_model(out)
    e, r, t = model.entity_embeddings, model.relation_embeddings, model.triples[:7]
    torch.testing.assert_close(pykeen_model(model).score_hrt(t).reshape(-1),
                               -transe_distance(entities=e, relations=r, triples=t, distance="pseudo_huber"))
    assert 0 < link_prediction(model)["mrr"] <= 1
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    occupation = groups.labels[int(torch.minimum(groups.n_male, groups.n_female).argmax())]
    removed = analysis.influence(occupation).topk(3).indices
    assert DISTANCE_NOTES["pseudo_huber"] in predict_removal(analysis, occupation, removed).estimator
    capsys.readouterr()
    assert main(["influence", "--model", str(out), "--occupation", occupation, "--out", str(tmp_path / "i.csv")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert APPROXIMATE_FOR_DISTANCE.format(distance="pseudo_huber") in printed  # as the page's badge says


def test_an_import_may_not_name_the_pseudo_huber_distance(tmp_path: Path, capsys) -> None:
    """pseudo_huber is kgbias's own: no other engine scores with it, so an import naming it is a usage error."""
    code = main(["import", "--format", "npy", "--path", str(tmp_path), "--graph", "synthetic", "--distance",
                 "pseudo_huber", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--distance: invalid choice: 'pseudo_huber'" in err[0]
    assert not (tmp_path / "out").exists()


def test_every_distance_has_its_words_on_the_pages() -> None:
    """The Overview's axis and the influence badge name each distance a model may have (a missing one would be a
    KeyError on the page of such a model)."""
    from kgbias_app.charts import DISTANCE_WORDS
    from kgbias_app.texts import DISTANCE_NAMES
    from kgbias_core.embeddings.config import DISTANCES

    assert set(DISTANCE_WORDS) == set(DISTANCES)
    assert set(DISTANCE_NAMES) == set(DISTANCES) - {"squared_l2"} == set(DISTANCE_NOTES)
