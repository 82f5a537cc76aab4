"""PyKEEN's reference TransE (experiments/link_prediction_reference/pykeen_transe.py, issue 24) resumes from its
checkpoint: the published config trains with plain SGD, whose empty optimiser state PyKEEN 1.11.1 refused to resume."""

from __future__ import annotations

import logging

import pytest
import torch

from tests.conftest import load_script


@pytest.fixture(scope="module")
def reference():
    return load_script("experiments/link_prediction_reference/pykeen_transe.py", "pykeen_transe")


def test_the_published_sgd_config_resumes_from_its_checkpoint(reference, tmp_path, caplog) -> None:
    torch.set_num_threads(1)
    assert reference.CONFIGS["nguyen2018"]["optimizer"] == "SGD"
    kwargs = dict(config="nguyen2018", epochs=2, device="cpu", data_dir=None, seed=0, checkpoint_dir=tmp_path)
    (first,) = reference.run("synthetic", **kwargs)
    saved = torch.load(next(tmp_path.glob("*.pt")), weights_only=False)  # PyKEEN's own file, written by this test
    assert saved["epoch"] == 2 and not saved["optimizer_state_dict"]["state"]  # SGD: nothing to resume from
    with caplog.at_level(logging.INFO, logger="pykeen.training.training_loop"):
        (second,) = reference.run("synthetic", **kwargs)
    assert any("loaded checkpoint" in r.getMessage() and "epoch 2" in r.getMessage() for r in caplog.records)
    assert second["mrr_both"] == pytest.approx(first["mrr_both"], abs=1e-9)  # the saved weights, not a fresh start


def test_kgbias_ranks_pykeens_l1_transe_as_pykeens_evaluator_does(reference) -> None:
    """The FB13 reference is ranked by kgbias (``--ranker kgbias``: torch.cdist, minutes, where PyKEEN's evaluator
    broadcasts [b, E, d]); on one training the two rankers give the same filtered, realistic figures per side."""
    torch.set_num_threads(1)
    kwargs = dict(config="adam_l1_k8", epochs=3, device="cpu", data_dir=None, seed=0)
    theirs, ours = reference.run("synthetic", ranker="both", **kwargs)
    assert (theirs["ranker"], ours["ranker"]) == ("pykeen", "kgbias")
    for side in ("head", "tail", "both"):
        for key in reference.METRIC_KEYS:
            assert ours[f"{key}_{side}"] == pytest.approx(theirs[f"{key}_{side}"], abs=1e-4), (key, side)
    assert 0 < ours["mrr_both"] < 1
    (alone,) = reference.run("synthetic", ranker="kgbias", **kwargs)  # one test triple to PyKEEN, all to kgbias
    assert alone["mrr_both"] == pytest.approx(ours["mrr_both"], abs=1e-9)
