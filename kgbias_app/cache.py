"""The one module that owns Streamlit caching, and the store's listing as the app sees it.

- ``st.cache_resource``: one :class:`ModelAnalysis` per model version, shared by every session and
  read-only (it memoises its tensors under its own lock). Jobs are shared through the job
  registry's keys, not here.
- ``st.cache_data``: the core's tables of a model; every caller gets a copy, so a page may sort or
  annotate what it gets without touching the cache.

Every function takes a :class:`ModelRef`, whose ``version`` is the modification time of the
model's config.json: a model retrained under the same name is a new cache entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from kgbias_app import charts
from kgbias_core import embedding_space as space
from kgbias_core import persons as person_views
from kgbias_core import report as reports
from kgbias_core import subpopulations, tables, tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.datasets import NAMED_DATASETS
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.config import MODELS
from kgbias_core.embeddings.store import default_store, list_models, load_model, model_version, read_config
from kgbias_core.errors import KGBiasError
from kgbias_core.influence.negatives import RedrawStability
from kgbias_core.influence.prediction import WhatIfPrediction
from kgbias_core.influence.refit_prediction import refit_removal_prediction
from kgbias_core.influence.scale import PredictedChange
from kgbias_core.influence.step_cost import StepCost, removal_step_cost
from kgbias_core.measures import prediction_fairness
from kgbias_core.measures.prediction_fairness import FairnessReport, model_fairness
from kgbias_core.whatif.edits import Edit, predict_edit
from kgbias_core.whatif.runs import EditMembership, made_from, membership_of_record, noise_floor
from kgbias_core.whatif.runs import bias_change as run_bias_change
from kgbias_core.whatif.step_ratio import StepRatio, model_edit_calibration, use_for


@dataclass(frozen=True)
class ModelRef:
    """A stored model as the cache functions are keyed."""

    name: str  # directory name in the store
    path: str  # model directory
    version: int  # modification time of its config.json (written last: a new version is complete)
    dataset: str  # the graph it was trained on
    kind: str  # transe | distmult | complex | rotate
    base: str | None  # for a what-if run (its config has an "edit"): the model it edited; None for a base model

    @property
    def is_whatif(self) -> bool:
        return self.base is not None

    def beside(self, name: str) -> Path:
        """The directory of a model called ``name`` in this model's store (where its what-ifs go)."""
        return Path(self.path).parent / name


@st.cache_data(max_entries=256, show_spinner=False)
def _config(path: str, version: int) -> dict:
    return read_config(path)


def catalog() -> dict[str, ModelRef]:
    """Every complete model of the store by name, in the store's (alphabetical) order."""
    store, found = default_store(), {}
    for name in list_models(store):
        path = store / name
        try:
            version = model_version(path)
            config = _config(str(path), version)
        except (KGBiasError, OSError):
            continue  # a model being replaced right now: it shows up on the next rerun
        base = str(config.get("base_model", "")) if config.get("edit") else None
        found[name] = ModelRef(name=name, path=str(path), version=version, dataset=config.get("dataset", ""),
                               kind=config.get("model", "transe"), base=base)
    return found


def base_models(dataset: str) -> list[ModelRef]:
    """The store's models of ``dataset`` that are no what-if runs, in TransE, DistMult, ComplEx, RotatE order."""
    order = {kind: i for i, kind in enumerate(MODELS)}
    found = [m for m in catalog().values() if m.dataset == dataset and not m.is_whatif]
    return sorted(found, key=lambda m: (order.get(m.kind, len(order)), m.name))


def whatif_runs(base: ModelRef) -> tuple[list[ModelRef], list[str]]:
    """The store's what-if runs of ``base``: (those retrained from the model now stored as ``base``,
    names of the stale ones, whose base was retrained since on other data or settings)."""
    current, stale = [], []
    base_config = config(base)
    for run in catalog().values():
        if run.base == base.name:
            if made_from(config(run), base_config):
                current.append(run)
            else:
                stale.append(run.name)
    return current, stale


