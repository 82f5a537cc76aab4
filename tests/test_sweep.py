"""The default-model sweep (experiments/default_models/sweep.py, issue 24): its --shard splits the influence check's
occupations between processes without overlap, and their rows summarise as one run's."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
import torch

from tests.conftest import load_script

CONFIG = "dim=8,epochs=10,batch_size=256,lr=0.01,seed=3,l2=10,negatives=2"


@pytest.fixture(scope="module")
def sweep():
    return load_script("experiments/default_models/sweep.py", "default_model_sweep")


def _run(sweep, monkeypatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["sweep.py", "--dataset", "synthetic", "--synthetic", "tests", "--config", CONFIG,
                                      "--shares", "2", "--no-exact", *args])
    sweep.main()


def test_shards_check_every_occupation_once_and_summarise_as_one_run(sweep, monkeypatch, tmp_path) -> None:
    store = tmp_path / "store"
    _run(sweep, monkeypatch, "--no-influence", "--store", str(store), "--runs", str(tmp_path / "all.csv"))
    models = tmp_path / "all_models.csv"
    trained = pd.read_csv(models)
    assert len(trained) == 1 and trained["mrr"].between(0, 1).all()
    parts = []
    for i in range(2):  # as objective_influence.sh runs them: the models file copied, so no shard ranks again
        runs = tmp_path / f"s{i}.csv"
        runs.with_name(f"s{i}_models.csv").write_bytes(models.read_bytes())
        _run(sweep, monkeypatch, "--shard", f"{i}/2", "--store", str(store), "--runs", str(runs))
        parts.append(pd.read_csv(runs))
        assert len(pd.read_csv(runs.with_name(f"s{i}_models.csv"))) == 1
    first, second = ({*p["occupation"]} for p in parts)
    assert len(first) == 2 and len(second) == 1 and not first & second  # 3 occupations: 0 and 2, then 1
    for part in parts:  # per occupation: the unmasked base and top / bottom / random at 2%
        assert sorted(part.groupby("occupation").size().unique()) == [4]
    pd.concat(parts).to_csv(tmp_path / "all.csv", index=False)
    _run(sweep, monkeypatch, "--runs", str(tmp_path / "all.csv"), "--summarize-only")
    summary = pd.read_csv(tmp_path / "all_summary.csv")
    assert summary.loc[0, "occupations"] == 3 and summary.loc[0, "sets"] == 9
    assert -1 <= summary.loc[0, "r_closed_min"] <= 1


def _estimate_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"estimate {CONFIG}:"))


def test_a_resumed_run_reads_the_unmasked_retrain_back_and_retrains_only_the_missing_set(sweep, monkeypatch,
                                                                                         tmp_path, capsys) -> None:
    """A rerun with one set's row gone retrains that set only (the real masked retrain, counted), takes the base B_gr
    from the base rows, and writes the row the first run wrote; the printed estimate prices that one retrain and no
    training (the model is stored), where the first run's priced the training, the base and the three sets."""
    store, runs = tmp_path / "store", tmp_path / "r.csv"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor")
    assert " + 4 retrains " in _estimate_line(capsys.readouterr().out)
    first = pd.read_csv(runs)
    assert len(first) == 4 and first["kind"].tolist()[0] == "base"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor", "--estimate-only")
    assert "training 0 s (stored) + 0 retrains 0 s" in _estimate_line(capsys.readouterr().out)
    first.drop(index=2).to_csv(runs, index=False)  # a set's row lost: the run stopped before it
    calls = []
    real = sweep.masked_retrain_bias
    monkeypatch.setattr(sweep, "masked_retrain_bias", lambda *a, **k: calls.append(k["removed"]) or real(*a, **k))
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor")
    assert "training 0 s (stored) + 1 retrains " in _estimate_line(capsys.readouterr().out)
    assert len(calls) == 1 and calls[0] is not None  # one masked retrain, no unmasked one
    again = pd.read_csv(runs)
    assert len(again) == 4
    redone = again.iloc[-1]
    assert (redone["kind"], redone["share"]) == (first.loc[2, "kind"], first.loc[2, "share"])
    assert redone["actual"] == pytest.approx(first.loc[2, "actual"], abs=1e-6)


