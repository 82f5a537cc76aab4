"""The planner on a seed family (issues 24 and 29): the family's seed band sets the default target (the band moved
to hold 0) and the other occupations' bands (its seed range), in the core, on the command line and in the lab."""

from __future__ import annotations

import math
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from kgbias_app import texts as ui_texts
from kgbias_app.sections import plan as section
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.store import load_model
from kgbias_core.errors import PLAN_NO_FAMILY
from kgbias_core.families import family_group_bias_band
from kgbias_core.jobs import Progress
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.whatif.plan import (
    NOISE_TARGET,
    SEED_BANDS,
    PlanConfig,
    collateral_bands,
    plan_removal,
    plan_triples,
    resolve_targets,
)
from tests.conftest import FAMILY_MEMBERS, button, page, settled, texts, use_store


def _members_bias(store: Path) -> np.ndarray:
    """B_gr of every member over the first member's occupations, straight from the measure: [members, O]."""
    labels = occupation_groups(load_model(store / FAMILY_MEMBERS[0])).labels
    rows = []
    for member in FAMILY_MEMBERS:
        model = load_model(store / member)
        groups = occupation_groups(model)
        values = group_bias(entity_embeddings=model.entity_embeddings, relation_embeddings=model.relation_embeddings,
                            groups=groups).double().numpy()
        rows.append([values[groups.index(label)] for label in labels])
    return np.array(rows)


@pytest.fixture(scope="module")
def family(family_store: Path):
    analysis = ModelAnalysis(load_model(family_store / "fam"))
    return analysis, family_group_bias_band(family_store / "fam")


def test_the_family_band_is_the_spread_of_the_members_b_gr(family_store: Path, family) -> None:
    analysis, band = family
    values = _members_bias(family_store)
    band = band.set_index("occupation").loc[list(analysis.groups.labels)]
    with warnings.catch_warnings():  # an occupation no member defines: NaN, as in the band
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.allclose(band["group_bias_seed_min"], np.nanmin(values, axis=0), equal_nan=True)
        assert np.allclose(band["group_bias_seed_max"], np.nanmax(values, axis=0), equal_nan=True)
    assert family_group_bias_band(family_store / "fam-s2")["family"].iloc[0] == "fam"


def test_a_seed_band_target_is_the_band_moved_to_hold_zero(family) -> None:
    analysis, band = family
    ranges = band.set_index("occupation")
    defined = [o for o in analysis.groups.labels if ranges.loc[o, "n_seeds"] >= 2
               and math.isfinite(float(analysis.group_bias(o)))]
    targets = resolve_targets(analysis, defined, seed_band=band)
    for target in targets:
        bias = float(analysis.group_bias(target.occupation))
        low, high = ranges.loc[target.occupation, ["group_bias_seed_min", "group_bias_seed_max"]]
        assert target.low == pytest.approx(bias - high) and target.high == pytest.approx(bias - low)
        assert "seed band" in target.source
        # the model's B_gr is inside its own target exactly where the family's band already holds 0
        assert (target.low <= bias <= target.high) == (low <= 0 <= high)
    # an interval given by the user still wins, and without a band the noise band sets it
    given = resolve_targets(analysis, defined[:1], intervals={defined[0]: (-0.5, 0.5)}, seed_band=band)
    assert (given[0].low, given[0].high, given[0].source) == (-0.5, 0.5, "given")
    noise = ranges.reset_index()[["occupation"]].assign(spread=0.1)
    assert resolve_targets(analysis, defined[:1], noise=noise)[0].source == NOISE_TARGET


def test_collateral_bands_are_the_seed_range(family) -> None:
    analysis, band = family
    bands, source = collateral_bands(analysis, noise=None, config=PlanConfig(), seed_band=band)
    assert source == SEED_BANDS
    ranges = band.set_index("occupation")
    for i, label in enumerate(analysis.groups.labels):
        if np.isfinite(bands[i]):
            assert bands[i] == pytest.approx(ranges.loc[label, "group_bias_seed_max"]
                                             - ranges.loc[label, "group_bias_seed_min"])


