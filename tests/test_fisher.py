"""Fisher's b_p (kgbias_core.measures.fisher): the batched autograd version against naive loops."""

import numpy as np
import pandas as pd
import pytest
import torch
from pykeen.models import ComplEx, DistMult, ERModel, RotatE, TransE
from pykeen.triples import TriplesFactory

from kgbias_core import errors
from kgbias_core.measures.fisher import (
    associated_sides,
    fisher_bias,
    fisher_gradient,
    fisher_person_changes,
    fisher_profession_table,
    most_moved,
    profession_counts,
    top_associated,
)

torch.set_num_threads(1)

GENDERS = ["male", "female", "nonbinary"]


def _tiny_triples() -> np.ndarray:
    rows = []
    for i in range(9):
        rows.append([f"p{i}", "gender", GENDERS[i % 3]])
        rows.append([f"p{i}", "job", f"job{i % 4}"])
        rows.append([f"eth{i % 2}", "ethnicity_people", f"p{i}"])
    rows.append(["p0", "job", "job3"])
    return np.asarray(rows)


@pytest.fixture(scope="module")
def factory() -> TriplesFactory:
    return TriplesFactory.from_labeled_triples(_tiny_triples())


MODELS = {
    "TransE": (TransE, {"scoring_fct_norm": 2, "power_norm": True, "entity_constrainer": None}),
    "DistMult": (DistMult, {}),
    "ComplEx": (ComplEx, {}),
    "RotatE": (RotatE, {}),
}


def _model(factory: TriplesFactory, name: str) -> ERModel:
    cls, kwargs = MODELS[name]
    return cls(triples_factory=factory, embedding_dim=6, random_seed=7, **kwargs)


def _ids(factory: TriplesFactory, prefix: str) -> torch.Tensor:
    return torch.tensor(sorted(i for label, i in factory.entity_to_id.items() if label.startswith(prefix)))