def test_the_curvature_diagonal_is_autograds_hessian_diagonal_of_the_active_margins(sweep, tiny_graph) -> None:
    """``--alpha curvature``: per coordinate, max(half the diagonal of the Hessian of (1/K) sum over the active pairs
    of psi(z) - psi(z'), 0) + lambda, with psi the pseudo_huber distance, against autograd's dense Hessian."""
    from dataclasses import replace

    import torch

    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.objective import residual_distance
    from kgbias_core.embeddings.training import train_model
    from tests.conftest import TINY_TRAINING

    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="pseudo_huber", negatives_per_triple=2,
                                            dim=4), name="ph", device=torch.device("cpu"))
    analysis = ModelAnalysis(model)
    context = analysis.context
    alpha = sweep.curvature_diagonal(context, analysis.damping)
    slots, relation = context.slots, context.relation
    R = context.relation_embeddings

    def margin_part(flat: torch.Tensor) -> torch.Tensor:
        e = flat.reshape(context.entity_embeddings.shape)
        pos = residual_distance(e[slots[:, 0]] + R[relation] - e[slots[:, 1]], distance="pseudo_huber")
        neg = residual_distance(e[slots[:, 2]] + R[relation] - e[slots[:, 3]], distance="pseudo_huber")
        return (pos - neg).sum() / context.n_negatives

    entities = context.entity_embeddings.double()
    hessian = torch.autograd.functional.hessian(margin_part, entities.reshape(-1).float())
    expected = (torch.diagonal(hessian).reshape(entities.shape) / 2).clamp_min(0) + analysis.damping
    assert int(context.active.shape[0]) > 0
    torch.testing.assert_close(alpha, expected.to(alpha.dtype), rtol=1e-4, atol=1e-4)
    assert float((alpha - analysis.damping).max()) > 0  # some coordinates are stiffer than Du's lambda alone


def test_the_estimate_prices_pseudo_huber_by_its_measured_factor(sweep, tiny_graph) -> None:
    # The sweep printed pseudo-Huber's FB13 training at squared L2's time (918 s both); its epoch costs 1.33 times.
    from dataclasses import replace

    from kgbias_core.embeddings.config import TrainConfig
    from kgbias_core.embeddings.training_cost import DISTANCE_FACTORS

    plain = TrainConfig(dim=8, epochs=10, batch_size=256, negatives_per_triple=4)
    for distance in ("squared_l2", "l1", "pseudo_huber"):
        train, retrains = sweep.estimate(tiny_graph, replace(plain, distance=distance),
                                         retrains=3)
        assert train == pytest.approx(DISTANCE_FACTORS[distance] * sweep.estimate(tiny_graph, plain, retrains=0)[0])
        assert retrains == pytest.approx(3 * train)


def test_kinds_retrain_only_those_sets_in_their_order_and_a_full_run_then_adds_the_rest(sweep, monkeypatch,
                                                                                       tmp_path) -> None:
    """``--kinds random,top``: the random set first (the noise, where a slow shard will not finish), then the top
    one, no bottom set; the same run without --kinds then retrains only the bottom set."""
    store, runs = tmp_path / "store", tmp_path / "r.csv"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor",
         "--kinds", "random,top")
    first = pd.read_csv(runs)
    assert first["kind"].tolist() == ["base", "random", "top"]
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor")
    assert pd.read_csv(runs)["kind"].tolist() == ["base", "random", "top", "bottom"]
    for wrong in ("middle", "top,top", ""):
        with pytest.raises(SystemExit) as stop:
            _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--kinds", wrong)
        assert stop.value.code == 2


