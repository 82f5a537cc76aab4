"""Embedding-level debiasing and the debiasing comparison (issue 29)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.device import resolve_device
from kgbias_core.embeddings.store import (
    StoredModel,
    check_output,
    load_model,
    save_model,
)
from kgbias_core.evaluation.link_prediction import cached_link_prediction, one_side
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key, check_retrains

# --- embedding-level debiasing and the debiasing comparison (issue 29) ----------------------------
DEBIAS_METHODS = ("project", "regularise")


def debias_embedding_task(
    *,
    base: Path | str,
    method: str,
    out: Path,
    occupations: Sequence[str] | None = None,
    weight: float = 10.0,
    persons: bool = False,
    direction: str = "values",
    overwrite: bool = False,
    device: torch.device | str | None = None,
) -> Task[str]:
    """Debias the model at ``base`` at the embedding level and save it as the model directory ``out``.

    ``project``: the gender direction projected out of ``occupations`` (None: all) and, with
    ``persons``, of the persons (:func:`kgbias_core.whatif.projection.projected_model`, no training);
    ``regularise``: TransE retrained from the base's seed with the fairness term of weight ``weight``
    (:func:`kgbias_core.whatif.regularised.regularised_model`). Returns the saved directory.
    """
    from kgbias_core.errors import UNKNOWN_DEBIAS_METHOD, KGBiasError
    from kgbias_core.whatif.projection import projected_model
    from kgbias_core.whatif.regularised import regularised_model

    def run(progress: Progress) -> str:
        if method not in DEBIAS_METHODS:
            raise KGBiasError(UNKNOWN_DEBIAS_METHOD.format(method=method, known=", ".join(DEBIAS_METHODS)))
        check_output(out, overwrite=overwrite, reading=base)
        if method == "regularise":
            check_retrains(base, what="the regularised training (a full retrain)", retrains=1)
        model = load_model(base, device=resolve_device(device))  # the regulariser retrains on retrain_device
        if method == "project":
            progress.update(stage="projecting", message=f"projecting the gender direction ({direction}) out")
            debiased = projected_model(model, name=out.name, occupations=occupations, persons=persons,
                                       direction=direction)  # type: ignore[arg-type]
        else:
            progress.update(stage="training", message=f"training {model.name} with the fairness term, w = {weight:g}")
            debiased = regularised_model(model, name=out.name, weight=weight, occupations=occupations,
                                         on_epoch=progress.as_callback(stage="training"),
                                         should_stop=progress.should_stop)
        progress.update(stage="saving", message="saving the debiased model")
        return str(save_model(debiased, out.parent, overwrite=overwrite))

    params = {"method": method, "out": str(out), "occupations": occupations, "weight": weight, "persons": persons,
              "direction": direction}
    return Task(key=_key("debias-embedding", base, **params), run=run)


def compare_debiasing_task(model_dirs: Sequence[Path | str], *, occupations: Sequence[str] = (),
                           device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """:func:`kgbias_core.whatif.compare.comparison_table` of the models at ``model_dirs`` (the first is the
    reference graph); link prediction is read from, or cached into, each model's directory."""
    from kgbias_core.whatif.compare import comparison_table

    def run(progress: Progress) -> pd.DataFrame:
        models = [load_model(d, device=resolve_device(device)) for d in model_dirs]
        paths = {id(model): Path(d) for model, d in zip(models, model_dirs, strict=True)}

        def links(model: StoredModel) -> dict[str, float]:
            frame = one_side(cached_link_prediction(paths[id(model)]), "both")  # as comparison_table's default
            rows = frame[frame["queries"] == "all"]
            return {} if rows.empty else {k: float(v) for k, v in rows.iloc[0].items() if k != "queries"}

        progress.update(stage="measuring", message=f"measuring {len(models)} models")
        return comparison_table(models, occupations=occupations, links=links)

    return Task(key=_key("compare-debiasing", *model_dirs, occupations=list(occupations)), run=run)