def test_plans_against_the_seed_band_reach_it_or_remove_nothing(family) -> None:
    analysis, band = family
    ranges = band.set_index("occupation")
    bias = analysis.group_bias().double().numpy()
    size = np.minimum(analysis.groups.n_male.numpy(), analysis.groups.n_female.numpy())
    usable = [(i, o) for i, o in enumerate(analysis.groups.labels) if np.isfinite(bias[i]) and size[i] >= 2
              and ranges.loc[o, "n_seeds"] >= 2]
    holds = [o for i, o in usable if ranges.loc[o, "group_bias_seed_min"] <= 0 <= ranges.loc[o, "group_bias_seed_max"]]
    apart = [o for i, o in usable if o not in holds]
    assert holds and apart  # the tiny family has both kinds
    quiet = plan_removal(analysis, resolve_targets(analysis, holds[:1], seed_band=band), seed_band=band)
    assert quiet.feasible and not quiet.removed and quiet.bands == SEED_BANDS
    assert plan_triples(analysis, quiet).empty  # an empty plan reads as an empty table, in words too
    moved = plan_removal(analysis, resolve_targets(analysis, apart[:1], seed_band=band), seed_band=band)
    (outcome,) = moved.targets
    assert moved.removed and outcome.target.low <= outcome.after <= outcome.target.high


def test_plan_band_on_the_command_line(family_store: Path, tiny_store: Path, tmp_path: Path, capsys) -> None:
    store = Path(shutil.copytree(family_store, tmp_path / "store"))
    analysis, band = ModelAnalysis(load_model(store / "fam")), family_group_bias_band(store / "fam")
    apart = next(o for o, low, high in zip(band["occupation"], band["group_bias_seed_min"], band["group_bias_seed_max"],
                                           strict=True) if low > 0 or high < 0)
    name = analysis.groups.names[analysis.groups.index(apart)]
    assert main(["plan", "--model", str(store / "fam"), "--occupations", name]) == 0
    printed = capsys.readouterr().out
    (target,) = resolve_targets(analysis, [apart], seed_band=band)
    assert f"target [{target.low:+.4f}, {target.high:+.4f}]" in printed and SEED_BANDS in printed
    assert main(["plan", "--model", str(store / "fam"), "--occupations", name, "--band", "noise"]) == 0
    assert "seed" not in capsys.readouterr().out.split("collateral:")[1].splitlines()[0]
    # a model of no family: --band seed is one line, exit 2
    assert main(["plan", "--model", str(tiny_store / "tiny-transe"), "--occupations", "nurse", "--band", "seed"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {PLAN_NO_FAMILY.format(model=tiny_store / 'tiny-transe')}"]


def test_the_lab_offers_the_seed_band_for_a_family(family_store: Path, monkeypatch, tmp_path: Path) -> None:
    store = use_store(Path(shutil.copytree(family_store, tmp_path / "store")), monkeypatch, tmp_path)
    tasks.noise_band_task(store / "fam").run(Progress())  # before the page: its arrival would change the targets
    app = page("debiasing_lab").run()
    settled(app)
    band = family_group_bias_band(store / "fam")
    apart = next(o for o, low, high in zip(band["occupation"], band["group_bias_seed_min"], band["group_bias_seed_max"],
                                           strict=True) if low > 0 or high < 0)
    app.selectbox(key="lab_occupation").set_value(apart).run()
    radio = app.radio(key="plan_band")
    assert radio.value == section.BAND_SEED and radio.options == [section.BAND_SEED, section.BAND_NOISE]
    button(app, section.BUILD_BUTTON).click().run()
    assert not app.exception
    (target,) = resolve_targets(ModelAnalysis(load_model(store / "fam")), [apart], seed_band=band)
    assert target_caption(app) == section.TARGET_CAPTION.split(":")[0].format(
        low=ui_texts.fmt(target.low), high=ui_texts.fmt(target.high))
    assert "over 3 seeds" in texts(app.caption)  # the seed band's target source (the intro names no count)
    app.radio(key="plan_band").set_value(section.BAND_NOISE).run()
    assert section.CHANGED in texts(app.caption)
    button(app, section.BUILD_BUTTON).click().run()
    assert "negatives kept" in texts(app.caption) and "over 3 seeds" not in texts(app.caption)


def target_caption(app) -> str:
    """The start of the plan's target caption, "Target [low, high]", as the page shows it."""
    (caption,) = [str(c.value) for c in app.caption if str(c.value).startswith("Target [")]
    return caption.split(":")[0]