def device() -> torch.device:
    """The app's device (``KGBIAS_DEVICE``, else auto): every model is moved there once, on load, and its
    measures run there; new trainings too (the tasks resolve the same variable). Raises
    :class:`~kgbias_core.errors.DeviceError` for a spec it does not know or a GPU that is absent."""
    return resolve_device(None)


def config(model: ModelRef) -> dict:
    """The model's config.json (a copy)."""
    return _config(model.path, model.version)


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def analysis(model: ModelRef) -> ModelAnalysis:
    """The shared, read-only analysis of one stored model (weights loaded once per process).

    The influence context (~0.8 s on FB15k-237) is precomputed in the background, so that the first
    predicted change or influence table of a session does not wait for it. The tensors live on
    :func:`device` (this cache holds device tensors; tables leave the device at display).
    """
    shared = ModelAnalysis(load_model(model.path, device=device()))
    shared.warm_up()
    return shared


@st.cache_data(max_entries=8, show_spinner="Computing every measure per occupation…")
def measures(model: ModelRef) -> pd.DataFrame:
    """Every measure per occupation; for a member of a seed family, with the seed band beside each (issue 24)."""
    from kgbias_core.families import family_seed_band, with_seed_band

    own, refs = _own_measures(model), catalog()

    def member_measures(path: Path) -> pd.DataFrame:  # each member's table from its own cache entry
        ref = refs.get(Path(path).name)
        return own if ref == model else _own_measures(ref) if ref is not None else \
            tables.measures_table(ModelAnalysis(load_model(path)))

    return with_seed_band(own, family_seed_band(model.path, measures_of=member_measures))


@st.cache_data(max_entries=8, show_spinner="Reading B_gr of every seed of the family…")
def family_bias_band(model: ModelRef) -> pd.DataFrame | None:
    """B_gr's seed band of the model's family (:func:`~kgbias_core.families.family_group_bias_band`: B_gr alone, no
    bootstrap), None without a family: what the lab's planner reads."""
    from kgbias_core.families import family_group_bias_band

    return family_group_bias_band(model.path)


@st.cache_data(max_entries=16, show_spinner="Computing every measure per occupation…")
def _own_measures(model: ModelRef) -> pd.DataFrame:
    """One model's measures alone (a family member's own, before the seed band is added)."""
    return tables.measures_table(analysis(model))


@st.cache_data(max_entries=8, show_spinner=False)
def summary(model: ModelRef) -> dict[str, int]:
    return tables.summary(analysis(model))


@st.cache_data(max_entries=1024, show_spinner=False)
def persons(model: ModelRef, occupation: str) -> pd.DataFrame:
    return tables.persons_table(analysis(model), occupation)


@st.cache_data(max_entries=256, show_spinner=False)
def persons_of(model: ModelRef, occupations: tuple[str, ...]) -> pd.DataFrame:
    return tables.persons_of_occupations(analysis(model), occupations)


#: The explorer's figures by name. Building one with Plotly Express costs ~70 ms (validation), most of
#: an occupation switch's server time, so each is built once per model and occupation(s) and shared.
_PERSONS_FIGURES = {
    "distribution": charts.individual_distribution,
    "scatter": charts.individual_scatter,
    "compare": charts.compare_distributions,
}


@st.cache_resource(max_entries=512, show_spinner=False)
def persons_figure(model: ModelRef, occupations: tuple[str, ...], kind: str, every_point: bool = False) -> go.Figure:
    """A figure of the persons table (one occupation) or of several occupations (``kind="compare"``);
    ``every_point``: every person as a point in the distributions, not only the outliers.

    Shared across sessions, read-only: st.plotly_chart serialises it without changing it.
    """
    frame = persons(model, occupations[0]) if kind != "compare" else persons_of(model, occupations)
    return _PERSONS_FIGURES[kind](frame, every_point=every_point)