def test_sizes_from_another_check_retrain_that_many_triples_and_bad_sizes_stop_before_any_retrain(
        sweep, monkeypatch, tmp_path, capsys) -> None:
    """``--sizes-from``: each set takes the other check's k for its occupation, kind and share (FB13's one-negative
    model at eight negatives' sizes), keeps that share as its label, and removes the triples a random set of k
    draws whatever the model; a missing file or size is one line and exit 2, before any retrain."""
    store, other, runs = tmp_path / "store", tmp_path / "other.csv", tmp_path / "r.csv"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(other), "--occupations", "actor", "--kinds", "random")
    sizes = pd.read_csv(other)
    sizes.loc[sizes["kind"] == "random", "k"] = 37  # another model's size, not 2% of this one's moving triples
    sizes.to_csv(other, index=False)
    one = CONFIG.replace("negatives=2", "negatives=1")
    monkeypatch.setattr(sys, "argv", ["sweep.py", "--dataset", "synthetic", "--synthetic", "tests", "--config", one,
                                      "--shares", "2", "--no-exact", "--store", str(store), "--runs", str(runs),
                                      "--occupations", "actor", "--kinds", "random", "--sizes-from", str(other)])
    sweep.main()
    row = pd.read_csv(runs).query("kind == 'random'").iloc[0]
    assert row["k"] == 37 and row["share"] == 2
    (model_dir,) = [p for p in store.iterdir() if p.name.endswith(sweep.fingerprint(
        sweep.load_dataset("synthetic", synthetic=sweep.SYNTHETIC_GRAPHS["tests"]),
        sweep.parse_config(one, sweep.default_train_config("synthetic")))[:12])]
    analysis = sweep.ModelAnalysis(sweep.load_model(model_dir, device=torch.device("cpu")))
    closed = analysis.influence("actor")
    removed = sweep.removal_set(closed, kind="random", k=37)
    assert removed.numel() == 37 and row["closed_form"] == pytest.approx(float(closed[removed].sum()), abs=1e-6)
    assert torch.equal(removed, sweep.removal_set(torch.zeros_like(closed), kind="random", k=37))  # any model's
    before, trained = runs.read_bytes(), runs.with_name("r_models.csv").read_bytes()
    for flags in (("--sizes-from", str(tmp_path / "none.csv")), ("--sizes-from", str(other), "--shares", "8")):
        with pytest.raises(SystemExit) as stop:
            _run(sweep, monkeypatch, "--store", str(store), "--runs", str(runs), "--occupations", "actor",
                 "--kinds", "random", *flags)
        assert stop.value.code == 2
        assert capsys.readouterr().err.strip().count("\n") == 0 and runs.read_bytes() == before
        assert runs.with_name("r_models.csv").read_bytes() == trained  # refused before training or ranking


def test_an_occupation_checked_for_noise_only_counts_for_the_noise_not_for_r(sweep) -> None:
    """Two occupations with their random 2% set only (as FB13 L1's check, 2026-12-03): r over Actor's six sets,
    the noise over all three occupations' random sets, 1 occupation with an r."""
    generator = np.random.default_rng(3)
    closed = generator.normal(size=6)
    actual = 0.1 * closed + generator.normal(scale=0.01, size=6)
    kinds = ["top", "top", "bottom", "bottom", "random", "random"]
    rows = [{"config_hash": "h", "occupation": "actor", "kind": kind, "share": share, "closed_form": c, "exact": np.nan,
             "actual": a, "drift": np.nan}
            for kind, share, c, a in zip(kinds, [2, 32] * 3, closed, actual, strict=True)]
    rows += [{"config_hash": "h", "occupation": o, "kind": "random", "share": 2, "closed_form": 0.01, "exact": np.nan,
              "actual": noise, "drift": np.nan} for o, noise in (("accountant", -0.5), ("writer", 0.02))]
    rows.append({"config_hash": "h", "occupation": "actor", "kind": "base", "share": 0, "closed_form": np.nan,
                 "exact": np.nan, "actual": 0.3, "drift": 0.0})
    models = pd.DataFrame([{"config": "c", "config_hash": "h", "lp_side": "both", "mrr": 0.2, "hits@1": 0.1,
                            "hits@10": 0.4, "train_s": 1.0}])
    summary = sweep.summarize(models, pd.DataFrame(rows)).iloc[0]
    assert summary["r_closed_min"] == pytest.approx(np.corrcoef(closed, actual)[0, 1])
    assert (summary["occupations"], summary["r_occupations"], summary["sets"]) == (3, 1, 8)
    assert summary["noise_max"] == pytest.approx(max(0.5, *np.abs(actual[4:])))


