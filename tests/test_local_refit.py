"""kgbias_core/influence/local_refit.py (issue 25): the rows a removal touches, re-optimised on J_{-S} with every
other row frozen; checked against the full objective of embeddings/objective.py and against autograd over it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.influence.local_refit import (
    EXPANDED_DISTANCES,
    paired_refit,
    read_refit_change,
    read_rows,
    refit_objective,
    refit_rows,
    refit_terms,
    touched_rows,
)
from kgbias_core.influence.prediction import _bias, _moved, absolute_newton_step, newton_change
from kgbias_core.influence.retraining_check import removal_set
from tests.conftest import REPO, load_script


def _edit(model, k: int = 12, analysis: ModelAnalysis | None = None):
    """A top-k removal set of the occupation with the most women among those with 5 of each gender (Du's closed
    form), and that occupation's index; ``analysis``: the model's, where the caller has one already."""
    analysis = ModelAnalysis(model) if analysis is None else analysis
    groups = analysis.groups
    ok = ((groups.n_male >= 5) & (groups.n_female >= 5)).nonzero().squeeze(-1)
    index = int(ok[torch.argmax(groups.n_female[ok])])
    return removal_set(analysis.influence(groups.labels[index]), kind="top", k=k), index


def _full_objective(model, entities, removed, relations=None, distance="squared_l2"):
    weights = torch.ones(model.triples.shape[0], dtype=entities.dtype)
    weights[removed] = 0
    relations = model.relation_embeddings if relations is None else relations
    return transe_objective(entities=entities, relations=relations, triples=model.triples,
                            negatives=model.frozen_negatives, margin=model.config.margin, l2=model.config.l2,
                            weights=weights, distance=distance)


def _gathered(terms):
    """``terms`` with no block sorted by row (no segments): the path a GPU's refit takes, readable on the CPU."""
    return replace(terms, positive_blocks=tuple(replace(b, segments=()) for b in terms.positive_blocks),
                   negative_blocks=tuple(replace(b, segments=()) for b in terms.negative_blocks))


def test_touched_rows_are_the_removed_triples_entities_below_the_caps(tiny_model) -> None:
    removed, _ = _edit(tiny_model)
    named = set(tiny_model.triples[removed][:, [0, 2]].reshape(-1).tolist())
    triples = tiny_model.triples.tolist()
    degree = {e: sum((h == e) + (t == e) for h, _, t in triples) for e in named}
    lost = {e: sum((h == e) + (t == e) for h, _, t in tiny_model.triples[removed].tolist()) for e in named}
    assert set(touched_rows(tiny_model.triples, removed, max_degree=10**9, min_share=0.0).tolist()) == named
    capped = set(touched_rows(tiny_model.triples, removed, max_degree=20, min_share=0.0).tolist())
    assert capped == {e for e in named if degree[e] <= 20}
    assert capped < named  # the tiny graph's occupation and attribute entities are hubs of more than 20 triples
    shared = set(touched_rows(tiny_model.triples, removed, max_degree=10**9, min_share=0.25).tolist())
    assert shared == {e for e in named if lost[e] >= 0.25 * degree[e]}
    assert shared and shared < named


def test_read_rows_are_the_rows_b_gr_reads(tiny_model) -> None:
    """read_rows: the occupation's persons and the occupation, found by a loop over the pairs; every other entity
    row moved at random leaves that occupation's B_gr where it was, and moving one of its persons moves it."""
    _, index = _edit(tiny_model)
    groups = ModelAnalysis(tiny_model).groups
    rows = read_rows(groups, index)
    persons = {int(p) for p, o in zip(groups.pair_person, groups.pair_occupation, strict=True) if int(o) == index}
    assert rows.tolist() == sorted(persons | {int(groups.occupations[index])})
    e, r = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    before = _bias(tiny_model, groups, index)
    shaken = torch.randn(e.shape, generator=torch.Generator().manual_seed(0))
    shaken[rows] = 0
    assert _bias(_moved(tiny_model, (shaken, torch.zeros_like(r))), groups, index) == pytest.approx(before, abs=1e-5)
    one = torch.zeros_like(e)
    one[rows[0]] = 1.0
    assert abs(_bias(_moved(tiny_model, (one, torch.zeros_like(r))), groups, index) - before) > 1e-3


