"""Link prediction (kgbias_core.evaluation.link_prediction) against brute-force scoring, and its cache."""

import numpy as np
import pandas as pd
import pytest
import torch
from pykeen.models import DistMult, RotatE, TransE
from pykeen.triples import TriplesFactory

from kgbias_core import errors
from kgbias_core.embeddings.store import save_model
from kgbias_core.evaluation.link_prediction import (
    before_after,
    cached_link_prediction,
    filtered_ranks,
    link_prediction_table,
    load_link_prediction,
    predict_top1_tails,
    rank_metrics,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def factory() -> TriplesFactory:
    rows = [[f"p{i}", "job", f"job{i % 3}"] for i in range(10)]
    rows += [[f"p{i}", "gender", "male" if i % 2 else "female"] for i in range(10)]
    rows += [["p0", "job", "job1"], ["p1", "job", "job2"]]
    return TriplesFactory.from_labeled_triples(np.asarray(rows))


def test_top1_equals_brute_force_argmax(factory: TriplesFactory) -> None:
    model = TransE(triples_factory=factory, embedding_dim=5, random_seed=3)
    heads = torch.arange(factory.num_entities)
    relation = factory.relation_to_id["job"]
    fast = predict_top1_tails(model, heads=heads, relation=relation, batch_size=3)
    for h, predicted in zip(heads.tolist(), fast.tolist(), strict=True):
        hrt = torch.tensor([[h, relation, t] for t in range(factory.num_entities)])
        assert predicted == int(model.score_hrt(hrt).reshape(-1).argmax())


def _brute_force_rank(model, triple: list[int], known: set[tuple[int, int, int]], n_entities: int) -> float:
    h, r, t = triple
    scores = model.score_hrt(torch.tensor([[h, r, e] for e in range(n_entities)])).reshape(-1)
    better = tied = 0
    for e in range(n_entities):
        if e == t or (h, r, e) in known:
            continue
        better += int(scores[e] > scores[t])
        tied += int(scores[e] == scores[t])
    return 1 + better + tied / 2


@pytest.mark.parametrize("cls", [TransE, RotatE])
def test_filtered_ranks_equal_brute_force(factory: TriplesFactory, cls: type) -> None:
    model = cls(triples_factory=factory, embedding_dim=5, random_seed=4)
    known = factory.mapped_triples
    test = known[torch.tensor([0, 3, 10, 11, 15])]
    fast = filtered_ranks(model, triples=test, known=known, batch_size=2)
    known_set = {tuple(row) for row in known.tolist()}
    slow = [_brute_force_rank(model, row, known_set, factory.num_entities) for row in test.tolist()]
    torch.testing.assert_close(fast, torch.tensor(slow, dtype=torch.float32))
    # a triple not in `known` is ranked against everything except the known tails of its (h, r)
    extra = torch.tensor([[0, factory.relation_to_id["job"], 5]])
    fast_extra = filtered_ranks(model, triples=extra, known=known)
    assert float(fast_extra[0]) == _brute_force_rank(model, extra[0].tolist(), known_set, factory.num_entities)


def test_filtered_ranks_realistic_ties(factory: TriplesFactory) -> None:
    model = DistMult(triples_factory=factory, embedding_dim=4, random_seed=0)
    with torch.no_grad():
        model.relation_representations[0]._embeddings.weight.zero_()  # every score is 0: all tied
    job = factory.relation_to_id["job"]
    p0 = factory.entity_to_id["p0"]
    known = factory.mapped_triples
    ranks = filtered_ranks(model, triples=torch.tensor([[p0, job, factory.entity_to_id["job0"]]]), known=known)
    # p0 also has job1 (filtered): the other E - 2 entities tie with the true tail
    assert float(ranks[0]) == 1 + (factory.num_entities - 2) / 2


def test_rank_metrics() -> None:
    metrics = rank_metrics(torch.tensor([1.0, 2.0, 4.0, 20.0]))
    assert metrics["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert metrics["mr"] == pytest.approx(27 / 4)
    assert (metrics["hits@1"], metrics["hits@3"], metrics["hits@10"]) == (0.25, 0.5, 0.75)
    with pytest.raises(errors.MeasureError, match="no ranks given"):
        rank_metrics([])


def test_link_prediction_is_cached_beside_the_model(tiny_model, tmp_path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert load_link_prediction(path) is None
    first = cached_link_prediction(path)
    assert list(first.queries) == ["all", "occupation"] and first.mrr.between(0, 1).all()
    assert (path / "results" / "link_prediction.csv").is_file()
    (path / "results" / "link_prediction.csv").write_text(first.assign(mrr=0.5).to_csv(index=False))
    assert (cached_link_prediction(path).mrr == 0.5).all()  # read from the cache, not recomputed
    assert (load_link_prediction(path).mrr == 0.5).all()


def test_comparison_tables_of_link_prediction() -> None:
    def frame(mrr: float) -> pd.DataFrame:
        return pd.DataFrame({"queries": ["all", "occupation"], "n": [50, 10], "mr": 4.0, "mrr": [mrr, mrr / 2],
                             "hits@1": 0.1, "hits@3": 0.2, "hits@10": [0.5, 0.4]})

    table = link_prediction_table({"transe": frame(0.3), "rotate": frame(0.4)})
    assert list(table["model"]) == ["transe", "transe", "rotate", "rotate"]
    assert list(table.columns) == ["model", "queries", "n", "mrr", "hits@1", "hits@3", "hits@10", "mr"]
    change = before_after(frame(0.3), frame(0.2)).set_index("queries")
    assert change.loc["occupation", "mrr before"] == pytest.approx(0.15)
    assert change.loc["occupation", "mrr after"] == pytest.approx(0.1)
    assert list(change.columns) == ["n", "mrr before", "hits@10 before", "mrr after", "hits@10 after"]
