"""Every long job of kgbias as a :class:`Task`: ``run(progress)`` plus the key naming the work.

The command line runs a task directly, printing its progress; the pages submit it to the
process-wide :class:`kgbias_core.jobs.JobRegistry` under its key, so two sessions asking for the
same work share one job. A task reports through its :class:`Progress` and stops when asked to,
between epochs or retrains. Base models are only read; a trained model or what-if is saved
atomically at the end, so a failed or cancelled task leaves nothing under a model's name. Results
that a page shows later are cached beside the model (:func:`kgbias_core.embeddings.store.save_result`),
each read back by the ``saved_*`` function next to the task that writes it.

The tasks live in modules by what they serve (:mod:`.training`, :mod:`.calibration`, :mod:`.whatif`,
:mod:`.evaluation`, :mod:`.findings`, :mod:`.prepare`, :mod:`.debiasing`, and :mod:`.base` for what they
share); this package re-exports their public names, so ``from kgbias_core.tasks import X`` reads as before.
"""

from __future__ import annotations

from kgbias_core.tasks.base import (
    AUTO_BACKGROUND_SECONDS,
    Task,
    check_retrains,
    model_retrain_seconds,
    slug,
)
from kgbias_core.tasks.calibration import (
    CALIBRATION_RUNS,
    calibrate,
    calibration_seconds,
    calibration_task,
    saved_calibration_runs,
    store_calibration,
)
from kgbias_core.tasks.debiasing import (
    DEBIAS_METHODS,
    compare_debiasing_task,
    debias_embedding_task,
)
from kgbias_core.tasks.evaluation import (
    link_prediction_task,
    relation_audit_task,
)
from kgbias_core.tasks.findings import (
    FINDINGS,
    FINDINGS_CACHED,
    PAPER_ADD_C,
    add_c,
    add_runs,
    findings_inputs,
    findings_task,
    saved_curves,
    saved_findings,
)
from kgbias_core.tasks.prediction_audit import (
    add_audit_seconds,
    add_audit_task,
    hinge_temperature,
    hinge_temperature_task,
    prediction_audit_seconds,
    prediction_audit_task,
    refit_not_offered,
    refit_offer,
    refit_scale,
    temperature_search_seconds,
    temperature_searched,
)
from kgbias_core.tasks.prepare import (
    READY_ITEMS,
    ReadyItem,
    cached_link_prediction_ready,
    demo_audit_params,
    family_item,
    prepare_task,
    readiness,
    readiness_lines,
)
from kgbias_core.tasks.training import (
    DEFAULT_MODEL_KIND,
    DEFAULT_MODEL_NAMES,
    graph_size,
    import_task,
    load_graph,
    model_name,
    train_config,
    train_family_task,
    train_task,
    training_seconds,
)
from kgbias_core.tasks.whatif import (
    NOISE_SEEDS,
    accuracy_key,
    curve_key,
    curve_occupations,
    influence_accuracy_task,
    noise_band_task,
    removal_curve_task,
    repredict_curves,
    saved_accuracy,
    saved_curve,
    saved_noise_band,
    whatif_name,
    whatif_task,
)
from kgbias_core.whatif.step_ratio import (
    ADD_AUDIT,
    PREDICTION_AUDIT,
    model_step_ratio,
    saved_add_audit,
    saved_prediction_audit,
)

__all__ = [
    "AUTO_BACKGROUND_SECONDS",
    "Task",
    "check_retrains",
    "model_retrain_seconds",
    "slug",
    "DEFAULT_MODEL_KIND",
    "DEFAULT_MODEL_NAMES",
    "graph_size",
    "import_task",
    "load_graph",
    "model_name",
    "train_config",
    "train_family_task",
    "train_task",
    "training_seconds",
    "CALIBRATION_RUNS",
    "calibration_seconds",
    "calibration_task",
    "saved_calibration_runs",
    "store_calibration",
    "calibrate",
    "NOISE_SEEDS",
    "accuracy_key",
    "curve_key",
    "curve_occupations",
    "influence_accuracy_task",
    "noise_band_task",
    "removal_curve_task",
    "repredict_curves",
    "saved_accuracy",
    "saved_curve",
    "saved_noise_band",
    "whatif_name",
    "whatif_task",
    "link_prediction_task",
    "relation_audit_task",
    "FINDINGS",
    "FINDINGS_CACHED",
    "PAPER_ADD_C",
    "add_c",
    "add_runs",
    "findings_inputs",
    "findings_task",
    "saved_curves",
    "saved_findings",
    "READY_ITEMS",
    "ReadyItem",
    "cached_link_prediction_ready",
    "demo_audit_params",
    "family_item",
    "prepare_task",
    "readiness",
    "readiness_lines",
    "DEBIAS_METHODS",
    "compare_debiasing_task",
    "debias_embedding_task",
    "PREDICTION_AUDIT",
    "ADD_AUDIT",
    "add_audit_seconds",
    "add_audit_task",
    "saved_add_audit",
    "prediction_audit_seconds",
    "prediction_audit_task",
    "refit_not_offered",
    "hinge_temperature",
    "hinge_temperature_task",
    "refit_offer",
    "refit_scale",
    "temperature_search_seconds",
    "temperature_searched",
    "saved_prediction_audit",
    "model_step_ratio",
]