def test_stored_base_skips_the_unmasked_retrain_only_where_it_reproduced_the_stored_model(sweep, monkeypatch,
                                                                                        tmp_path) -> None:
    """``--stored-base``: a new occupation's base is the stored model's B_gr, written with drift NaN (not retrained),
    and its sets' retrained changes are those of a run that retrained the base; refused before any retrain where a
    retrained base row drifted."""
    store, first = tmp_path / "store", tmp_path / "first.csv"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(first), "--occupations", "actor")
    retrained = pd.read_csv(first)
    assert (retrained.loc[retrained["kind"] == "base", "drift"] == 0).all()  # deterministic: the flag's premise
    resumed = tmp_path / "resumed.csv"
    resumed.write_bytes(first.read_bytes())
    calls = []
    real = sweep.masked_retrain_bias
    monkeypatch.setattr(sweep, "masked_retrain_bias", lambda *a, **k: calls.append(k["removed"]) or real(*a, **k))
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(resumed), "--stored-base")
    rows = pd.read_csv(resumed)
    new = sorted({*rows["occupation"]} - {"actor"})
    assert len(new) == 2 and len(calls) == 6 and all(c is not None for c in calls)  # six masked, no unmasked
    bases = rows[(rows["kind"] == "base") & rows["occupation"].isin(new)]
    assert len(bases) == 2 and bases["drift"].isna().all()
    monkeypatch.setattr(sweep, "masked_retrain_bias", real)
    full = tmp_path / "full.csv"
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(full))
    keys = ["occupation", "kind", "share"]
    both = rows.merge(pd.read_csv(full), on=keys, suffixes=("", "_retrained"))
    both = both[both["occupation"].isin(new)]
    assert len(both) == 8
    np.testing.assert_allclose(both["actual"], both["actual_retrained"], atol=1e-6)
    rows[rows["occupation"] != new[1]].to_csv(resumed, index=False)  # a later occupation, beside a stored base
    _run(sweep, monkeypatch, "--store", str(store), "--runs", str(resumed), "--stored-base")
    again = pd.read_csv(resumed).drop(columns="retrain_s").set_index(keys).sort_index()
    pd.testing.assert_frame_equal(again, rows.drop(columns="retrain_s").set_index(keys).sort_index(), atol=1e-6)
    drifted = tmp_path / "drifted.csv"
    retrained.assign(drift=retrained["drift"].where(retrained["kind"] != "base", 1e-3)).to_csv(drifted, index=False)
    monkeypatch.setattr(sweep, "masked_retrain_bias", lambda *a, **k: pytest.fail("retrained before the refusal"))
    with pytest.raises(SystemExit, match="drift 0"):
        _run(sweep, monkeypatch, "--store", str(store), "--runs", str(drifted), "--stored-base")


def test_pending_retrains_counts_the_missing_sets_and_the_base_only_where_one_will_run(sweep) -> None:
    """The estimate's count (:func:`pending_retrains`), as influence_check decides: a set with a row is not retrained;
    the unmasked base is, where an occupation with a missing set has no base row and --stored-base is off."""
    rows = pd.DataFrame({"config_hash": ["h"] * 3, "occupation": ["a", "a", "b"], "kind": ["base", "top", "top"],
                         "share": [0, 2, 2]})
    count = lambda occupations, done=rows, **k: sweep.pending_retrains(  # noqa: E731
        done, "h", occupations, n_occupations=3, kinds=("top", "random"), shares=[2], **k)
    assert count(["a"], stored_base=False) == 1  # a's random set; its base is recorded
    assert count(["a", "b"], stored_base=False) == 3  # and b's random set, and b has no base row: one base retrain
    assert count(["a", "b"], stored_base=True) == 2  # b's base from the stored model
    assert count(["b"], done=None, stored_base=False) == 3  # nothing done: both sets and the base
    assert count(None, stored_base=False) == 1 + 3 * 2  # occupations the model picks: everything counts
    assert count(["a"], done=rows.assign(config_hash="other"), stored_base=False) == 3  # another config's rows