@pytest.mark.parametrize("distance", ["squared_l2", "l2", "l1"])
def test_the_restricted_objective_moves_as_the_full_one(tiny_model, distance) -> None:
    """refit_objective is J_{-S} up to a constant: for any move of the rows, its change equals the full
    objective's (every triple, every negative, the l2 of every row), and so does its gradient (autograd); under
    squared L2 and L2 its terms with one moving row take the expanded form (L2 its square root), the others (and
    every L1 term) the residual."""
    removed, _ = _edit(tiny_model)
    # float64: J sums thousands of terms, and a change of 0.3 in it is at float32's rounding
    e, r = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    rows = touched_rows(tiny_model.triples, removed, max_degree=10**9, min_share=0.0)  # the hubs too: pairs
    terms = refit_terms(entities=e, relations=r, triples=tiny_model.triples, negatives=tiny_model.frozen_negatives,
                        removed=removed, rows=rows, distance=distance)
    assert all(block.slots.numel() for block in terms.positive_blocks + terms.negative_blocks)  # both kinds read
    # on the CPU a squared-L2 or L2 single block is sorted by row and read a row at a time (_RowDots), the path
    # checked here
    single = [terms.positive_blocks[0], terms.negative_blocks[0]]
    assert all(bool(b.segments) == (distance in EXPANDED_DISTANCES) for b in single)
    torch.manual_seed(0)
    for size in (0.05, 0.5):
        moved = (e[rows] + size * torch.randn_like(e[rows])).requires_grad_(True)
        common = dict(margin=tiny_model.config.margin, l2=tiny_model.config.l2, distance=distance)
        part = refit_objective(moved, terms, **common)
        start = refit_objective(e[rows], terms, **common)
        full_e = e.clone().index_put((rows,), moved)
        full = _full_objective(tiny_model, full_e, removed, r, distance=distance)
        change = full - _full_objective(tiny_model, e, removed, r, distance=distance)
        assert float((part - start).detach()) == pytest.approx(float(change.detach()), rel=1e-9)
        (g_part,) = torch.autograd.grad(part, moved)
        (g_full,) = torch.autograd.grad(full, moved)
        torch.testing.assert_close(g_part, g_full, rtol=1e-9, atol=1e-9)
        # a GPU's blocks are not sorted by row (no segments): the gathered path gives the same value and gradient
        other = refit_objective(moved, _gathered(terms), **common)
        assert float(other.detach()) == pytest.approx(float(part.detach()), rel=1e-12)
        torch.testing.assert_close(torch.autograd.grad(other, moved)[0], g_part, rtol=1e-9, atol=1e-12)


def test_an_l2_refit_keeps_float32_where_the_offsets_dwarf_the_residuals(tiny_model) -> None:
    """Under L2 a term's psi is the root of its expanded square, whose parts must be of the residual's size: expanded
    around 0 (||c||^2 + 2 x . c + ||x||^2, c = r + the frozen endpoint) they are of the entities' size and cancel in
    float32. Every entity shifted by 100 leaves each residual as it was and makes the offsets 100 times larger: the
    objective's gradient in float32 stays within 1e-4 of float64's (expanded around 0 it was 4e-3 off; 5e-6 now)."""
    removed, _ = _edit(tiny_model)
    e, r = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    assert e.dtype == torch.float32
    rows = touched_rows(tiny_model.triples, removed)
    step = 0.01 * torch.randn(rows.shape[0], e.shape[1], generator=torch.Generator().manual_seed(0))
    grads = []
    for dtype in (torch.float32, torch.float64):
        shifted, relations = (e + 100.0).to(dtype), r.to(dtype)
        terms = refit_terms(entities=shifted, relations=relations, triples=tiny_model.triples,
                            negatives=tiny_model.frozen_negatives, removed=removed, rows=rows, distance="l2")
        moved = (shifted[rows] + step.to(dtype)).requires_grad_(True)
        value = refit_objective(moved, terms, margin=tiny_model.config.margin, l2=0.0, distance="l2")
        grads.append(torch.autograd.grad(value, moved)[0].double())
    assert float(grads[1].abs().max()) > 1.0  # the hinges are active: a gradient of the size compared
    torch.testing.assert_close(grads[0], grads[1], rtol=0.0, atol=1e-4)
    # the refit optimises in float64 with those residuals held in float32: its rows land at the float64 copy's refit
    # (float64 throughout) to well within 1e-4, against moves of 0.1 or more. Both converge (the same at 2000
    # iterations as at 30); what is left is float32's rounding of the residuals, which depends on the CPU's sums:
    # 1e-7 apart on an Intel Xeon, 1.0e-5 on an AMD EPYC (5 rows moved by 0.46-0.66), where a float64 refit from
    # entities perturbed by 1e-7 of their size moves by 2e-7
    common = dict(triples=tiny_model.triples, negatives=tiny_model.frozen_negatives, removed=removed,
                  margin=tiny_model.config.margin, l2=tiny_model.config.l2, distance="l2")
    got = refit_rows(entities=e, relations=r, **common)
    wide = refit_rows(entities=e.double(), relations=r.double(), **common)
    assert got.dtype == torch.float32 and float((got - e).abs().max()) > 0.1  # it moved rows
    torch.testing.assert_close(got.double(), wide, rtol=0.0, atol=1e-4)
    # squared L2 stays in float32 (no cancellation to guard against, half the traffic): not its float64 copy's bits
    squared = {key: value for key, value in common.items() if key != "distance"}
    assert not torch.equal(refit_rows(entities=e, relations=r, distance="squared_l2", **squared),
                           refit_rows(entities=e.double(), relations=r.double(), distance="squared_l2",
                                      **squared).float())
    # the same mixed terms read as a GPU reads them (no segments: a gather, the dot in float32) agree
    mixed = refit_terms(entities=e.double(), relations=r.double(), triples=tiny_model.triples,
                        negatives=tiny_model.frozen_negatives, removed=removed, rows=rows, distance="l2",
                        single_dtype=torch.float32)
    assert mixed.negative_blocks[0].offset.dtype == torch.float32 and mixed.negative_blocks[0].segments
    moved = (e.double()[rows] + step.double()).requires_grad_(True)
    values = [refit_objective(moved, t, margin=tiny_model.config.margin, l2=tiny_model.config.l2, distance="l2")
              for t in (mixed, _gathered(mixed))]
    assert values[0].dtype == values[1].dtype == torch.float64
    assert float(values[0].detach()) == pytest.approx(float(values[1].detach()), rel=1e-6)
    torch.testing.assert_close(*(torch.autograd.grad(v, moved)[0] for v in values), rtol=1e-5, atol=1e-6)


