"""Which negatives influence uses (kgbias_core.influence.negatives): frozen (exact) or re-drawn (approximate).

Oracles: the negatives a kgbias model was trained with (a re-draw from its own training seed must be them,
and its influence the exact one); a model exported to the npy layout and imported back, whose re-drawn
influence from the training seed must equal the exact influence of the model it came from; brute-force
loops over Python sets with scipy's spearmanr / pearsonr (and Spearman's rho as Pearson's r of mid-ranks counted
by a loop) for the stability and agreement figures.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import StoredModel, load_model, save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.errors import NO_NEGATIVES_IMPORTED, NOT_TRANSE, MeasureError
from kgbias_core.influence.closed_form import influence_context, triple_influence
from kgbias_core.influence.negatives import (
    APPROXIMATE,
    EXACT,
    IMPORT_NEGATIVES,
    influence_agreement,
    influence_negatives,
    redraw_stability,
    redrawn_negatives,
    stability_seeds,
)
from kgbias_core.tables import influence_table

from .conftest import occupation_with_both

#: The seed the exported model was trained with: re-drawing from it must give back its negatives.
TRAIN_SEED = 4


def imported_copy(model: StoredModel) -> StoredModel:
    """``model`` as an import records it: no negatives, ``imported_from``."""
    return replace(model, negatives=None, info={**model.info, "imported_from": "npy", "negatives": "none"})


def test_redrawing_from_the_training_seed_reproduces_the_frozen_negatives(tiny_model) -> None:
    drawn = redrawn_negatives(tiny_model, seed=tiny_model.config.seed)
    assert torch.equal(drawn, tiny_model.negatives)
    other = redrawn_negatives(tiny_model, seed=tiny_model.config.seed + 1)
    assert not torch.equal(other, tiny_model.negatives)
    # Each re-drawn row differs from its triple in the head or the tail only, as training draws them.
    changed = other != tiny_model.triples
    assert not changed[:, 1].any() and bool((changed[:, 0] & changed[:, 2]).sum() == 0)


def test_a_model_with_frozen_negatives_is_exact_and_one_without_is_approximate(tiny_model) -> None:
    own = influence_negatives(tiny_model, seed=7)
    assert own.exact and own.label == EXACT and own.negatives is tiny_model.negatives
    redrawn = influence_negatives(imported_copy(tiny_model), seed=7)
    assert not redrawn.exact and redrawn.label == f"{APPROXIMATE}, seed 7" and redrawn.label.startswith(
        "approximate (negatives re-drawn)")
    assert torch.equal(redrawn.negatives, redrawn_negatives(tiny_model, seed=7))
    distmult = replace(tiny_model, config=replace(tiny_model.config, model="distmult"), negatives=None)
    with pytest.raises(MeasureError) as error:
        influence_negatives(distmult)
    assert str(error.value) == NOT_TRANSE.format(model=distmult.name, kind="distmult")


def test_influence_from_negatives_redrawn_with_the_training_seed_is_the_exact_one(tiny_model) -> None:
    exact = ModelAnalysis(tiny_model)
    redrawn = ModelAnalysis(imported_copy(tiny_model), negative_seed=tiny_model.config.seed)
    occupation = exact.groups.labels[occupation_with_both(exact.context)]
    assert not redrawn.negatives.exact
    assert torch.equal(redrawn.influence(occupation), exact.influence(occupation))
    other = ModelAnalysis(imported_copy(tiny_model), negative_seed=tiny_model.config.seed + 1)
    assert not torch.equal(other.influence(occupation), exact.influence(occupation))


def brute_top(values: np.ndarray, fraction: float) -> set[int]:
    """The top ``fraction`` (at least one, rounded up) of the non-zero entries by |value|, by sorting a list."""
    moving = [(abs(v), i) for i, v in enumerate(values.tolist()) if v != 0]
    moving.sort(reverse=True)
    return {i for _, i in moving[: max(1, math.ceil(fraction * len(moving)))]}


def naive_ranks(values: np.ndarray) -> list[float]:
    """1-based ranks by counting, ties sharing the mean of their ranks."""
    return [1 + sum(w < v for w in values) + (sum(w == v for w in values) - 1) / 2 for v in values]


def sparse_influences(n: int, k: int, *, seed: int) -> list[torch.Tensor]:
    """k correlated influence vectors over n triples, zero on about half of them (as most triples never move)."""
    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(n, generator=generator, dtype=torch.float64)
    moving = torch.rand(n, generator=generator) < 0.5
    return [torch.where(moving & (torch.rand(n, generator=generator) < 0.95),
                        base + 0.4 * torch.randn(n, generator=generator, dtype=torch.float64), 0.0)
            for _ in range(k)]


def test_redraw_stability_equals_spearman_of_the_brute_force_union() -> None:
    influences = sparse_influences(3000, 3, seed=0)
    found = redraw_stability(influences, seeds=(0, 1, 2), fraction=0.02)
    vectors = [v.numpy() for v in influences]
    tops = [brute_top(v, 0.02) for v in vectors]
    union = sorted(set().union(*tops))
    rhos, jaccards = [], []
    for i, j in itertools.combinations(range(3), 2):
        x, y = vectors[i][union], vectors[j][union]
        rhos.append(stats.spearmanr(x, y).statistic)
        # Spearman by its definition: Pearson's r of the mid-ranks (the zeros of a non-moving triple tie).
        assert rhos[-1] == pytest.approx(np.corrcoef(naive_ranks(x), naive_ranks(y))[0, 1], abs=1e-12)
        jaccards.append(len(tops[i] & tops[j]) / len(tops[i] | tops[j]))
    assert found.n_union == len(union) and found.seeds == (0, 1, 2)
    assert found.spearman_min == pytest.approx(min(rhos), abs=1e-12)
    assert found.spearman_mean == pytest.approx(np.mean(rhos), abs=1e-12)
    assert found.overlap_min == pytest.approx(min(jaccards), abs=1e-12)
    assert 0 < found.spearman_min < found.spearman_mean < 1  # correlated, not identical: the test can fail
    same = redraw_stability([influences[0]] * 3, seeds=(5, 6, 7))
    assert (same.spearman_min, same.spearman_mean, same.overlap_min) == (1.0, 1.0, 1.0)


def test_influence_agreement_equals_brute_force() -> None:
    a, b = sparse_influences(4000, 2, seed=1)
    found = influence_agreement(a, b, fraction=0.01)
    x, y = a.numpy(), b.numpy()
    moving = [i for i in range(len(x)) if x[i] != 0 or y[i] != 0]
    top_a, top_b = brute_top(x, 0.01), brute_top(y, 0.01)
    union = sorted(top_a | top_b)
    assert found.n_moving == len(moving) and found.n_top == len(union)
    assert found.spearman == pytest.approx(stats.spearmanr(x[moving], y[moving]).statistic, abs=1e-12)
    assert found.pearson == pytest.approx(stats.pearsonr(x[moving], y[moving]).statistic, abs=1e-12)
    assert found.top_spearman == pytest.approx(stats.spearmanr(x[union], y[union]).statistic, abs=1e-12)
    assert found.top_overlap == pytest.approx(len(top_a & top_b) / len(top_a), abs=1e-12)


def test_analysis_stability_compares_its_own_seed_and_the_next_two(tiny_model) -> None:
    model = imported_copy(tiny_model)
    analysis = ModelAnalysis(model, negative_seed=2)
    occupation = analysis.groups.labels[occupation_with_both(analysis.context)]
    found = analysis.redraw_stability(occupation)
    index = analysis.groups.index(occupation)
    by_hand = [triple_influence(influence_context(model, negatives=redrawn_negatives(model, seed=s)), index)
               for s in stability_seeds(2)]
    assert found == redraw_stability(by_hand, seeds=(2, 3, 4))


# --- a model trained by kgbias, exported to the npy layout and imported back ------------------------
@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[StoredModel, Path]:
    """A TransE trained on the synthetic graph (frozen negatives from :data:`TRAIN_SEED`), its vectors in the
    npy layout of ``kgbias import`` and the model imported from them. -> (trained model, imported directory)."""
    # as many negatives as an import re-draws: the oracle below re-draws them from the training seed
    config = TrainConfig(dim=8, epochs=5, batch_size=1024, lr=1e-2, l2=10.0, seed=TRAIN_SEED,
                         negatives_per_triple=IMPORT_NEGATIVES)
    trained = train_model(load_dataset("synthetic"), config, name="trained", device="cpu")
    folder = tmp_path_factory.mktemp("export") / "npy"
    folder.mkdir()
    for name, vectors, labels in (("entities", trained.entity_embeddings, trained.entity_labels),
                                  ("relations", trained.relation_embeddings, trained.relation_labels)):
        np.save(folder / f"{name}.npy", vectors.numpy())
        (folder / f"{name}.tsv").write_text("".join(f"{i}\t{label}\n" for i, label in enumerate(labels)),
                                            encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"model": "transe", "distance": "squared_l2"}), encoding="utf-8")
    store = tmp_path_factory.mktemp("store")
    save_model(trained, store)
    out = store / "imported"
    assert main(["import", "--format", "npy", "--path", str(folder), "--graph", "synthetic", "--out", str(out)]) == 0
    return trained, out


def test_an_imported_model_gets_labelled_influence_in_the_table_and_the_cli_csv(exported, tmp_path: Path,
                                                                              capsys) -> None:
    trained, out = exported
    imported = load_model(out)
    assert imported.negatives is None
    exact = ModelAnalysis(trained)
    occupation = exact.groups.labels[occupation_with_both(exact.context)]
    table = influence_table(ModelAnalysis(imported), occupation, top=5)
    assert set(table["negatives"]) == {f"{APPROXIMATE}, seed 0"}
    capsys.readouterr()
    csv = tmp_path / "f.csv"
    assert main(["influence", "--model", str(out), "--occupation", occupation, "--top", "6",
                 "--negative-seed", str(TRAIN_SEED), "--out", str(csv)]) == 0
    printed = capsys.readouterr().out
    assert f"influence: {APPROXIMATE}, seed {TRAIN_SEED}" in printed
    assert f"stability: Spearman of the top 1% across negative seeds {TRAIN_SEED}, 5, 6: min" in printed
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["head", "relation", "tail", "head_name", "tail_name", "person", "person_name",
                                   "person_gender", "person_degree", "influence", "negatives"]
    assert set(frame["negatives"]) == {f"{APPROXIMATE}, seed {TRAIN_SEED}"}
    # The oracle: re-drawn from the training seed, the imported model's influence is the trained model's exact one.
    expected = influence_table(exact, occupation, top=6)
    assert frame["head"].tolist() == expected["head"].tolist() and frame["tail"].tolist() == expected["tail"].tolist()
    np.testing.assert_allclose(frame["influence"], expected["influence"], rtol=1e-6)
    # The model trained by kgbias: exact, and the seed flag is said to be unused.
    assert main(["influence", "--model", str(out.parent / "trained"), "--occupation", occupation, "--top", "6",
                 "--negative-seed", "3", "--out", str(tmp_path / "g.csv")]) == 0
    printed = capsys.readouterr().out
    assert f"influence: {EXACT}" in printed and "--negative-seed not used" in printed
    assert set(pd.read_csv(tmp_path / "g.csv")["negatives"]) == {EXACT}


def test_the_report_of_an_imported_model_says_approximate(exported, tmp_path: Path, capsys) -> None:
    trained, out = exported
    analysis = ModelAnalysis(trained)
    occupation = analysis.groups.labels[occupation_with_both(analysis.context)]
    assert main(["report", "--model", str(out), "--occupation", occupation, "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"Most influential training triples ({APPROXIMATE}, seed 0)" in page
    assert "Stability: Spearman of the top 1% across negative seeds 0, 1, 2" in page
    assert f"influence: {APPROXIMATE}, seed 0" in capsys.readouterr().out


def test_a_whatif_on_an_imported_model_is_still_refused(exported, tmp_path: Path, capsys) -> None:
    trained, out = exported
    analysis = ModelAnalysis(trained)
    occupation = analysis.groups.labels[occupation_with_both(analysis.context)]
    capsys.readouterr()
    code = main(["debias", "--model", str(out), "--occupation", occupation, "--remove-k", "3",
                 "--out", str(tmp_path / "whatif")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    from kgbias_core.commands.debias import PREDICT_ONLY_HINT

    assert err.strip().splitlines() == [  # at once, one line: why, and the way to the prediction
        f"error: {NO_NEGATIVES_IMPORTED.format(model='imported', source='npy')}; {PREDICT_ONLY_HINT}"]
    assert not (tmp_path / "whatif").exists()


def test_findings_on_an_imported_model_label_claim_3_approximate(exported, tmp_path: Path, capsys) -> None:
    _, out = exported
    assert main(["findings", "--model", str(out), "--negative-seed", "2", "--data-dir", str(tmp_path / "no-data"),
                 "--out", str(tmp_path / "findings.json")]) == 0
    assert f"influence: {APPROXIMATE}, seed 2" in capsys.readouterr().out
    rows = json.loads((tmp_path / "findings.json").read_text(encoding="utf-8"))["findings"]
    claim3 = [row for row in rows if row["claim"].startswith("3")]
    assert claim3 and all(f"influence {APPROXIMATE}, seed 2" in row["detail"] for row in claim3)
    assert not any(APPROXIMATE in row["detail"] for row in rows if not row["claim"].startswith("3"))


def test_an_import_gets_the_prior_noise_floor_and_a_model_trained_here_none(tiny_model) -> None:
    """Issue 25: an import has no noise band; its floor is c * sd(B_gr over occupations with both genders) / sqrt(m),
    computed here by numpy from the B_gr table; a model trained here has its own band, so no prior."""
    from kgbias_core.whatif.runs import IMPORT_NOISE_FLOOR, import_noise_spread

    own = ModelAnalysis(tiny_model)
    groups = own.groups
    index = occupation_with_both(own.context)
    label = groups.labels[index]
    assert import_noise_spread(own, label) is None
    imported = ModelAnalysis(imported_copy(tiny_model))
    values = imported.group_bias().numpy()
    m = int(min(groups.n_male[index], groups.n_female[index]))
    expected = IMPORT_NOISE_FLOOR * np.std(values[np.isfinite(values)]) / np.sqrt(m)
    assert import_noise_spread(imported, label) == pytest.approx(expected, rel=1e-6) and expected > 0