@st.cache_data(max_entries=256, show_spinner="Computing the influence of every training triple…")
def influence_extremes(model: ModelRef, occupation: str, k: int) -> pd.DataFrame:
    return tables.influence_extremes(analysis(model), occupation, k=k)


@st.cache_data(max_entries=256, show_spinner=False)
def influence_table(model: ModelRef, occupation: str, top: int) -> pd.DataFrame:
    return tables.influence_table(analysis(model), occupation, top=top)


@st.cache_data(max_entries=256, show_spinner="Re-drawing the negatives under 3 seeds…")
def redraw_stability(model: ModelRef, occupation: str) -> RedrawStability:
    """The occupation's top-1% stability across negative seeds (for a model whose negatives are re-drawn)."""
    return analysis(model).redraw_stability(occupation)


@st.cache_data(max_entries=256, show_spinner=False)
def occupation_relation_share(model: ModelRef, occupation: str) -> dict[str, object]:
    return tables.occupation_relation_share(analysis(model), occupation)


@st.cache_data(max_entries=256, show_spinner="Computing the measures within each subpopulation…")
def intersections(model: ModelRef, occupation: str, attribute: str) -> subpopulations.Intersections:
    """The occupation's measures within the subpopulations of ``attribute``, with the permutation test."""
    return subpopulations.intersection_table(analysis(model), occupation, attribute)


@st.cache_data(max_entries=64, show_spinner=False)
def triples_frame(model: ModelRef, indices: tuple[int, ...]) -> pd.DataFrame:
    return tables.triples_frame(analysis(model), torch.tensor(indices, dtype=torch.long))


def predicted_removal(model: ModelRef, occupation: str, indices: Sequence[int]) -> PredictedChange:
    """Predicted change of B_gr for removing ``indices`` (a sum over the memoised influence: not cached)."""
    return analysis(model).predicted_removal(occupation, torch.tensor(list(indices), dtype=torch.long))


@st.cache_data(max_entries=256, show_spinner="Predicting the change: one Newton step…")
def prediction(model: ModelRef, edit: Edit, spread: float | None, scale: float = 1.0,
               temperature: float | None = None, prior: bool = False) -> WhatIfPrediction:
    """The edit's predicted change of B_gr (:func:`~kgbias_core.whatif.edits.predict_edit`: Newton step, interval,
    ``spread`` the occupation's noise band as its floor, ``scale`` the model's step scale or ``temperature`` the hinge's
    temperature its audit set, or the prior one before it: :func:`edit_calibration`); a few seconds on FB15k-237, so
    cached per edit."""
    return predict_edit(analysis(model), edit, spread=spread, scale=scale, temperature=temperature, prior=prior)


@st.cache_data(max_entries=32, show_spinner="Estimating what a prediction costs on this model…")
def step_cost(model: ModelRef) -> StepCost:
    """A removal step's estimated cost on ``model`` (:func:`~kgbias_core.influence.step_cost.removal_step_cost`: |H|
    built and one product timed here); seconds at most, once per model."""
    return removal_step_cost(analysis(model))


@st.cache_data(max_entries=64, show_spinner=False)
def refined_prediction(model: ModelRef, edit: Edit, spread: float | None, scale: float) -> WhatIfPrediction:
    """The removal ``edit``'s refined prediction (:func:`~kgbias_core.influence.refit_prediction.
    refit_removal_prediction`: the Newton step, then the rows B_gr reads refitted) times ``scale``, the model's refit
    audit ratio (:func:`~kgbias_core.tasks.prediction_audit.refit_scale`); seconds, so cached per edit."""
    return refit_removal_prediction(analysis(model), edit.occupation, torch.tensor(edit.removed, dtype=torch.long),
                                    spread=spread, scale=scale)