def test_the_refit_lowers_the_edited_objective_and_moves_only_its_rows(tiny_model) -> None:
    removed, _ = _edit(tiny_model)
    e, r = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    rows = touched_rows(tiny_model.triples, removed)
    refitted = refit_rows(entities=e, relations=r, triples=tiny_model.triples, negatives=tiny_model.frozen_negatives,
                          removed=removed, margin=tiny_model.config.margin, l2=tiny_model.config.l2)
    others = torch.ones(e.shape[0], dtype=torch.bool)
    others[rows] = False
    assert torch.equal(refitted[others], e[others])
    assert not torch.equal(refitted[rows], e[rows])
    before, after = _full_objective(tiny_model, e, removed), _full_objective(tiny_model, refitted, removed)
    assert float(after) < float(before)
    # a local optimum over the rows: no small random move of them lowers J_{-S} further
    torch.manual_seed(1)
    for _ in range(5):
        nudged = refitted.clone()
        nudged[rows] += 1e-3 * torch.randn_like(nudged[rows])
        assert float(_full_objective(tiny_model, nudged, removed)) >= float(after) - 1e-4


def test_the_pair_cancels_the_refits_own_drift(tiny_model) -> None:
    """The tiny model's rows are not at their optimum, so a refit moves them with nothing removed; the pair's
    other half is that refit, and where nothing is removed the two halves are the same refit."""
    removed, _ = _edit(tiny_model)
    e, r = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    common = dict(entities=e, relations=r, start=(e, r), triples=tiny_model.triples,
                  negatives=tiny_model.frozen_negatives, margin=tiny_model.config.margin, l2=tiny_model.config.l2)
    unedited, edited = paired_refit(removed=removed, **common)
    assert not torch.equal(unedited, e)
    assert not torch.equal(unedited, edited)
    refit = dict(triples=tiny_model.triples, negatives=tiny_model.frozen_negatives, margin=tiny_model.config.margin,
                 l2=tiny_model.config.l2, rows=touched_rows(tiny_model.triples, removed))
    none = removed.new_zeros(0)
    torch.testing.assert_close(refit_rows(entities=e, relations=r, removed=none, **refit), unedited)
    still = torch.ones(e.shape[0], dtype=torch.bool)
    still[refit["rows"]] = False  # only the touched rows move, in both halves
    assert torch.equal(unedited[still], e[still]) and torch.equal(edited[still], e[still])


def test_the_experiments_three_predictions(tiny_model, monkeypatch) -> None:
    """experiments/whatif_accuracy/local_refit.py: its Newton column is the core's Newton step (newton_change, a
    separate path); with no row to refit (min_share above 1) the refit reads 0 and the Newton + refit column is the
    Newton step."""
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its sibling whatif_accuracy.py
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_script")
    removed, index = _edit(tiny_model)
    analysis = ModelAnalysis(tiny_model)
    label = analysis.groups.labels[index]
    plain = newton_change(tiny_model, removed, groups=analysis.groups, occupation_index=index, damping=0.0)
    got = script.predictions(analysis, label, removed)
    assert got["newton"] == pytest.approx(plain, rel=1e-2)
    assert got["rows"] > 0 and got["newton_refit"] != got["newton"]
    step = absolute_newton_step(tiny_model, removed, tolerance=1e-3, active=analysis.active_terms,
                                hvp=analysis.absolute_hvp)
    e, r = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    for name, start in (("refit", (e, r)), ("newton_refit", (e + step[0], r + step[1]))):  # the core's pair
        unedited, edited = paired_refit(entities=e, relations=r, start=start, triples=tiny_model.triples,
                                        negatives=tiny_model.frozen_negatives, removed=removed,
                                        margin=tiny_model.config.margin, l2=tiny_model.config.l2,
                                        distance=tiny_model.config.distance)
        pair = (_bias(_moved(tiny_model, (edited - e, start[1] - r)), analysis.groups, index)
                - _bias(_moved(tiny_model, (unedited - e, torch.zeros_like(r))), analysis.groups, index))
        assert got[name] == pytest.approx(float(pair), rel=1e-6, abs=1e-9)
    rows = torch.unique(torch.cat([touched_rows(tiny_model.triples, removed), read_rows(analysis.groups, index)]))
    unedited, edited = paired_refit(entities=e, relations=r, start=(e + step[0], r + step[1]),
                                    triples=tiny_model.triples, negatives=tiny_model.frozen_negatives,
                                    removed=removed, margin=tiny_model.config.margin, l2=tiny_model.config.l2,
                                    distance=tiny_model.config.distance, rows=rows)
    pair = (_bias(_moved(tiny_model, (edited - e, step[1])), analysis.groups, index)
            - _bias(_moved(tiny_model, (unedited - e, torch.zeros_like(r))), analysis.groups, index))
    assert got["rows_read"] == rows.numel() > got["rows"]
    # the same pair by another path (the core's read refit, its rows and halves built apart): float32 apart, 2e-6
    # of the change on the tiny model once the step summed its set sorted (removal_rows)
    assert got["newton_refit_read"] == pytest.approx(float(pair), rel=1e-5, abs=1e-9)
    lab = script.predictions(analysis, label, removed, read_persons=3, read_only=True)  # as the lab's refit
    core = read_refit_change(entities=e, relations=r, step=step, triples=tiny_model.triples,
                             negatives=tiny_model.frozen_negatives, removed=removed, groups=analysis.groups,
                             occupation_index=index, margin=tiny_model.config.margin, l2=tiny_model.config.l2,
                             max_persons=3)
    assert (lab["read_persons"], lab["persons_refit"], lab["touched"]) == (3, 6, False)
    assert lab["newton_refit_read"] == pytest.approx(core.change, rel=1e-6) and lab["rows_read"] == core.rows
    # --start-scale: the read refit starts from theta + 3 Delta theta, the core's refit of that start
    started = script.predictions(analysis, label, removed, read_persons=3, read_only=True, start_scale=3.0)
    core3 = read_refit_change(entities=e, relations=r, step=(3.0 * step[0], 3.0 * step[1]),
                              triples=tiny_model.triples, negatives=tiny_model.frozen_negatives, removed=removed,
                              groups=analysis.groups, occupation_index=index, margin=tiny_model.config.margin,
                              l2=tiny_model.config.l2, max_persons=3)
    assert started["start_scale"] == 3.0 and "start_scale" not in lab
    assert started["newton_refit_read"] == pytest.approx(core3.change, rel=1e-6) != core.change
    none = script.predictions(analysis, label, removed, min_share=1.01)
    assert none["rows"] == 0 and none["refit"] == 0.0
    assert none["newton_refit"] == pytest.approx(none["newton"], abs=1e-6)


