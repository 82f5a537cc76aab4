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
    head_scores,
    headline,
    link_prediction,
    link_prediction_sides,
    link_prediction_table,
    load_link_prediction,
    one_side,
    predict_top1_tails,
    rank_metrics,
    tail_scores,
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


def _brute_force_head_rank(model, triple: list[int], known: set[tuple[int, int, int]], n_entities: int) -> float:
    h, r, t = triple
    scores = model.score_hrt(torch.tensor([[e, r, t] for e in range(n_entities)])).reshape(-1)
    better = tied = 0
    for e in range(n_entities):
        if e == h or (e, r, t) in known:
            continue
        better += int(scores[e] > scores[h])
        tied += int(scores[e] == scores[h])
    return 1 + better + tied / 2


@pytest.mark.parametrize("cls", [TransE, RotatE])
def test_filtered_head_ranks_equal_brute_force(factory: TriplesFactory, cls: type) -> None:
    model = cls(triples_factory=factory, embedding_dim=5, random_seed=4)
    known = factory.mapped_triples
    test = known[torch.tensor([0, 3, 10, 11, 15])]
    fast = filtered_ranks(model, triples=test, known=known, batch_size=2, side="head")
    known_set = {tuple(row) for row in known.tolist()}
    slow = [_brute_force_head_rank(model, row, known_set, factory.num_entities) for row in test.tolist()]
    torch.testing.assert_close(fast, torch.tensor(slow, dtype=torch.float32))


