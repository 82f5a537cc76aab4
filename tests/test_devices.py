"""The device paths: every core computation run with ``device`` as a parameter, against the CPU result.

Here (no GPU) only ``cpu`` runs and ``cuda`` is skipped; on a machine with a GPU the same tests run the
CUDA branches (training, measures, influence, the iterative solvers, re-drawn negatives, link
prediction) and compare each with the CPU, and training with itself: it must reproduce bit for bit.
Tolerances allow for float32 reductions summed in another order on the GPU.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import default_device, retrain_device, train_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.influence.closed_form import influence_context, triple_influence
from kgbias_core.influence.iterative import conjugate_gradient_solve, group_bias_rhs, lissa_solve
from kgbias_core.influence.negatives import influence_negatives
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from tests.conftest import TINY_TRAINING, occupation_with_both

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")),
]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


def _close(on_device: torch.Tensor, on_cpu: torch.Tensor, *, atol: float = 1e-4) -> None:
    assert on_device.device.type != "meta"
    torch.testing.assert_close(on_device.cpu(), on_cpu, atol=atol, rtol=1e-4, equal_nan=True)


def test_training_on_the_device_runs_there_and_matches_the_cpu(
    tiny_graph: KnowledgeGraph, device: torch.device
) -> None:
    config = replace(TINY_TRAINING, epochs=3)
    cpu = train_model(tiny_graph, config, name="cpu", device=torch.device("cpu"))
    there = train_model(tiny_graph, config, name="there", device=device)
    assert there.info["device"] == str(device)
    # Weights come back on the CPU, ready to save; the model moves to a device with .to().
    assert there.entity_embeddings.device.type == "cpu"
    # The frozen negatives are drawn on the CPU from the seed, so both runs train against the same ones.
    assert torch.equal(there.negatives, cpu.negatives)
    _close(there.entity_embeddings, cpu.entity_embeddings, atol=1e-3)


def test_training_on_the_device_reproduces_itself_bit_for_bit(tiny_graph: KnowledgeGraph, device: torch.device) -> None:
    config = replace(TINY_TRAINING, epochs=3)
    first = train_model(tiny_graph, config, name="first", device=device)
    second = train_model(tiny_graph, config, name="second", device=device)
    assert torch.equal(first.entity_embeddings, second.entity_embeddings)
    assert torch.equal(first.relation_embeddings, second.relation_embeddings)
    assert not torch.are_deterministic_algorithms_enabled()  # the switch is restored after the loop


def test_measures_on_the_device_equal_the_cpu(tiny_model: StoredModel, device: torch.device) -> None:
    cpu, there = ModelAnalysis(tiny_model), ModelAnalysis(tiny_model.to(device))
    assert there.group_bias().device.type == device.type
    # Measured again from scratch: the same bits (group sums are float64, whatever order a GPU adds in).
    again = ModelAnalysis(tiny_model.to(device)).group_bias()
    torch.testing.assert_close(again, there.group_bias(), rtol=0, atol=0, equal_nan=True)
    _close(there.group_bias(), cpu.group_bias())
    for moved, stayed in zip(there.pair_biases, cpu.pair_biases, strict=True):
        _close(moved, stayed)
    _close(there.fisher_bp, cpu.fisher_bp)


def test_influence_on_the_device_equals_the_cpu(tiny_model: StoredModel, device: torch.device) -> None:
    cpu_context = influence_context(tiny_model)
    there_context = influence_context(tiny_model.to(device))
    occupation = occupation_with_both(cpu_context)
    assert torch.equal(there_context.active.cpu(), cpu_context.active)
    _close(triple_influence(there_context, occupation), triple_influence(cpu_context, occupation), atol=1e-5)


def test_iterative_solvers_on_the_device_equal_the_cpu(tiny_model: StoredModel, device: torch.device) -> None:
    cpu_context, there = influence_context(tiny_model), tiny_model.to(device)
    index = occupation_with_both(cpu_context)
    cpu_rhs = group_bias_rhs(cpu_context, index)
    there_rhs = group_bias_rhs(influence_context(there), index)
    damping = 10 * tiny_model.damping
    for solve in (lambda m, r: conjugate_gradient_solve(m, r, damping=damping, iterations=50),
                  lambda m, r: lissa_solve(m, r, damping=damping, depth=20, batch_size=1024, repeats=1)):
        for moved, stayed in zip(solve(there, there_rhs), solve(tiny_model, cpu_rhs), strict=True):
            assert moved.device.type == device.type
            _close(moved, stayed, atol=1e-3)


def test_redrawn_negatives_are_the_same_on_every_device(tiny_model: StoredModel, device: torch.device) -> None:
    imported = replace(tiny_model, negatives=None, info={**tiny_model.info, "imported_from": "npy"})
    drawn = influence_negatives(imported.to(device), seed=3)
    assert drawn.seed == 3
    assert torch.equal(drawn.negatives.cpu(), influence_negatives(imported, seed=3).negatives)


def test_link_prediction_on_the_device_equals_the_cpu(tiny_model: StoredModel, device: torch.device) -> None:
    cpu, there = link_prediction(tiny_model), link_prediction(tiny_model.to(device))
    assert cpu.keys() == there.keys()
    for key, value in cpu.items():
        assert there[key] == pytest.approx(value, abs=1e-3), key


def test_a_model_is_retrained_on_the_kind_of_device_it_was_trained_on(
    tiny_model: StoredModel, device: torch.device
) -> None:
    moved = tiny_model.to(device)  # trained on the CPU, now held on ``device``
    assert retrain_device(moved) == torch.device("cpu")
    groups = occupation_groups(moved)
    # So an unedited retrain reproduces the stored B_gr bit for bit, whichever device holds the model.
    again = masked_retrain_bias(moved, removed=None, groups=groups)
    stored = group_bias(entity_embeddings=moved.entity_embeddings, relation_embeddings=moved.relation_embeddings,
                        groups=groups)
    torch.testing.assert_close(again.cpu(), stored.cpu(), rtol=0, atol=0, equal_nan=True)


def test_the_retrain_device_falls_back_to_the_default_where_the_trained_kind_is_absent(tiny_model: StoredModel) -> None:
    on_gpu = replace(tiny_model, info={**tiny_model.info, "device": "cuda"})
    assert retrain_device(on_gpu) == (torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))
    unknown = replace(tiny_model, info={k: v for k, v in tiny_model.info.items() if k != "device"})
    assert retrain_device(unknown) == default_device()