def test_a_sampled_read_refit_is_the_full_one_on_average(tiny_model) -> None:
    """read_refit_change with at most ``max_persons`` of each gender refitted (by default the rows B_gr reads alone,
    the touched rows with ``touched``): a cap above both genders is the full refit, bit for bit; below them it
    refits that many of each, the same ones for one seed; over 30 seeds its mean lies within 3 standard errors of
    the full refit's change (the control variate is unbiased over the draw, up to the occupation row refitted with
    the sample), and it is the step's change where no row moves."""
    removed, index = _edit(tiny_model)
    analysis = ModelAnalysis(tiny_model)
    groups = analysis.groups
    step = absolute_newton_step(tiny_model, removed, tolerance=1e-3, active=analysis.active_terms,
                                hvp=analysis.absolute_hvp)
    common = dict(entities=tiny_model.entity_embeddings, relations=tiny_model.relation_embeddings, step=step,
                  triples=tiny_model.triples, negatives=tiny_model.frozen_negatives, removed=removed, groups=groups,
                  occupation_index=index, margin=tiny_model.config.margin, l2=tiny_model.config.l2)
    full = read_refit_change(max_persons=None, **common)
    men, women = int(groups.n_male[index]), int(groups.n_female[index])
    assert full.persons == full.sampled == men + women and full.rows == read_rows(groups, index).numel()
    assert read_refit_change(max_persons=None, touched=True, min_share=0.0, **common).rows > full.rows  # + edit's
    assert read_refit_change(max_persons=max(men, women), **common) == full
    cap = 8
    assert min(men, women) > cap
    draws = [read_refit_change(max_persons=cap, seed=seed, **common) for seed in range(30)]
    assert all(d.sampled == 2 * cap and d.rows < full.rows for d in draws)
    assert read_refit_change(max_persons=cap, seed=3, **common) == draws[3]
    changes = torch.tensor([d.change for d in draws], dtype=torch.float64)
    assert len(set(changes.tolist())) > 20
    assert abs(float(changes.mean()) - full.change) < 3 * float(changes.std()) / 30 ** 0.5
    newton = _bias(_moved(tiny_model, step), groups, index) - _bias(tiny_model, groups, index)
    still = read_refit_change(max_persons=cap, iterations=0, **common)  # no L-BFGS step: both halves where started
    assert still.change == pytest.approx(newton, abs=1e-5)


def test_the_experiment_predicts_the_stored_audit_set(tiny_store, tmp_path, monkeypatch) -> None:
    """local_refit.py --audit: the model's one-retrain audit set (a real masked retrain of the tiny model) is
    predicted beside the runs' sets, marked in_audit, with the audit's retrained change and, for the Newton step,
    the audit's own prediction."""
    import shutil
    from pathlib import Path

    import pandas as pd

    from kgbias_core.jobs import Progress
    from kgbias_core.tasks import prediction_audit_task
    from kgbias_core.whatif.step_ratio import saved_prediction_audit

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_script")
    model = Path(shutil.copytree(tiny_store / "tiny-transe", tmp_path / "tiny-transe"))
    prediction_audit_task(model).run(Progress())
    audit = saved_prediction_audit(model).iloc[0]
    out = tmp_path / "rows.csv"
    monkeypatch.setattr("sys.argv", ["local_refit.py", "--model", str(model), "--audit", "--out", str(out)])
    script.main()
    rows = pd.read_csv(out)
    assert len(rows) == 1 and bool(rows["in_audit"].iloc[0]) and rows["k"].iloc[0] == audit["k"]
    assert rows["occupation"].iloc[0] == audit["occupation"] and rows["actual"].iloc[0] == audit["retrained"]
    assert rows["newton"].iloc[0] == pytest.approx(audit["predicted"], rel=1e-2)
    assert rows["rows_read"].iloc[0] > rows["rows"].iloc[0]