def step_ratio(model: ModelRef, kind: str = "remove") -> StepRatio | None:
    """The model's ratio for an edit of ``kind`` (:func:`~kgbias_core.whatif.step_ratio.model_step_ratio`: what its
    removal audit, or for "add" its Add audit, showed; None before it ran). Read on every call, not cached: an audit
    that lands changes it on the next rerun."""
    return tasks.model_step_ratio(model.path, use=use_for(kind))


def edit_calibration(model: ModelRef, kind: str = "remove") -> tuple[float, float | None, bool]:
    """(scale, temperature, prior) of an edit of ``kind`` (:func:`~kgbias_core.whatif.step_ratio.
    model_edit_calibration`): the hinge's temperature where the removal audit set one, else the step scale; before any
    retrain a removal's prior temperature where the model has one. Read on every call, as :func:`step_ratio`."""
    return model_edit_calibration(model.path, kind)


def occupation_spread(model: ModelRef, occupation: str) -> float | None:
    """The occupation's noise band spread (B_gr's max - min over retrains of the unedited graph); None before. On an
    import, which no retrain here gives a band, the prior floor of
    :func:`~kgbias_core.whatif.runs.import_noise_spread`."""
    return noise_floor(tasks.saved_noise_band(model.path), analysis(model), occupation)


def whatif_run(model: ModelRef, run: ModelRef, *, refined: bool = False) -> reports.WhatIfRun:
    """``run``, a what-if of ``model``, as the report and the lab's run view show it: its edit, its retrained change
    and its prediction (:func:`kgbias_core.report.whatif_run`), with the model's noise band and ratio as they are
    now (an audit or a band that lands later is a new entry); ``refined``: a removal's refined prediction too, or
    why there is none (seconds: the report asks, on its click)."""
    edit = analysis(run).model.edit
    kind = edit.get("kind", "remove")
    refit = tasks.refit_offer(model.path, analysis(model), edit["occupation"]) if refined and kind == "remove" else None
    return _whatif_run(model, run, tasks.saved_noise_band(model.path), edit_calibration(model, kind), refit)


@st.cache_data(max_entries=16, show_spinner=False)
def _whatif_run(model: ModelRef, run: ModelRef, noise: pd.DataFrame | None,
                calibration: tuple[float, float | None, bool],
                refit: tuple[float | None, str | None] | None) -> reports.WhatIfRun:
    scale, temperature, prior = calibration
    return reports.whatif_run(analysis(model), analysis(run), noise=noise, scale=scale, temperature=temperature,
                              prior=prior, refit=refit)


def report(model: ModelRef, occupation: str, run: ModelRef | None = None) -> str:
    """The HTML report of ``occupation`` under ``model``, or of ``model``'s what-if ``run`` (its edited
    occupation), from the cached analyses and measures.

    Not memoised itself: it is built only when "Download report" is clicked, it carries its date, and
    a noise band or a calibration that finishes later belongs in the next one.
    """
    base = analysis(model)
    whatif = None if run is None else whatif_run(model, run, refined=True)
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    return reports.occupation_report(base, occupation, measures=measures(model), run=whatif,
                                     link_prediction=load_link_prediction(model.path))


@st.cache_data(max_entries=64, show_spinner=False)
def attribute_values(model: ModelRef, relation: str) -> pd.DataFrame:
    return tables.attribute_values(analysis(model), relation)


@st.cache_data(max_entries=128, show_spinner="Computing Fisher's b_p for every profession…")
def fisher_table(model: ModelRef, relation: str, value_a: str, value_b: str | None, min_count: int) -> pd.DataFrame:
    return tables.fisher_table(analysis(model), relation=relation, value_a=value_a, value_b=value_b,
                               min_count=min_count)


@st.cache_data(max_entries=32, show_spinner=False)
def bias_change(base: ModelRef, run: ModelRef) -> pd.DataFrame:
    """B_gr of every occupation in ``base`` and in its what-if ``run``, and the change."""
    return run_bias_change(analysis(base), analysis(run))


