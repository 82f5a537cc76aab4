"""The synthetic people graph: seeded, skewed, structured, with reported non-binary values."""

from __future__ import annotations

import numpy as np

from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.measures.groups import entity_degree


def test_same_seed_same_graph_other_seed_other_graph() -> None:
    a = generate_people_graph(SyntheticConfig(n_persons=300, seed=1))
    b = generate_people_graph(SyntheticConfig(n_persons=300, seed=1))
    c = generate_people_graph(SyntheticConfig(n_persons=300, seed=2))
    assert a.data_hash == b.data_hash != c.data_hash
    assert (a.training.mapped_triples == b.training.mapped_triples).all()
    assert a.training.num_triples != c.training.num_triples or not (
        a.training.mapped_triples == c.training.mapped_triples
    ).all()


def test_occupations_are_gender_skewed_and_degrees_heavy_tailed(tiny_graph) -> None:
    triples = tiny_graph.training.triples  # small graph: the labelled view is cheap
    gender = {h: t for h, r, t in triples if r == "gender"}
    share = {}
    for occupation in ("nurse", "footballer"):
        holders = [h for h, r, t in triples if r == "occupation" and t == occupation]
        share[occupation] = np.mean([gender[h] == "female" for h in holders])
    assert share["nurse"] > 0.5 > 0.2 > share["footballer"]
    degree = entity_degree(tiny_graph.training.mapped_triples, tiny_graph.training.num_entities)
    persons = [tiny_graph.entity_to_id[p] for p in gender]
    person_degree = degree[persons].float()
    assert person_degree.max() > 4 * person_degree.median()
    assert {"spouse", "created", "genre", "born_in", "nationality"} <= set(triples[:, 1])
    assert tiny_graph.gender_report().other_values  # non-binary values exist and are counted