def test_the_experiment_refuses_retrained_changes_of_other_sets(tmp_path, monkeypatch) -> None:
    """local_refit.py --retrained: a stored retrained change is read only for the set it was measured on (checked
    by its closed-form sum), never for another one."""
    import pandas as pd

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_script")
    earlier = tmp_path / "earlier.csv"
    pd.DataFrame([{"occupation": "nurse", "kind": "top", "share": 2, "closed_form": 1e6, "actual": 0.5}]).to_csv(
        earlier, index=False)
    monkeypatch.setattr("sys.argv", ["local_refit.py", "--retrained", str(earlier), "--out", str(tmp_path / "o.csv")])
    with pytest.raises(SystemExit, match="not in .*earlier.csv with closed form"):
        script.main()
    assert not (tmp_path / "o.csv").exists()


def test_the_band_fit_of_two_graphs_judges_the_lab_bands_by_brute_force(monkeypatch) -> None:
    """local_refit.py --bands with named graphs: a graph without a marked audit set takes the top 16% set of its
    largest occupation with 5 of each gender as the audit (its ratio scales that graph's points); the lab bands'
    rows count, set by set, what a loop over [p / f, p * f] counts; one graph alone keeps its own rows only."""
    import numpy as np
    import pandas as pd

    from kgbias_core.influence.refit_prediction import REFIT_BAND_BASE, REFIT_BAND_SMALL

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_bands")
    rng = np.random.default_rng(0)

    def graph(sizes):
        rows = []
        for name, (men, women) in sizes.items():
            for kind, sign in (("top", 1), ("bottom", -1)):
                for share in (2, 16):
                    point = sign * rng.uniform(0.2, 2.0)
                    rows.append({"occupation": name, "name": name, "men": men, "women": women, "kind": kind,
                                 "share": share, "in_audit": False, "newton": point * rng.uniform(0.6, 1.6),
                                 "newton_refit": point, "newton_refit_read": point * rng.uniform(0.8, 1.2),
                                 "actual": point})
        return pd.DataFrame(rows)

    a = graph({"big": (40, 12), "small": (9, 1), "mid": (7, 6)})
    b = graph({"x": (30, 30), "y": (3, 2), "z": (12, 5)})
    marked = script.with_audit(a)
    assert marked["in_audit"].sum() == 1 and marked.loc[marked["in_audit"], "occupation"].item() == "big"
    # a stored audit's marks stay, or by today's rule move to every row of the occupation with the largest rarer
    # gender: "wide" (100 men, 6 women) is the largest, "x" (30/30) the audited one
    stored = graph({"wide": (100, 6), "x": (30, 30)}).pipe(lambda f: f.assign(in_audit=f["occupation"] == "wide"))
    assert script.with_audit(stored).equals(stored)
    moved = script.with_audit(stored, by_rule=True)
    assert set(moved.loc[moved["in_audit"], "occupation"]) == {"x"} and moved["in_audit"].sum() == 4
    runs = pd.DataFrame(columns=["occupation", "kind", "share"])
    frame = script.band_frame({"a": marked, "b": script.with_audit(b)}, runs, 0.9, lab=True)
    lab = frame[(frame["estimator"] == "newton_refit_read") & (frame["evaluation"] == "lab band -> a")].iloc[0]
    audit = marked[marked["in_audit"]].iloc[0]
    ratio = audit["actual"] / audit["newton_refit_read"]
    judged = marked[~marked["in_audit"]]
    covered = 0
    for row in judged.itertuples():
        point = ratio * row.newton_refit_read
        f = REFIT_BAND_BASE + REFIT_BAND_SMALL / max(1, min(row.men, row.women)) ** 0.5
        covered += min(point / f, point * f) <= row.actual <= max(point / f, point * f)
    assert lab["sets"] == len(judged) == 11 and lab["coverage"] == pytest.approx(covered / len(judged))
    assert f"a {ratio:.4f}" in lab["audit_ratio"]
    assert {"in-sample all", "leave-one-out all", "a -> b", "lab band -> all"} <= set(frame["evaluation"])
    # --lab-refit-band: the refined prediction judged by a band given (one the lab showed before), the loop's count
    given = script.band_frame({"a": marked, "b": script.with_audit(b)}, runs, 0.9, lab=True, refit_band=(1.05, 0.0))
    old = given[(given["estimator"] == "newton_refit_read") & (given["evaluation"] == "lab band -> a")].iloc[0]
    inside = sum(min(ratio * r.newton_refit_read / 1.05, ratio * r.newton_refit_read * 1.05) <= r.actual
                 <= max(ratio * r.newton_refit_read / 1.05, ratio * r.newton_refit_read * 1.05)
                 for r in judged.itertuples())
    assert (old["a"], old["b"]) == (1.05, 0.0) and old["coverage"] == pytest.approx(inside / len(judged))
    alone = script.band_frame({"a": marked}, runs, 0.9)
    assert not alone["evaluation"].str.contains("all|lab").any()