@st.cache_data(max_entries=8, show_spinner=False)
def occupation_test_facts(model: ModelRef) -> int:
    """How many test facts of the model are occupation queries of a person with a gender (Schwertmann's input)."""
    return len(prediction_fairness.occupation_test_facts(analysis(model).model)[0])


@st.cache_data(max_entries=32, show_spinner="Predicting occupations and bootstrapping the fairness gaps…")
def fairness_report(model: ModelRef, min_count: int) -> FairnessReport:
    """Schwertmann et al.'s fairness of the model's top-1 occupation predictions (a copy per caller)."""
    return model_fairness(analysis(model).model, min_count=min_count)


def findings_by_model(model: ModelRef, *, census: Path) -> dict[str, pd.DataFrame]:
    """Cached findings (:func:`kgbias_core.tasks.saved_findings`) of ``model`` and of each named graph's
    default model, by model name; models without findings for their current inputs are left out.
    Not memoised: a finished findings job or a new what-if changes them."""
    store, found = default_store(), {}
    defaults = [store / tasks.model_name(dataset) for dataset in NAMED_DATASETS]
    for path in [Path(model.path), *defaults]:
        if path.name not in found and path.is_dir():
            frame = tasks.saved_findings(path, census=census)
            if frame is not None:
                found[path.name] = frame
    return found


@st.cache_data(max_entries=64, show_spinner=False)
def edit_membership(model: ModelRef, occupation: str, kind: str, removed: tuple[int, ...],
                    n_added_entities: int) -> EditMembership:
    """Who an edit (or a run's edit record) removes or re-labels in ``occupation``'s groups (issue 28)."""
    return membership_of_record(analysis(model), {"occupation": occupation, "kind": kind, "removed": list(removed),
                                                  "n_added_entities": n_added_entities})


@st.cache_data(max_entries=64, show_spinner=False)
def search_persons(model: ModelRef, query: str) -> pd.DataFrame:
    return person_views.search_persons(analysis(model), query)


@st.cache_data(max_entries=64, show_spinner=False)
def person(model: ModelRef, label: str) -> person_views.Person:
    return person_views.person(analysis(model), label)


@st.cache_data(max_entries=64, show_spinner="Computing the influence of the person's triples…")
def person_triples(model: ModelRef, entity: int, occupation: str | None) -> pd.DataFrame:
    return person_views.person_triples(analysis(model), entity, occupation)


@st.cache_data(max_entries=8, show_spinner="Projecting the embeddings on the gender direction…")
def embedding_space(model: ModelRef) -> tuple[pd.DataFrame, float]:
    """Persons and occupations on the gender axis and the residual's first component, and its explained share."""
    frame, axes = space.embedding_space(analysis(model))
    return frame, axes.explained


def graph_models(dataset: str) -> list[ModelRef]:
    """Every stored model of ``dataset``: base models and their what-if runs, by name."""
    return sorted((m for m in catalog().values() if m.dataset == dataset), key=lambda m: m.name)


@st.cache_data(max_entries=8, show_spinner="Reading every model's accuracy and disparity…")
def accuracy_disparity(models: tuple[ModelRef, ...], minimum: int, computed: tuple[str, ...]) -> pd.DataFrame:
    """``computed``: the models whose link prediction is stored (a key: a prediction finished since is read)."""
    from kgbias_core.accuracy_disparity import accuracy_disparity_table
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    return accuracy_disparity_table({m.name: analysis(m) for m in models},
                                    {m.name: load_link_prediction(m.path) for m in models}, minimum=minimum)


def occupations_report(model: ModelRef, occupations: tuple[str, ...]) -> str:
    """The HTML report of several occupations; built on the click, not memoised (it carries its date)."""
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    return reports.occupations_report(analysis(model), occupations, measures=measures(model),
                                      link_prediction=load_link_prediction(model.path))
