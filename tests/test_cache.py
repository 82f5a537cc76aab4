"""The app's view of the store: the catalog of models (base models and what-if runs) and the cached tables."""

from __future__ import annotations

from pathlib import Path

from kgbias_app import cache
from kgbias_core.embeddings.store import model_version


def test_catalog_tells_base_models_from_whatif_runs(store_with_a_run_first: Path) -> None:
    catalog = cache.catalog()
    assert list(catalog) == ["a-run", "tiny-transe"]
    base, run = catalog["tiny-transe"], catalog["a-run"]
    assert (base.dataset, base.kind, base.base, base.is_whatif) == ("synthetic", "transe", None, False)
    assert (run.base, run.is_whatif) == ("tiny-transe", True)
    assert base.version == model_version(store_with_a_run_first / "tiny-transe")
    assert cache.base_models("synthetic") == [base]
    assert cache.whatif_runs(base) == ([run], []) and cache.whatif_runs(run) == ([], [])
    assert cache.config(run)["edit"]["occupation"] == "nurse"
    assert run.beside("other") == store_with_a_run_first / "other"


def test_cached_tables_are_copies(app_store: Path) -> None:
    model = cache.catalog()["tiny-transe"]
    measures = cache.measures(model)
    measures.loc[:, "group_bias"] = 0.0
    assert (cache.measures(model)["group_bias"] != 0.0).any()
    nurse = cache.persons_of(model, ("nurse", "pilot"))
    assert set(nurse["occupation"]) == {"nurse", "pilot"} and set(nurse["occupation_name"]) == {"Nurse", "Pilot"}


def test_a_persons_figure_is_built_once_and_draws_its_table(app_store: Path) -> None:
    model = cache.catalog()["tiny-transe"]
    figure = cache.persons_figure(model, ("nurse",), "scatter")
    assert cache.persons_figure(model, ("nurse",), "scatter") is figure  # shared, not rebuilt
    persons = cache.persons(model, "nurse")
    drawn = sum(len(trace.x) for trace in figure.data)
    assert drawn == len(persons)  # one point per person of the table beside it