def test_the_band_fit_clips_each_audit_ratio_to_the_range_of_its_distance_as_the_lab_does(monkeypatch) -> None:
    """local_refit.py --bands scales a graph's step by its audit ratio clipped as the lab clips it: to the models'
    distance's range (step_scale_range), or with --clip-as to another's (squared L2's: the lab before 2026-12-06)."""
    import pandas as pd

    from kgbias_core.whatif.step_ratio import step_scale_range

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_clip")
    rows = []
    for name, (men, women) in {"big": (40, 12), "small": (9, 3), "mid": (7, 6)}.items():
        for kind, sign in (("top", 1), ("bottom", -1)):
            for share in (2, 16):
                rows.append({"occupation": name, "name": name, "men": men, "women": women, "kind": kind,
                             "share": share, "in_audit": False, "newton": sign * 0.1, "actual": sign * 0.5})
    marked = script.with_audit(pd.DataFrame(rows))  # every set moved five times its step, the audit's too
    runs = pd.DataFrame(columns=["occupation", "kind", "share"])

    def ratio(**kwargs) -> float:
        frame = script.band_frame({"g": marked}, runs, 0.9, lab=True, **kwargs)
        return float(frame.loc[frame["estimator"] == "newton", "audit_ratio"].iloc[0])

    assert step_scale_range("l2")[1] > 5 > step_scale_range("squared_l2")[1]
    assert ratio(distance="l2") == pytest.approx(5.0)
    assert ratio(distance="squared_l2") == ratio(distance="l2", clip_as="squared_l2") == step_scale_range()[1]
    assert ratio(distance="l1") == step_scale_range("l1")[1]


def test_the_pooled_audit_retrains_the_union_once_and_judges_each_scale(eight_model, tmp_path, monkeypatch) -> None:
    """experiments/whatif_accuracy/pooled_audit.py: the audit occupation first, then others with 5 of each gender
    outside the excluded ones; one masked retrain without the union of their top-16% sets, checked against a masked
    retrain of that union here; each row's refined prediction is the refit of the union; --judge's coverage is a
    loop over [p / f, p * f] of the held-out sets with each scale."""
    import numpy as np
    import pandas as pd

    from kgbias_core.embeddings.store import save_model
    from kgbias_core.influence.refit_prediction import REFIT_BAND_BASE, REFIT_BAND_SMALL, refit_change
    from kgbias_core.influence.retraining_check import masked_retrain_bias
    from kgbias_core.tasks.prediction_audit import AUDIT_SHARE, audit_occupation

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/pooled_audit.py", "pooled_audit_script")
    base = save_model(eight_model, tmp_path / "store")
    analysis = ModelAnalysis(eight_model)
    groups = analysis.groups
    first = audit_occupation(analysis)
    chosen = script.pooled_occupations(analysis, 3, exclude={"nurse"})
    assert chosen[0] == first and len(chosen) == 3 and "nurse" not in chosen
    assert all(min(int(groups.n_male[groups.index(o)]), int(groups.n_female[groups.index(o)])) >= 5 for o in chosen)
    monkeypatch.setattr("sys.argv", ["pooled_audit.py", "--model", str(base), "--occupations", "3", "--bench", "0",
                                     "--out", str(tmp_path / "pooled.csv")])
    script.main()
    pooled = pd.read_csv(tmp_path / "pooled.csv")
    assert pooled["occupation"].tolist() == script.pooled_occupations(analysis, 3, set())
    sets = [removal_set(analysis.influence(o), kind="top",
                        k=max(1, round(AUDIT_SHARE * int((analysis.influence(o) != 0).sum()))))
            for o in pooled["occupation"]]
    union = torch.unique(torch.cat(sets))
    assert (pooled["union_k"] == union.numel()).all() and pooled["k"].tolist() == [s.numel() for s in sets]
    after = masked_retrain_bias(eight_model, removed=union, groups=groups)
    for _, row in pooled.iterrows():
        index = groups.index(row["occupation"])
        assert row["retrained"] == pytest.approx(float(after[index]) - float(analysis.group_bias(row["occupation"])),
                                                 abs=1e-3)
        assert row["refined"] == pytest.approx(refit_change(analysis, row["occupation"], union), abs=1e-3)
    # --judge on made-up held-out rows: coverage counted by a loop
    rng = np.random.default_rng(1)
    rows = pd.DataFrame([{"occupation": name, "name": name, "men": men, "women": women, "kind": kind, "share": 16,
                          "in_audit": name == "audited" and kind == "top", "newton": sign * rng.uniform(0.5, 2),
                          "newton_refit_read": sign * rng.uniform(0.5, 2), "actual": sign * rng.uniform(0.5, 2.5)}
                         for name, men, women in (("audited", 50, 40), ("a", 9, 2), ("b", 30, 12))
                         for kind, sign in (("top", 1), ("bottom", -1))])
    judged = script.judge(pooled, rows, pd.DataFrame(columns=["occupation", "kind", "share"]))
    held = rows[~rows["in_audit"]]
    for _, line in judged[judged["estimator"] == "refined"].iterrows():
        inside = []
        for _, r in held.iterrows():
            point = r["newton_refit_read"] * line["ratio"]
            f = REFIT_BAND_BASE + REFIT_BAND_SMALL / min(r["men"], r["women"]) ** 0.5
            low, high = sorted((point / f, point * f))
            inside.append(low <= r["actual"] <= high)
        assert line["sets"] == len(held) and line["coverage"] == pytest.approx(np.mean(inside))
    medians = judged[judged["scale"] == "pooled median"].set_index("estimator")["ratio"]
    assert medians["refined"] == pytest.approx(pooled["refined_ratio"].median(), abs=1e-3)
    assert medians["step"] == pytest.approx(pooled["step_ratio"].median(), abs=1e-3)


