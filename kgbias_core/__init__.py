"""kgbias_core: gender (and other social) bias in knowledge-graph embeddings.

A UI-free library: load a knowledge graph, train or load embeddings, compute the bias measures of
Du et al. (2022), Fisher et al. (2020), Keidar et al. (2021) and Schwertmann et al. (2023), and the
influence of every training triple. Sign convention everywhere: a positive bias means male-leaning.

The names below are the public API, importable from ``kgbias_core`` directly::

    import kgbias_core as kb

    graph = kb.load_dataset("synthetic")
    model = kb.train_model(graph, kb.default_train_config("synthetic"), name="demo")
    analysis = kb.ModelAnalysis(model)
    kb.measures_table(analysis)                      # B_gr with CI, B_wo, B_in, B'_in, Fisher b_p
    kb.influence_table(analysis, "engineer", top=10)  # the training triples that move B_gr most

They are resolved lazily (PEP 562): ``import kgbias_core`` stays cheap for the command line, and
each submodule (torch, PyKEEN, scikit-learn) is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> the submodule that defines it (one home per concept, see ARCHITECTURE.md).
_API: dict[str, str] = {
    # data
    "KnowledgeGraph": "data.graph",
    "Gender": "data.graph",
    "gender_of": "data.graph",
    "Schema": "data.schema",
    "load_schema": "data.schema",
    "load_dataset": "data.datasets",
    "available_datasets": "data.datasets",
    "resolve_data_dir": "data.datasets",
    "SyntheticConfig": "data.synthetic",
    "generate_people_graph": "data.synthetic",
    "census_validation": "data.census",
    # devices
    "resolve_device": "device",
    # embeddings
    "TrainConfig": "embeddings.config",
    "default_train_config": "embeddings.config",
    "train_model": "embeddings.training",
    "StoredModel": "embeddings.store",
    "save_model": "embeddings.store",
    "load_model": "embeddings.store",
    "list_models": "embeddings.store",
    "pykeen_model": "embeddings.pykeen_bridge",
    # measures
    "OccupationGroups": "measures.groups",
    "occupation_groups": "measures.groups",
    "group_bias": "measures.group_bias",
    "group_bias_interval": "measures.group_bias",
    "projection_bias": "measures.group_bias",
    "individual_bias": "measures.individual_bias",
    "fisher_individual_bias": "measures.individual_bias",
    "aggregate_individual": "measures.individual_bias",
    "fisher_bias": "measures.fisher",
    "attribute_cells": "measures.intersections",
    "group_bias_difference_test": "measures.intersections",
    "ParityCounts": "measures.parity",
    "parity_counts": "measures.parity",
    "demographic_parity_distance": "measures.parity",
    "predictive_parity_distance": "measures.parity",
    "demographic_parity_gap": "measures.parity",
    "predictive_parity_gap": "measures.parity",
    "equal_opportunity_gap": "measures.parity",
    "audit_relations": "measures.relation_audit",
    "model_audit": "measures.relation_audit",
    "fairness_report": "measures.prediction_fairness",
    "model_fairness": "measures.prediction_fairness",
    # evaluation
    "link_prediction": "evaluation.link_prediction",
    "filtered_ranks": "evaluation.link_prediction",
    "rank_metrics": "evaluation.link_prediction",
    "link_prediction_sides": "evaluation.link_prediction",
    "cached_link_prediction": "evaluation.link_prediction",
    # influence
    "InfluenceContext": "influence.closed_form",
    "influence_context": "influence.closed_form",
    "triple_influence": "influence.closed_form",
    "predicted_change": "influence.closed_form",
    "WhatIfPrediction": "influence.prediction",
    "predict_removal": "influence.prediction",
    "influence_negatives": "influence.negatives",
    "redraw_stability": "influence.negatives",
    "masked_retrain_bias": "influence.retraining_check",
    "influence_accuracy": "influence.retraining_check",
    # what-ifs
    "Edit": "whatif.edits",
    "make_edit": "whatif.edits",
    "predict_edit": "whatif.edits",
    "retrain": "whatif.edits",
    "bias_change": "whatif.runs",
    "noise_band": "whatif.runs",
    "edit_membership": "whatif.runs",
    # per-model analysis and its readable tables
    "ModelAnalysis": "analysis",
    "measures_table": "tables",
    "persons_table": "tables",
    "triples_frame": "tables",
    "influence_table": "tables",
    "fisher_table": "tables",
    "intersection_table": "subpopulations",
    # seed families: N seeds of one config, the seed band of every measure
    "train_family": "families",
    "family_seed_band": "families",
    "seed_band": "families",
    # one person, the embedding space, accuracy against disparity, reports
    "search_persons": "persons",
    "person": "persons",
    "person_triples": "persons",
    "gender_axes": "embedding_space",
    "accuracy_disparity_table": "accuracy_disparity",
    "occupation_report": "report",
    "occupations_report": "report",
    # errors and jobs
    "KGBiasError": "errors",
    "Progress": "jobs",
    "JobRegistry": "jobs",
}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'kgbias_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kgbias_core.{_API[name]}"), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
