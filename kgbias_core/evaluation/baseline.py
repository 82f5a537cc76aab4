"""The floor a link predictor is read against: a popularity count, and whether the model reads the query's entity.

A TransE whose person rows are tiny next to its relation and value rows scores (h, r, t) almost as ||r - t||: the
head barely moves the ranking, and every query of a relation gets the same answers. FB13's default config with eight
negatives does that (median entity row, nearly always a person's, of norm 0.12; ``male`` 3.9): all 5,796 gender test
queries get ``united_kingdom`` as their top tail, every query of its 7 relations one answer per relation, and its
pooled MRR (0.089) is below the count's (0.239) (docs/results/default_models.md). Two readings show it beside the
MRR:

- the **popularity baseline**: each relation's answers ranked by how often they answer it in the training split
  (tails of (., r, ?) by the count of (., r, t); heads of (?, r, t) by that of (h, r, .)), the query's own entity
  ignored, through the same filtered, realistic ranks as the model
  (:func:`kgbias_core.evaluation.link_prediction.filtered_ranks`);
- the **same-top-1 share**: the share of queries whose unfiltered top-1 answer is the one most often top-1 among
  the queries of their relation (:func:`modal_share`); 1 where the model gives every query of a relation the same
  answer, as the count does.
"""

from __future__ import annotations

import torch

from kgbias_core.types import FloatTensor, LongTensor


class PopularityScorer:
    """The popularity baseline as a scorer for :func:`~kgbias_core.evaluation.link_prediction.filtered_ranks`:
    score(h, r, t) = the number of training triples (., r, t) on the tail side, (h, r, .) on the head side.

    It has ``score_t`` / ``score_h`` as a PyKEEN model does, and no TransE interaction, so the ranker asks it for
    scores. The counts are kept per relation, sorted (one entry per distinct (r, entity) pair of the training split),
    not as an [R, E] table: a graph of many relations and millions of entities would not hold that table."""

    def __init__(self, triples: LongTensor, *, n_entities: int, n_relations: int,
                 device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.num_relations = n_relations
        self.n_entities = n_entities
        triples = triples.to(self.device)
        self._tails = self._counts(triples[:, 1], triples[:, 2])
        self._heads = self._counts(triples[:, 1], triples[:, 0])

    def _counts(self, relations: LongTensor, entities: LongTensor) -> tuple[LongTensor, LongTensor, FloatTensor]:
        """(start of each relation's run [R + 1], the runs' entities [m], their counts [m]): a CSR of the counts."""
        keys, counts = torch.unique(relations * self.n_entities + entities, return_counts=True)  # sorted
        starts = torch.searchsorted(keys // self.n_entities,
                                    torch.arange(self.num_relations + 1, device=self.device))
        return starts, keys % self.n_entities, counts.to(torch.float32)

    def _scores(self, table: tuple[LongTensor, LongTensor, FloatTensor], relations: LongTensor) -> FloatTensor:
        """[b] relations -> [b, E]: each entity's count in the query's relation, 0 where it has none."""
        starts, entities, counts = table
        first, size = starts[relations], starts[relations + 1] - starts[relations]  # [b]
        rows = torch.repeat_interleave(torch.arange(len(relations), device=self.device), size)
        at = torch.repeat_interleave(first - (torch.cumsum(size, 0) - size), size) + torch.arange(
            int(size.sum()), device=self.device)  # each row's run, laid end to end
        scores = torch.zeros(len(relations), self.n_entities, device=self.device)
        scores[rows, entities[at]] = counts[at]
        return scores

    def score_t(self, hr: LongTensor) -> FloatTensor:
        """hr [b, 2] -> [b, E]: each entity's count as the tail of the query's relation."""
        return self._scores(self._tails, hr[:, 1].to(self.device))

    def score_h(self, rt: LongTensor) -> FloatTensor:
        """rt [b, 2] (relation, tail) -> [b, E]: each entity's count as the head of the query's relation."""
        return self._scores(self._heads, rt[:, 0].to(self.device))


def modal_share(answers: LongTensor, relations: LongTensor) -> float:
    """The share of queries whose answer is the most frequent answer among the queries of their relation:
    sum over relations r of max_e #{i : relations_i = r, answers_i = e}, over n. Shapes: answers, relations [n]."""
    answers, relations = answers.cpu(), relations.cpu()
    if not len(answers):
        return float("nan")
    n_answers = int(answers.max()) + 1
    pairs = relations * n_answers + answers  # one key per (relation, answer)
    keys, counts = torch.unique(pairs, return_counts=True)
    best = torch.zeros(int(relations.max()) + 1, dtype=counts.dtype).scatter_reduce(
        0, keys // n_answers, counts, reduce="amax")
    return float(best.sum()) / len(answers)