def test_the_lab_bands_judge_random_sets_by_their_noise_floor(monkeypatch) -> None:
    """local_refit.py --bands --lab with random sets (--random): they are not fitted on and not in the targeted rows'
    count; a row of their own counts, set by set, what a loop over [p / f, p * f] widened by each set's floor from
    --runs counts (a change beyond the floor is outside)."""
    import numpy as np
    import pandas as pd

    from kgbias_core.influence.refit_prediction import REFIT_BAND_BASE, REFIT_BAND_SMALL

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_random")
    rows = []
    for name, (men, women) in {"big": (40, 12), "small": (9, 1), "mid": (7, 6), "tiny": (5, 2)}.items():
        for kind, point in (("top", 1.0), ("bottom", -0.8), ("random", 0.01)):
            rows.append({"occupation": name, "name": name, "men": men, "women": women, "kind": kind, "share": 16,
                         "in_audit": False, "newton": point, "newton_refit": point, "newton_refit_read": point,
                         "actual": point * 1.05})
    rows = pd.DataFrame(rows)
    moved = {"big": 0.02, "small": -0.3, "mid": 0.2, "tiny": 0.05}  # the random sets' retrained changes
    rows.loc[rows["kind"] == "random", "actual"] = rows.loc[rows["kind"] == "random", "occupation"].map(moved)
    floors = {"big": 0.03, "small": 0.25, "mid": 0.1, "tiny": 0.1}
    runs = rows[["occupation", "kind", "share"]].assign(floor=rows["occupation"].map(floors))
    frame = script.band_frame({"g": script.with_audit(rows)}, runs, 0.9, lab=True)
    refined = frame[frame["estimator"] == "newton_refit_read"].set_index("evaluation")
    assert refined.loc["lab band -> g", "sets"] == 7  # 8 targeted sets, the audit set (big's top) left out
    chance = refined.loc["lab band, random sets -> g"]
    ratio = 1.05  # the audit set's retrained / predicted scales every point
    covered = 0
    for row in rows[rows["kind"] == "random"].itertuples():
        point, f = ratio * row.newton_refit_read, REFIT_BAND_BASE + REFIT_BAND_SMALL / min(row.men, row.women) ** 0.5
        floor = floors[row.occupation]
        low, high = min(point / f, point * f) - floor, max(point / f, point * f) + floor
        covered += low <= row.actual <= high
    assert chance["sets"] == 4 and covered == 2 and chance["coverage"] == pytest.approx(covered / 4)
    assert np.isnan(chance["half_width"])


def _run_rows(model_dir, sets) -> list[dict]:
    """Run-file rows (as whatif_accuracy.py writes them, without in_audit) of 12 triples each, ``(kind, actual)`` per
    set, of the occupation :func:`_edit` picks on the stored model, each with its closed-form sum."""
    from kgbias_core.embeddings.store import load_model

    model = load_model(model_dir)
    analysis = ModelAnalysis(model)
    label = analysis.groups.labels[_edit(model, analysis=analysis)[1]]
    influence = analysis.influence(label)
    index = analysis.groups.index(label)
    rows = []
    for kind, actual in sets:
        removed = removal_set(influence, kind=kind, k=12)
        rows.append({"occupation": label, "men": int(analysis.groups.n_male[index]),
                     "women": int(analysis.groups.n_female[index]), "kind": kind, "share": 16, "k": 12,
                     "closed_form": float(influence[removed].sum()), "actual": actual})
    return rows


def test_the_experiment_predicts_random_sets_only_when_asked(tiny_store, tmp_path, monkeypatch) -> None:
    """local_refit.py --random: a run's random set (k triples of the whole graph, seed k) is rebuilt, checked by its
    closed-form sum and predicted (its step and refined prediction about 0 next to a targeted set's), and left out of
    the summary; without --random the same runs predict the targeted set alone."""
    import pandas as pd

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_random_sets")
    rows = _run_rows(tiny_store / "tiny-transe", (("top", 0.5), ("random", 0.01)))
    runs = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(runs, index=False)
    for flag, out in (([], tmp_path / "targeted.csv"), (["--random"], tmp_path / "all.csv")):
        monkeypatch.setattr("sys.argv", ["local_refit.py", "--model", str(tiny_store / "tiny-transe"), "--runs",
                                         str(runs), "--out", str(out), "--summary", str(out.with_suffix(".s.csv")),
                                         *flag])
        script.main()
    assert pd.read_csv(tmp_path / "targeted.csv")["kind"].tolist() == ["top"]
    both = pd.read_csv(tmp_path / "all.csv").set_index("kind")
    assert both.loc["random", "closed_form"] == pytest.approx(rows[1]["closed_form"], rel=1e-4)
    for column in ("newton", "newton_refit_read"):
        assert abs(both.loc["random", column]) < 0.2 * abs(both.loc["top", column])
    summaries = [pd.read_csv(tmp_path / name) for name in ("targeted.s.csv", "all.s.csv")]
    assert summaries[0].equals(summaries[1]) and (summaries[1]["n"] == 1).all()


