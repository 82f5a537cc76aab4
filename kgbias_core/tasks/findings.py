"""Du et al.'s claims on one model (:mod:`kgbias_core.findings`), with the inputs they were made from."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import (
    StoredModel,
    list_models,
    load_model,
    read_config,
)
from kgbias_core.errors import (
    ModelStoreError,
)
from kgbias_core.families import family_members
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key
from kgbias_core.tasks.whatif import (
    curve_occupations,
    noise_band_task,
    removal_curve_task,
    repredict_curves,
    saved_curve,
    saved_noise_band,
    whatif_name,
    whatif_task,
)
from kgbias_core.whatif.runs import made_from
from kgbias_core.whatif.step_ratio import ADDITIONS, model_step_ratio

# --- findings: Du et al.'s claims on one model (kgbias_core.findings) ---------------------------
#: The cached findings table of a model (``saved_findings``).
FINDINGS = "findings"


def saved_curves(model_dir: Path | str) -> dict[str, pd.DataFrame]:
    """Every removal curve cached beside the model, by occupation label."""
    curves = {}
    for occupation in curve_occupations(model_dir):
        curve = saved_curve(model_dir, occupation)
        if curve is not None:
            curves[occupation] = curve
    return curves


#: Du's Add uses c = 0.5 (Table 3): claim 5 is about that c only.
PAPER_ADD_C = 0.5


def add_c(config: dict[str, Any]) -> float | None:
    """The c of an Add what-if's config (its edit's strategy reads ``add c=<c> (...)``), None if unreadable."""
    strategy = str((config.get("edit") or {}).get("strategy", ""))
    match = re.match(r"add c=(\S+)", strategy)
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None


def add_runs(model_dir: Path | str, *, c: float | None = PAPER_ADD_C) -> list[Path]:
    """The Add what-ifs in the model's store that were retrained from the model now at ``model_dir``;
    with ``c``, only those of that c (default the paper's 0.5: an Add run of c = 1e9 measures its dummies,
    not a debiasing, and must not stand for claim 5); None: every c."""
    if c is not None:
        return [path for path in add_runs(model_dir, c=None) if add_c(read_config(path)) == c]
    base = Path(model_dir)
    base_config = read_config(base)
    found = []
    for name in list_models(base.parent):
        try:
            config = read_config(base.parent / name)
        except ModelStoreError:
            continue  # being replaced right now
        edit = config.get("edit") or {}
        if edit.get("kind") == "add" and config.get("base_model") == base.name and made_from(config, base_config):
            found.append(base.parent / name)
    return found


def findings_inputs(model_dir: Path | str, *, census: Path | None = None, year: int | None = None,
                    negative_seed: int | None = None) -> dict[str, Any]:
    """What a findings table was computed from besides the model: the cached curves, the Add runs, the
    noise band, the census file, for a model without frozen negatives the seed influence re-drew
    them from, for a member of a seed family the members (their seed band), and the Add audit's ratio once there
    is one (claim 5's prediction is multiplied by it). A table made from other
    inputs is recomputed (``saved_findings``)."""
    return _inputs(saved_curves(model_dir), add_runs(model_dir), saved_noise_band(model_dir), census=census, year=year,
                   negative_seed=_redraw_seed(model_dir, negative_seed), family=family_members(model_dir),
                   add_scale=_add_scale(model_dir))


#: What a findings run says when it reads the table back (the same model and inputs) instead of measuring.
FINDINGS_CACHED = "findings read back from the model's store, made from the same inputs"


def _described(inputs: Mapping[str, Any]) -> list[str]:
    """The inputs of a findings table in words, for the line that says it was read back."""
    words = [f"{len(inputs['curves'])} removal curve(s)", f"{len(inputs['add_runs'])} Add run(s)",
             "a noise band" if inputs["noise_band"] else "no noise band",
             "the census" if inputs["census"] else "no census"]
    if inputs.get("family"):
        words.append(f"the seed band of {len(inputs['family'])} seeds")
    return words


def _redraw_seed(model_dir: Path | str, negative_seed: int | None) -> int | None:
    """The seed influence re-draws the negatives from (default 0), or None for a model that has its own."""
    if read_config(model_dir).get("negatives") != "none":  # the importer records "none"
        return None
    return DEFAULT_NEGATIVE_SEED if negative_seed is None else negative_seed


def _inputs(curves: Mapping[str, pd.DataFrame], runs: Sequence[Path], noise: pd.DataFrame | None, *,
            census: Path | None, year: int | None, negative_seed: int | None = None,
            family: Sequence[Path] | None = None, add_scale: float = 1.0) -> dict[str, Any]:
    inputs = {
        "curves": sorted(curves),
        "add_runs": sorted(path.name for path in runs),
        "noise_band": noise is not None,
        "census": str(Path(census).resolve()) if census is not None and Path(census).is_file() else None,
        "year": year,
    }
    # Only where re-drawn, or a member of a family: any other model keeps its cached findings' key.
    if negative_seed is not None:
        inputs["negative_seed"] = negative_seed
    if family:
        inputs["family"] = [path.name for path in family]
    if add_scale != 1.0:  # the Add audit's ratio scales claim 5's prediction: a table made before it is redone
        inputs["add_scale"] = add_scale
    return inputs


#: The findings read off one model alone (claims 1-3 and 6, no retrains), cached beside a family member for
#: its siblings' seed bands (:func:`read_off_findings`).
READ_OFF_FINDINGS = "findings_read_off"


def _census_correlations(measures: pd.DataFrame, model: StoredModel, census: Path | None,
                         year: int | None) -> pd.DataFrame | None:
    """Claim 6's correlations, or None without a census file or a pairing for the graph."""
    from kgbias_core.data.census import PAIRING_RESOURCES, census_validation

    if census is None or not Path(census).is_file() or model.dataset not in PAIRING_RESOURCES:
        return None
    correlations, joined = census_validation(measures, census_path=census, year=year, dataset=model.dataset)
    return None if joined.empty else correlations


def _add_scale(model_dir: Path | str) -> float:
    """The model's Add audit ratio (:mod:`kgbias_core.whatif.step_ratio`), 1 before it has one."""
    ratio = model_step_ratio(model_dir, use=ADDITIONS)
    return 1.0 if ratio is None else ratio.value


def read_off_findings(model_dir: Path | str, *, census: Path | None = None, year: int | None = None,
                      device: torch.device | str | None = None) -> pd.DataFrame:
    """The claims read off the model at ``model_dir`` alone (:data:`kgbias_core.findings.READ_OFF_CLAIMS`; 4 and
    5 not measured): one member's share of a family's seed band. Cached beside it (:data:`READ_OFF_FINDINGS`)."""
    from kgbias_core.findings import findings_frame, model_findings
    from kgbias_core.tables import measures_table

    params = _inputs({}, [], None, census=census, year=year)
    cached = _load_findings(model_dir, READ_OFF_FINDINGS, params)
    if cached is not None:
        return cached
    model = load_model(model_dir, device=resolve_device(device))
    analysis = ModelAnalysis(model)
    measures = measures_table(analysis)
    frame = findings_frame(model_findings(analysis, measures, census=_census_correlations(measures, model, census,
                                                                                          year)))
    save_result(model_dir, READ_OFF_FINDINGS, frame, params=params)
    return frame


def findings_task(
    model_dir: Path | str,
    *,
    census: Path | None = None,
    year: int | None = None,
    retrain: Sequence[str] = (),
    k: int | None = None,
    negative_seed: int | None = None,
    device: torch.device | str | None = None,
) -> Task[pd.DataFrame]:
    """Du et al.'s claims measured on the model at ``model_dir`` (:func:`kgbias_core.findings.model_findings`),
    cached beside it.

    Claims 4 and 5 use the removal curves, Add what-ifs and noise band already stored. ``retrain``
    names occupations to run them for first, where missing: the noise band, IF-REMOVE and
    Random-REMOVE of ``k`` triples (default: as many as are predicted to bring B_gr to zero) and
    Add with c = 0.5 (saved as a what-if next to the model). ``census`` is the IPUMS file (claim 6;
    None or a graph without a pairing: not measured). ``negative_seed``: for a model without frozen
    negatives, the seed claim 3's influence re-draws them from (default 0; its findings say approximate).
    """
    from kgbias_core.findings import family_findings, findings_frame, model_findings
    from kgbias_core.tables import measures_table

    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(model_dir, device=device)
        if retrain:
            _findings_retrains(model_dir, model, retrain, k=k, progress=progress, device=device)
        seed = _redraw_seed(model_dir, negative_seed)  # the model loaded first: a broken one is its one-line error
        if repredicted := repredict_curves(model_dir, device=device):  # claim 4 reads the lab's prediction of now
            progress.update(stage="predicting", message=f"removal curves predicted again: {', '.join(repredicted)}")
        curves, runs, noise = saved_curves(model_dir), add_runs(model_dir), saved_noise_band(model_dir)
        family, add_scale = family_members(model_dir), _add_scale(model_dir)
        params = _inputs(curves, runs, noise, census=census, year=year, negative_seed=seed, family=family,
                         add_scale=add_scale)
        # The table is a pure function of the model and these inputs (the bootstraps are seeded): one made from the
        # same ones is read back, not measured again (minutes on FB15k-237 with a family's siblings).
        cached = _load_findings(model_dir, FINDINGS, params)
        if cached is not None:
            progress.update(stage="reading", message=f"{FINDINGS_CACHED}: {', '.join(_described(params))}")
            return cached
        analysis = ModelAnalysis(model, negative_seed=DEFAULT_NEGATIVE_SEED if seed is None else seed)
        progress.update(stage="measuring", message="every measure with its bootstrap interval")
        measures = measures_table(analysis)
        correlations = _census_correlations(measures, model, census, year)
        progress.update(stage="measuring", message="the top-influence triples of every occupation")
        others = [f"{path.name} (c = {add_c(read_config(path))})" for path in add_runs(model_dir, c=None)
                  if path not in runs]
        frame = findings_frame(model_findings(analysis, measures, census=correlations, curves=curves, noise=noise,
                                              add_runs=[ModelAnalysis(load_model(path, device=device))
                                                        for path in runs],
                                              add_refused=others, add_scale=add_scale))
        if family is not None:  # every claim read off the model, measured on each sibling: its seed band
            own = Path(model_dir).name
            siblings = []
            for member in family:
                if member.name != own:
                    progress.update(stage="measuring", message=f"the findings of {member.name} (seed band)")
                    siblings.append(read_off_findings(member, census=census, year=year, device=device))
            frame = family_findings(frame, [frame, *siblings])
        save_result(model_dir, FINDINGS, frame, params=params)
        return frame

    return Task(key=_key("findings", model_dir, census=str(census), year=year, retrain=list(retrain), k=k,
                         negative_seed=negative_seed), run=run)


def _findings_retrains(
    model_dir: Path | str, model: StoredModel, occupations: Sequence[str], *, k: int | None, progress: Progress,
    device: torch.device,
) -> None:
    from kgbias_core.whatif.edits import add_edit

    analysis = ModelAnalysis(model)
    labels = [analysis.groups.labels[analysis.groups.index(o)] for o in occupations]  # names -> labels, checked first
    progress.update(stage="retraining", message="noise band: the unedited graph under 3 other seeds")
    noise_band_task(model_dir, device=device).run(progress)
    have_add = {read_config(path)["edit"]["occupation"] for path in add_runs(model_dir)}
    for label in labels:
        if saved_curve(model_dir, label) is None:
            ks = [k] if k is not None else [_debiasing_k(analysis, label)]
            removal_curve_task(model_dir, occupation=label, ks=ks, device=device).run(progress)
        if label not in have_add:
            edit = add_edit(model, label)
            name = whatif_name(model.name, edit, occupation_name=analysis.groups.names[analysis.groups.index(label)])
            whatif_task(base=model_dir, edit=edit, out=Path(model_dir).parent / name, device=device).run(progress)


def _debiasing_k(analysis: ModelAnalysis, occupation: str) -> int:
    """The number of IF-REMOVE triples predicted to bring the occupation's B_gr to zero (calibrated
    scale where the model has one, else the raw sum), between 1 and 32% of the triples that move B_gr:
    a k so large that IF-REMOVE overshoots far past zero would test the overshoot, not Du's claim."""
    from kgbias_core.influence.retraining_check import default_ks

    influence = analysis.influence(occupation)
    bias = float(analysis.group_bias(occupation))
    order = debiasing_removal(influence, bias=bias, k=int((influence != 0).sum()))
    reached = (influence[order].cumsum(0).abs() * (analysis.model.influence_scale or 1.0) >= abs(bias)).nonzero()
    k = int(reached[0]) + 1 if len(reached) else int(order.shape[0])
    return max(1, min(k, default_ks(int((influence != 0).sum()))[-1]))


def saved_findings(
    model_dir: Path | str, *, census: Path | None = None, year: int | None = None
) -> pd.DataFrame | None:
    """The cached findings of the model, or None when absent or made from other inputs."""
    return _load_findings(model_dir, FINDINGS, findings_inputs(model_dir, census=census, year=year))


def _load_findings(model_dir: Path | str, key: str, params: dict[str, Any]) -> pd.DataFrame | None:
    """A findings table cached beside the model under ``key`` and ``params``, typed as it was made."""
    from kgbias_core.findings import typed_findings

    cached = load_result(model_dir, key, params=params)
    return None if cached is None else typed_findings(cached)