def _naive_bias(
    model: ERModel,
    *,
    persons: torch.Tensor,
    attribute_relation: int,
    value_a: int,
    b_values: list[int],
    occupation_relation: int,
    professions: torch.Tensor,
    step: float,
    person_is_head: bool = True,
) -> torch.Tensor:
    """One autograd call per person on the REAL view of e_j, one score per (person, profession)."""
    entity = model.entity_representations[0]
    relation = model.relation_representations[0]

    def ent(i: int) -> torch.Tensor:
        return entity(indices=torch.tensor([i])).detach()

    def rel(i: int) -> torch.Tensor:
        return relation(indices=torch.tensor([i])).detach()

    def g(h: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return model.interaction(h=h, r=r, t=t).reshape(())

    out = torch.zeros(len(professions), dtype=torch.float64)
    for j in persons.tolist():
        e_j = ent(j)
        is_complex = e_j.is_complex()
        x = (torch.view_as_real(e_j) if is_complex else e_j).clone().requires_grad_(True)
        e = torch.view_as_complex(x) if is_complex else x
        r_s = rel(attribute_relation)
        if person_is_head:
            score_a = g(e, r_s, ent(value_a))
            score_b = sum(g(e, r_s, ent(b)) for b in b_values) / len(b_values)
        else:
            score_a = g(ent(value_a), r_s, e)
            score_b = sum(g(ent(b), r_s, e) for b in b_values) / len(b_values)
        (grad,) = torch.autograd.grad(score_a - score_b, x)
        moved = x.detach() + step * grad
        moved = torch.view_as_complex(moved) if is_complex else moved
        for k, p in enumerate(professions.tolist()):
            before = g(e_j, rel(occupation_relation), ent(p))
            # the unperturbed score is the model's own score_hrt
            assert torch.allclose(before, model.score_hrt(torch.tensor([[j, occupation_relation, p]])).reshape(()))
            after = g(moved, rel(occupation_relation), ent(p))
            out[k] += float(after - before)
    return (out / len(persons)).float()


@pytest.mark.parametrize("name", list(MODELS))
def test_batched_bias_equals_naive_loop(factory: TriplesFactory, name: str) -> None:
    model = _model(factory, name)
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    persons, jobs = _ids(factory, "p"), _ids(factory, "job")
    common = {
        "persons": persons,
        "attribute_relation": r2i["gender"],
        "value_a": e2i["male"],
        "occupation_relation": r2i["job"],
        "professions": jobs,
        "step": 0.05,
    }
    fast = fisher_bias(model, value_b=e2i["female"], **common)  # every person in one chunk
    one_by_one = fisher_bias(model, value_b=e2i["female"], chunk_elements=1, **common)  # a chunk per person
    slow = _naive_bias(model, b_values=[e2i["female"]], **common)
    assert fast.shape == (len(jobs),)
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(one_by_one, slow, rtol=1e-4, atol=1e-6)

    # per person: each row is one person's nabla_p(j); their mean is b_p
    changes = fisher_person_changes(model, value_b=e2i["female"], chunk_elements=1, **common)
    assert changes.shape == (len(persons), len(jobs)) and changes.dtype == torch.float64
    first = _naive_bias(model, b_values=[e2i["female"]], **common | {"persons": persons[:1]})
    torch.testing.assert_close(changes[0].float(), first, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(changes.mean(dim=0).float(), slow, rtol=1e-4, atol=1e-6)

    # one-vs-rest = explicit mean over the other values
    others = torch.tensor([e2i["female"], e2i["nonbinary"]])
    fast_ovr = fisher_bias(model, value_b=None, other_values=others, **common)
    slow_ovr = _naive_bias(model, b_values=others.tolist(), **common)
    torch.testing.assert_close(fast_ovr, slow_ovr, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["TransE", "ComplEx"])
def test_person_as_tail(factory: TriplesFactory, name: str) -> None:
    model = _model(factory, name)
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    common = {
        "persons": _ids(factory, "p"),
        "attribute_relation": r2i["ethnicity_people"],
        "value_a": e2i["eth0"],
        "occupation_relation": r2i["job"],
        "professions": _ids(factory, "job"),
        "step": 0.05,
    }
    fast = fisher_bias(model, value_b=e2i["eth1"], attribute_person_is_head=False, **common)
    slow = _naive_bias(model, b_values=[e2i["eth1"]], person_is_head=False, **common)
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-6)


def test_gradient_equals_finite_differences_transe(factory: TriplesFactory) -> None:
    model = _model(factory, "TransE").double()
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    persons = _ids(factory, "p")[:3]
    male, female, gender = e2i["male"], e2i["female"], r2i["gender"]
    _, grad = fisher_gradient(model, persons=persons, attribute_relation=gender, value_a=male, value_b=female)
    weight = model.entity_representations[0]._embeddings.weight

    def margin(j: int) -> float:
        hrt = torch.tensor([[j, gender, male], [j, gender, female]])
        scores = model.score_hrt(hrt).reshape(-1)
        return float(scores[0] - scores[1])

    eps = 1e-5
    with torch.no_grad():
        for row, j in enumerate(persons.tolist()):
            for k in range(weight.shape[1]):
                weight[j, k] += eps
                up = margin(j)
                weight[j, k] -= 2 * eps
                down = margin(j)
                weight[j, k] += eps
                assert (up - down) / (2 * eps) == pytest.approx(float(grad[row, k]), rel=1e-5)


def test_sign_transe_by_construction() -> None:
    """Pushing towards a raises a profession lying along (e_a - e_b): positive b_p."""
    rows = [["x", "gender", "a"], ["y", "gender", "b"], ["x", "job", "up"], ["y", "job", "down"]]
    factory = TriplesFactory.from_labeled_triples(np.asarray(rows))
    model = TransE(
        triples_factory=factory,
        embedding_dim=2,
        scoring_fct_norm=2,
        power_norm=True,
        entity_constrainer=None,
        random_seed=0,
    )
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    entities = {"x": [0.0, 0.3], "y": [0.2, -0.1], "a": [1.0, 0.0], "b": [-1.0, 0.0]}
    entities |= {"up": [2.0, 0.0], "down": [-2.0, 0.0]}
    with torch.no_grad():
        for label, vector in entities.items():
            model.entity_representations[0]._embeddings.weight[e2i[label]] = torch.tensor(vector)
        model.relation_representations[0]._embeddings.weight.zero_()
    bias = fisher_bias(
        model,
        persons=torch.tensor([e2i["x"], e2i["y"]]),
        attribute_relation=r2i["gender"],
        value_a=e2i["a"],
        value_b=e2i["b"],
        occupation_relation=r2i["job"],
        professions=torch.tensor([e2i["up"], e2i["down"]]),
    )
    assert bias[0] > 0 > bias[1]
    # TransE, r = 0: grad mm = 2 (e_a - e_b) = (4, 0); nabla_up = -|e+0.01*grad-up|^2 + |e-up|^2
    expected_up = np.mean([-((x + 0.04 - 2) ** 2) + (x - 2) ** 2 for x in (0.0, 0.2)])
    assert float(bias[0]) == pytest.approx(expected_up, rel=1e-4)


def test_profession_table_counts_filter_and_top_k(factory: TriplesFactory) -> None:
    model = _model(factory, "DistMult")
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    triples = factory.mapped_triples
    pp = triples[triples[:, 1] == r2i["job"]][:, [0, 2]].numpy()
    pv = triples[triples[:, 1] == r2i["gender"]][:, [0, 2]].numpy()
    jobs = _ids(factory, "job")
    counts = profession_counts(
        professions=jobs.numpy(),
        person_professions=pp,
        person_values=pv,
        value_a=e2i["male"],
        value_b=e2i["female"],
    )
    # persons p_i: gender GENDERS[i % 3], job i % 4, plus p0 (male? no: i=0 -> male) has job3
    for _, row in counts.iterrows():
        job = int(row["profession"])
        label = next(lab for lab, i in e2i.items() if i == job)
        k = int(label[3:])
        holders = {i for i in range(9) if i % 4 == k} | ({0} if k == 3 else set())
        assert row["n_a"] == sum(1 for i in holders if i % 3 == 0)
        assert row["n_b"] == sum(1 for i in holders if i % 3 == 1)

    common = {
        "persons": _ids(factory, "p"),
        "attribute_relation": r2i["gender"],
        "value_a": e2i["male"],
        "value_b": e2i["female"],
        "occupation_relation": r2i["job"],
        "professions": jobs,
        "person_professions": pp,
        "person_values": pv,
    }
    table = fisher_profession_table(model, min_count=0, **common)
    assert list(table.columns) == ["profession", "bias", "n_a", "n_b"]
    assert table["bias"].is_monotonic_decreasing
    bias = fisher_bias(model, **{k: v for k, v in common.items() if not k.startswith("person_")})
    by_id = dict(zip(jobs.tolist(), bias.tolist(), strict=True))
    for _, row in table.iterrows():
        assert row["bias"] == pytest.approx(by_id[int(row["profession"])], rel=1e-6)

    filtered = fisher_profession_table(model, min_count=3, **common)
    assert (filtered["n_a"] + filtered["n_b"] >= 3).all()
    assert len(filtered) < len(table)

    top_a = top_associated(table, k=2, toward="a")
    top_b = top_associated(table, k=2, toward="b")
    assert (top_a["bias"] > 0).all() and (top_b["bias"] < 0).all()
    assert top_b["bias"].is_monotonic_increasing


def test_errors_name_the_problem(factory: TriplesFactory) -> None:
    model = _model(factory, "TransE")
    e2i, r2i = factory.entity_to_id, factory.relation_to_id
    common = {
        "persons": _ids(factory, "p"),
        "value_a": e2i["male"],
        "occupation_relation": r2i["job"],
        "professions": _ids(factory, "job"),
    }
    with pytest.raises(errors.MeasureError, match="unknown relation 999"):
        fisher_bias(model, attribute_relation=999, value_b=e2i["female"], **common)
    with pytest.raises(errors.MeasureError, match="one-vs-rest needs at least one other value"):
        fisher_bias(model, attribute_relation=r2i["gender"], value_b=None, **common)
    with pytest.raises(errors.MeasureError, match="unknown entity 12345"):
        fisher_bias(model, attribute_relation=r2i["gender"], value_b=12345, **common)
    with pytest.raises(errors.MeasureError, match="also listed among other_values"):
        fisher_bias(
            model,
            attribute_relation=r2i["gender"],
            value_b=None,
            other_values=torch.tensor([e2i["male"], e2i["female"]]),
            **common,
        )


def _table(biases: list[float]) -> pd.DataFrame:
    """A fisher_profession_table-shaped frame: professions 0..n-1 with the given b_p, largest first."""
    frame = pd.DataFrame({"profession": range(len(biases)), "bias": biases, "n_a": 1, "n_b": 1})
    return frame.sort_values("bias", ascending=False, ignore_index=True)


def test_associated_sides_split_by_sign() -> None:
    top_a, top_b, fallback = associated_sides(_table([0.3, 0.1, -0.2, -0.4, 0.2]), k=2)
    assert fallback is None
    assert top_a["profession"].tolist() == [0, 4] and top_b["profession"].tolist() == [3, 2]


def test_associated_sides_fall_back_to_the_least_a_associated_when_no_b_p_is_negative() -> None:
    top_a, top_b, fallback = associated_sides(_table([0.3, 0.1, 0.2, 0.05]), k=2)
    assert fallback == "b"
    assert top_a["profession"].tolist() == [0, 2]
    assert top_b["profession"].tolist() == [3, 1]  # least first, none of the a side's


def test_associated_sides_fall_back_on_the_a_side_when_every_b_p_is_negative() -> None:
    top_a, top_b, fallback = associated_sides(_table([-0.3, -0.1, -0.2]), k=2)
    assert fallback == "a"
    assert top_b["profession"].tolist() == [0, 2]
    assert top_a["profession"].tolist() == [1]  # the one profession left, never one of the b side's


def test_most_moved_ranks_by_magnitude() -> None:
    assert most_moved(_table([0.3, -0.5, 0.1, -0.05]), k=3)["profession"].tolist() == [1, 0, 2]