def test_the_experiment_predicts_an_import_as_the_lab_does(tiny_model, monkeypatch) -> None:
    """local_refit.py --as-imported: the model without its negatives, re-drawing K a triple as an import does; its
    step column is the lab's point on that import (predict_removal with the re-drawn negatives). --bands
    --as-imported judges the points at the import's prior scale of the distance (REDRAWN_SCALES, 1 where none) by
    its band (REDRAWN_BANDS), and distance_bands.py keeps that graph's fit and lab rows."""
    import numpy as np
    import pandas as pd

    from kgbias_core.influence.prediction import REDRAWN_BANDS, REDRAWN_SCALES, predict_removal, removal_step_change

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_imported")
    imported = script.as_imported(tiny_model, 8)
    analysis = ModelAnalysis(imported)
    assert imported.negatives is None and not analysis.negatives.exact
    assert analysis.negatives.negatives.shape == (8 * tiny_model.triples.shape[0], 3)
    removed, index = _edit(imported, analysis=analysis)
    label = analysis.groups.labels[index]
    got = script.predictions(analysis, label, removed, step_only=True)
    assert set(got) == {"newton", "newton_s"}
    lab = predict_removal(analysis, label, removed)  # at the squared-L2 imports' prior scale (2026-12-08)
    assert got["newton"] == pytest.approx(removal_step_change(analysis, label, removed), rel=2e-2)
    prior = REDRAWN_SCALES["squared_l2"]
    assert lab.point == pytest.approx(predict_removal(analysis, label, removed, scale=prior).point)
    assert "re-drawn" in lab.estimator and "a prior" in lab.estimator
    rng = np.random.default_rng(1)
    rows = pd.DataFrame([{"occupation": f"o{i}", "name": f"o{i}", "men": 20, "women": 4 + i, "kind": kind,
                          "share": share, "in_audit": False, "newton": p, "actual": p * rng.uniform(0.5, 2.5)}
                         for i in range(4) for kind, share, p in (("top", 2, 0.3), ("bottom", 16, -0.8))])
    frame = script.band_frame({"g": script.with_audit(rows)}, pd.DataFrame(columns=["occupation", "kind", "share"]),
                              0.9, lab=True, distance="l1", unscaled=True)
    shown = frame[frame["evaluation"] == "lab band -> g"].iloc[0]
    prior = REDRAWN_SCALES["l1"]  # L1's step on an import takes a prior scale (2026-12-07)
    assert (shown["a"], shown["b"]) == REDRAWN_BANDS["l1"] and float(shown["audit_ratio"]) == prior != 1.0
    judged = rows[~script.with_audit(rows)["in_audit"]]
    f = REDRAWN_BANDS["l1"][0] + REDRAWN_BANDS["l1"][1] / np.sqrt(np.minimum(judged["men"], judged["women"]))
    point = judged["newton"] * prior
    inside = (judged["actual"] >= np.minimum(point / f, point * f)) & (
        judged["actual"] <= np.maximum(point / f, point * f))
    assert shown["coverage"] == pytest.approx(inside.mean())
    bands = load_script("experiments/whatif_accuracy/distance_bands.py", "distance_bands_script")
    kept = bands.distance_table({"imported L1": frame})
    assert set(kept["evaluation"]) == {"in-sample g", "leave-one-out g", "lab band -> g"}
    assert (kept["case"] == "imported L1").all()
    earlier = script.band_frame({"g": script.with_audit(rows)}, pd.DataFrame(columns=["occupation", "kind", "share"]),
                                0.9, lab=True, distance="l1", unscaled=True, step_band=(1.5, 1.5))
    both = bands.distance_table({"imported L1": frame}, {"imported L1": earlier})
    before = both[both["evaluation"] == "lab band before -> g"]
    assert len(both) == len(kept) + len(before) and set(before["estimator"]) == {"newton"}
    assert (before["a"].astype(float).tolist(), before["b"].astype(float).tolist()) == ([1.5], [1.5])


def test_runs_without_an_audit_column_beside_runs_with_one_mark_no_audit(tiny_store, tmp_path, monkeypatch) -> None:
    """local_refit.py --runs SWEEP WHATIF: sweep.py's rows have no in_audit column, whatif_accuracy.py's have one;
    read together, a sweep row is not an audit set (a missing mark once read as True and left it out of the bands)."""
    import pandas as pd

    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))
    script = load_script("experiments/whatif_accuracy/local_refit.py", "local_refit_audit_marks")
    files = []
    for row, mark in zip(_run_rows(tiny_store / "tiny-transe", (("top", 0.5), ("bottom", -0.5))), (None, True),
                         strict=True):
        files.append(tmp_path / f"{row['kind']}.csv")
        pd.DataFrame([row if mark is None else {**row, "in_audit": mark}]).to_csv(files[-1], index=False)
    out = tmp_path / "rows.csv"
    monkeypatch.setattr("sys.argv", ["local_refit.py", "--model", str(tiny_store / "tiny-transe"), "--runs",
                                     *map(str, files), "--step-only", "--out", str(out)])
    script.main()
    marks = pd.read_csv(out).set_index("kind")["in_audit"]
    assert not marks["top"] and marks["bottom"]
