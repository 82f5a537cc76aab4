"""The device paths: every core computation run with ``device`` as a parameter, against the CPU result.

Here (no GPU) only ``cpu`` runs and ``cuda`` is skipped; on a machine with a GPU the same tests run the
CUDA branches (training, measures, influence, re-drawn negatives, link prediction) and compare each
with the CPU. Tolerances allow for float32 reductions summed in another order on the GPU.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import train_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.influence.closed_form import influence_context, triple_influence
from kgbias_core.influence.negatives import influence_negatives
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


def test_training_on_the_device_keeps_every_tensor_there_and_matches_the_cpu(
    tiny_graph: KnowledgeGraph, device: torch.device
) -> None:
    config = replace(TINY_TRAINING, epochs=3)
    cpu = train_model(tiny_graph, config, name="cpu", device=torch.device("cpu"))
    there = train_model(tiny_graph, config, name="there", device=device)
    assert there.entity_embeddings.device.type == device.type
    # The frozen negatives are drawn on the CPU from the seed, so both runs train against the same ones.
    assert torch.equal(there.negatives.cpu(), cpu.negatives)
    _close(there.entity_embeddings, cpu.entity_embeddings, atol=1e-3)


def test_measures_on_the_device_equal_the_cpu(tiny_model: StoredModel, device: torch.device) -> None:
    cpu, there = ModelAnalysis(tiny_model), ModelAnalysis(tiny_model.to(device))
    assert there.group_bias().device.type == device.type
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
