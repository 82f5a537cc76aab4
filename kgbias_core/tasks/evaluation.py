"""Link prediction and the relation audit of stored models, cached beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from kgbias_core.device import resolve_device
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.jobs import Progress
from kgbias_core.measures.relation_audit import cached_value_audit
from kgbias_core.tasks.base import Task, _key


# --- evaluation and the relation audit -----------------------------------------------------------
def link_prediction_task(
    model_dirs: Sequence[Path | str], *, device: torch.device | str | None = None
) -> Task[None]:
    """Cache filtered MRR and Hits@k of each model directory beside it (seconds each on FB15k-237)."""
    device = resolve_device(device)

    def run(progress: Progress) -> None:
        for step, path in enumerate(model_dirs):
            progress.update(stage="evaluating", step=step, total=len(model_dirs),
                            message=f"link prediction of {Path(path).name}")
            cached_link_prediction(path, device=device)

    return Task(key=_key("link_prediction", *model_dirs), run=run)


def relation_audit_task(
    model_dir: Path | str, params: Mapping[str, Any], *, device: torch.device | str | None = None
) -> Task[pd.DataFrame]:
    """Keidar et al.'s per-value relation audit of a stored model, cached beside it (METHODS §7)."""
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        def on_step(done: int, total: int, relation: str) -> None:
            progress.update(stage="auditing relations", step=done, total=total, message=f"relation {relation}")
            progress.pause_point()  # between relations: a person's job waiting runs now

        progress.update(stage="classifying occupations", message=f"{params['kind']} on {Path(model_dir).name}")
        return cached_value_audit(model_dir, **params, on_step=on_step, should_stop=progress.should_stop,
                                  device=device)

    return Task(key=_key("relation_audit", model_dir, **params), run=run)


