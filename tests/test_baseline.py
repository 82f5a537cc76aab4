"""kgbias_core/evaluation/baseline.py: the popularity scorer's counts and the same-top-1 share, against plain loops
(its ranks against a loop over every entity: tests/test_link_prediction.py)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from kgbias_core.evaluation.baseline import PopularityScorer, modal_share


def test_the_counts_are_each_relations_answers_counted_in_training() -> None:
    generator = torch.Generator().manual_seed(0)
    n_entities, n_relations = 50, 4
    triples = torch.stack([torch.randint(n_entities, (300,), generator=generator),
                           torch.randint(n_relations - 1, (300,), generator=generator),  # relation 3: no triple
                           torch.randint(n_entities, (300,), generator=generator)], dim=1)
    scorer = PopularityScorer(triples, n_entities=n_entities, n_relations=n_relations)
    tails, heads = Counter((r, t) for _, r, t in triples.tolist()), Counter((r, h) for h, r, _ in triples.tolist())
    queries = torch.tensor([[7, 0], [1, 1], [0, 2], [5, 3], [9, 0]])  # (h, r): relations repeat, one is empty
    expected = torch.tensor([[float(tails[(r, e)]) for e in range(n_entities)] for _, r in queries.tolist()])
    assert torch.equal(scorer.score_t(queries), expected)
    assert scorer.score_t(queries)[3].sum() == 0
    rt = queries[:, [1, 0]]  # (relation, tail)
    expected = torch.tensor([[float(heads[(r, e)]) for e in range(n_entities)] for r, _ in rt.tolist()])
    assert torch.equal(scorer.score_h(rt), expected)


def test_modal_share_is_each_relations_most_frequent_answer_counted() -> None:
    answers = torch.tensor([4, 4, 7, 1, 1, 1, 2, 9])
    relations = torch.tensor([0, 0, 0, 1, 1, 1, 1, 5])
    by_loop = sum(Counter(a for a, r in zip(answers.tolist(), relations.tolist(), strict=True) if r == rel)
                  .most_common(1)[0][1] for rel in set(relations.tolist())) / len(answers)
    assert modal_share(answers, relations) == pytest.approx(by_loop) == pytest.approx(6 / 8)
    assert modal_share(torch.tensor([3, 3]), torch.tensor([2, 2])) == 1.0