@pytest.mark.parametrize(("norm", "power"), [(1, False), (2, False), (2, True)], ids=["l1", "l2", "squared_l2"])
def test_transe_scores_by_distance_equal_pykeens_and_rank_as_brute_force(factory: TriplesFactory, norm: int,
                                                                         power: bool) -> None:
    """Every TransE distance kgbias trains or imports is scored without PyKEEN's [b, E, d] broadcast (cdist for L1
    and L2, one matmul for squared L2): the same scores as PyKEEN's own, and the same filtered ranks as a loop."""
    model = TransE(triples_factory=factory, embedding_dim=5, scoring_fct_norm=norm, power_norm=power, random_seed=6)
    known = factory.mapped_triples
    torch.testing.assert_close(tail_scores(model, known[:, :2]), model.score_t(known[:, :2]), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(head_scores(model, known[:, 1:]), model.score_h(known[:, 1:]), atol=1e-5, rtol=1e-5)
    test = known[torch.tensor([0, 3, 10, 11, 15])]
    known_set = {tuple(row) for row in known.tolist()}
    for side, brute in (("tail", _brute_force_rank), ("head", _brute_force_head_rank)):
        fast = filtered_ranks(model, triples=test, known=known, batch_size=2, side=side)
        slow = [brute(model, row, known_set, factory.num_entities) for row in test.tolist()]
        torch.testing.assert_close(fast, torch.tensor(slow, dtype=torch.float32))


def test_filtered_head_ranks_realistic_ties(factory: TriplesFactory) -> None:
    model = DistMult(triples_factory=factory, embedding_dim=4, random_seed=0)
    with torch.no_grad():
        model.relation_representations[0]._embeddings.weight.zero_()  # every score is 0: all tied
    job = factory.relation_to_id["job"]
    job0 = factory.entity_to_id["job0"]
    known = factory.mapped_triples
    holders = int(((known[:, 1] == job) & (known[:, 2] == job0)).sum())  # heads of (?, job, job0), filtered
    ranks = filtered_ranks(model, triples=torch.tensor([[factory.entity_to_id["p0"], job, job0]]), known=known,
                           side="head")
    # every entity except the true head and the other known heads ties with the true head
    assert float(ranks[0]) == 1 + (factory.num_entities - holders) / 2


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


def test_both_sides_pool_the_head_and_tail_ranks_of_a_stored_model(tiny_model) -> None:
    from kgbias_core.embeddings.pykeen_bridge import pykeen_model
    from kgbias_core.evaluation.link_prediction import known_triples

    sides = link_prediction_sides(tiny_model)
    scorer, test, known = pykeen_model(tiny_model), tiny_model.test_triples, known_triples(tiny_model)
    heads = filtered_ranks(scorer, triples=test, known=known, side="head")
    tails = filtered_ranks(scorer, triples=test, known=known, side="tail")
    def ranks_only(metrics: dict) -> dict:  # without the popularity baseline's columns (tested below)
        return {k: v for k, v in metrics.items() if not k.startswith("baseline_") and k != "same_top1"}

    assert ranks_only(sides["head"]) == rank_metrics(heads) and ranks_only(sides["tail"]) == rank_metrics(tails)
    assert sides["both"]["n"] == 2 * len(test)
    assert sides["both"]["mrr"] == pytest.approx((sides["head"]["mrr"] + sides["tail"]["mrr"]) / 2)
    assert link_prediction(tiny_model) == ranks_only(sides["tail"])  # the default side is unchanged: tails
    assert link_prediction(tiny_model, side="both") == sides["both"]


def test_each_side_carries_the_popularity_baseline_and_the_same_top1_share(tiny_model) -> None:
    """The floor of issue 24's link prediction (kgbias_core.evaluation.baseline): the count scorer's filtered,
    realistic MRR against a loop over every entity, and the share of queries whose top-1 answer is their
    relation's most frequent one against a Counter over the unfiltered argmax of every query."""
    from collections import Counter

    from kgbias_core.embeddings.pykeen_bridge import pykeen_model
    from kgbias_core.evaluation.link_prediction import known_triples

    model, test = tiny_model, tiny_model.test_triples.tolist()
    sides = link_prediction_sides(model)
    known = {tuple(k) for k in known_triples(model).tolist()}
    count = Counter((r, t) for _, r, t in model.triples.tolist())
    reciprocal = []
    for h, r, t in test:
        others = [count[(r, e)] for e in range(model.n_entities) if e != t and (h, r, e) not in known]
        mine = count[(r, t)]
        reciprocal.append(1 / (1 + sum(c > mine for c in others) + 0.5 * sum(c == mine for c in others)))
    assert sides["tail"]["baseline_mrr"] == pytest.approx(sum(reciprocal) / len(reciprocal), abs=1e-6)
    assert 0 <= sides["head"]["baseline_mrr"] <= 1 and "baseline_hits@10" in sides["both"]
    scorer = pykeen_model(model)
    with torch.no_grad():
        best = [int(scorer.score_t(torch.tensor([[h, r]])).argmax()) for h, r, _ in test]
    by_relation = Counter((r, b) for (_, r, _), b in zip(test, best, strict=True))
    modal = sum(max(n for (rel, _), n in by_relation.items() if rel == r) for r in {r for _, r, _ in test})
    assert sides["tail"]["same_top1"] == pytest.approx(modal / len(test))
    assert sides["both"]["same_top1"] == pytest.approx((sides["head"]["same_top1"] + sides["tail"]["same_top1"]) / 2)
    _, top1 = filtered_ranks(scorer, triples=torch.tensor(test), known=known_triples(model), with_top1=True)
    assert top1.tolist() == best


def test_ranks_agree_with_pykeens_rank_based_evaluator(tiny_model) -> None:
    """PyKEEN's own filtered evaluation of the same weights: realistic MRR and Hits@k on each side."""
    from pykeen.evaluation import RankBasedEvaluator

    from kgbias_core.embeddings.pykeen_bridge import pykeen_model

    model, test = tiny_model, tiny_model.test_triples
    filters = [model.triples.cpu()] + [t.cpu() for t in (model.valid_triples,) if t is not None]
    result = RankBasedEvaluator(filtered=True).evaluate(pykeen_model(model), test.cpu(), batch_size=64,
                                                          additional_filter_triples=filters, use_tqdm=False)
    ours = link_prediction_sides(model)
    for side in ("head", "tail", "both"):
        assert ours[side]["mrr"] == pytest.approx(result.get_metric(f"{side}.realistic.inverse_harmonic_mean_rank"),
                                                  rel=1e-5)
        for k in (1, 3, 10):
            assert ours[side][f"hits@{k}"] == pytest.approx(result.get_metric(f"{side}.realistic.hits_at_{k}"),
                                                            abs=1e-9)


def test_link_prediction_is_cached_beside_the_model(tiny_model, tmp_path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert load_link_prediction(path) is None
    first = cached_link_prediction(path)
    assert list(first.queries) == ["all"] * 3 + ["occupation"] * 3 and first.mrr.between(0, 1).all()
    assert list(first.side) == ["head", "tail", "both"] * 2
    ranks = pd.DataFrame([{"queries": q, **link_prediction(tiny_model, occupation_only=q == "occupation")}
                          for q in ("all", "occupation")])
    assert one_side(first, "tail")[list(ranks.columns)].equals(ranks)
    both = link_prediction(tiny_model, side="both")
    line = headline(first)
    assert line["mrr"] == pytest.approx(both["mrr"]) and line["baseline_mrr"] == pytest.approx(both["baseline_mrr"])
    assert line["same_top1"] == pytest.approx(both["same_top1"])
    assert (path / "results" / "link_prediction.csv").is_file()
    (path / "results" / "link_prediction.csv").write_text(first.assign(mrr=0.5).to_csv(index=False))
    assert (cached_link_prediction(path).mrr == 0.5).all()  # read from the cache, not recomputed
    assert (load_link_prediction(path).mrr == 0.5).all()


def test_comparison_tables_carry_the_side() -> None:
    def frame(mrr: float) -> pd.DataFrame:
        return pd.DataFrame({"queries": ["all", "all"], "side": ["tail", "both"], "n": 50, "mr": 4.0,
                             "mrr": [mrr, mrr / 2], "hits@1": 0.1, "hits@3": 0.2, "hits@10": 0.5})

    table = link_prediction_table({"transe": frame(0.3)})
    assert list(table.columns[:3]) == ["model", "queries", "side"]
    change = before_after(frame(0.3), frame(0.2)).set_index("side")
    assert change.loc["both", "mrr before"] == pytest.approx(0.15) and change.loc["both", "mrr after"] == 0.1
    assert headline(frame(0.3))["mrr"] == pytest.approx(0.15) and headline(None) is None


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


def test_cli_link_prediction_writes_the_cached_table(tiny_model, tmp_path, capsys) -> None:
    from kgbias_core.cli import main

    path = save_model(tiny_model, tmp_path)
    out = tmp_path / "links.csv"
    assert main(["link-prediction", "--model", str(path), "--out", str(out)]) == 0
    written = pd.read_csv(out)
    pd.testing.assert_frame_equal(written, load_link_prediction(path))  # the cache beside the model, as written
    assert f"MRR {headline(written)['mrr']:.3f}" in capsys.readouterr().out
    assert main(["link-prediction", "--model", str(tmp_path / "absent"), "--out", str(out)]) == 2


def test_the_command_writes_every_side_with_its_baseline_and_says_it(tiny_model, tmp_path, capsys) -> None:
    """``kgbias link-prediction``: the cached table as CSV (the baseline's columns on every row) and the headline,
    with the popularity baseline's sentence under it."""
    from kgbias_core.cli import main
    from kgbias_core.readings import link_baseline_sentence

    path = save_model(tiny_model, tmp_path / "store")
    out = tmp_path / "links.csv"
    assert main(["link-prediction", "--model", str(path), "--out", str(out)]) == 0
    written = pd.read_csv(out)
    assert {"baseline_mrr", "baseline_hits@1", "baseline_hits@10", "same_top1"} <= set(written.columns)
    assert written["baseline_mrr"].between(0, 1).all() and written["same_top1"].between(0, 1).all()
    printed = capsys.readouterr().out
    line = headline(written)
    assert link_baseline_sentence(line) in printed and f"reaches MRR {line['baseline_mrr']:.3f}" in printed
