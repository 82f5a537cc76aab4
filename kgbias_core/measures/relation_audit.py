"""Keidar et al.'s bias table: one row per (sensitive relation, measure) (METHODS §7).

Keidar, Zhong, Zhang & Zhang (2021), "Towards automatic bias detection in knowledge graphs",
§3.1 (DPD Eq. 1-2, PPD Eq. 3-4, TLB Eq. 5) and §3.2 (bias_agg, Eq. 6). A classifier predicts each
person's occupation (k most common + OTHER) from the entity embedding; every tail value of every
sensitive relation is taken one-vs-rest and the per-value biases are averaged per relation.
The classifier lives in :mod:`kgbias_core.measures.occupation_classifier`, DPD and PPD in
:mod:`kgbias_core.measures.parity` (one count table per value); TLB is Fisher's b_p
(:mod:`kgbias_core.measures.fisher`). The second half of this module runs the audit on stored models.

Choices, stated once (the UI repeats them):
- one-vs-rest per value v: persons having v (s = 1) vs persons having any other value of the same
  relation (s = 0); persons without the relation are left out (as the authors' code);
- DPD is the paper's plain sum over classes: NOT divided by (number of values + 1) as in the
  authors' code (mianzg/kgbiasdetec, Measurement.py);
- PPD is computed as the paper writes it, conditioning on y = a: it is a RECALL (true-positive-
  rate) distance, not a precision distance;
- DPD and PPD use cross-validated predictions (every person predicted by a classifier that never
  saw them), so that the distances describe generalisation, not memorised training fits;
- TLB aggregates Fisher's b_p over professions as the mean of |b_p| (a magnitude: the sign of
  each b_p tells the direction, the audit only ranks relations by how much they move scores).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from pykeen.models import ERModel

from kgbias_core.data.graph import LARGE_GRAPH
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import (
    StoredModel,
    load_model,
)
from kgbias_core.errors import AUDIT_CANCELLED, AUDIT_SHAPE_MISMATCH, CancelledError, MeasureError
from kgbias_core.measures.fisher import CHUNK_ELEMENTS, fisher_bias
from kgbias_core.measures.occupation_classifier import ClassifierKind, classify_occupations, entity_feature_matrix
from kgbias_core.measures.parity import demographic_parity_distance, parity_counts, predictive_parity_distance

__all__ = [
    "AUDIT_MEASURES",
    "AUDIT_RESULT",
    "aggregate_relation_biases",
    "audit_from_values",
    "audit_long",
    "audit_params",
    "audit_relations",
    "audit_table",
    "audit_wide",
    "cached_value_audit",
    "classifier_table",
    "default_min_persons",
    "load_value_audit",
    "model_audit",
    "model_value_audit",
    "relation_value_biases",
    "sensitive_relations",
    "relation_values",
    "translational_likelihood_bias",
    "value_table",
]

#: Key of :func:`cached_value_audit`'s table in a model's results folder.
AUDIT_RESULT = "relation_audit"


def _value_groups(person_values: np.ndarray, persons: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Persons of ``persons`` having the relation, its values, and the membership [V, J'] matrix."""
    pairs = np.unique(np.asarray(person_values, dtype=np.int64).reshape(-1, 2), axis=0)
    pairs = pairs[np.isin(pairs[:, 0], persons)]
    members = np.unique(pairs[:, 0])
    values = np.unique(pairs[:, 1])
    has = np.zeros((len(values), len(members)), dtype=bool)
    has[np.searchsorted(values, pairs[:, 1]), np.searchsorted(members, pairs[:, 0])] = True
    return members, values, has


def translational_likelihood_bias(
    model: ERModel,
    *,
    person_values: np.ndarray,
    attribute_relation: int,
    occupation_relation: int,
    professions: np.ndarray,
    persons: np.ndarray | None = None,
    min_persons: int = 10,
    attribute_person_is_head: bool = True,
    step: float = 0.01,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> pd.DataFrame:
    """Translational likelihood bias per tail value, one-vs-rest (Keidar Eq. 5; METHODS §6-7).

    For each value v of the relation: b_p(v) = Fisher's b_p (:func:`kgbias_core.fisher.fisher_bias`)
    with a = v and, one-vs-rest, b = the mean over all other values of the relation; the mean is
    over the persons having the relation (restricted to ``persons`` when given).
    TLB(v) = (1 / P) * sum_p |b_p(v)|  (mean magnitude over the professions [P]).
    Values held by fewer than ``min_persons`` persons, or with no other value to compare with,
    are skipped (``skipped`` True, ``tlb`` NaN).
    person_values: [n, 2] (person, value) pairs, already oriented person-first even for relations
    stored value -> person (say so with ``attribute_person_is_head=False``).
    Columns: ``value``, ``n_persons`` (have v), ``n_rest`` (have another value only), ``tlb``,
    ``skipped``. Unsigned: larger = the value moves profession scores more.
    """
    candidates = np.unique(np.asarray(person_values, dtype=np.int64)[:, 0]) if persons is None else persons
    members, values, has = _value_groups(person_values, np.asarray(candidates, dtype=np.int64))
    rows = []
    for v, value in enumerate(values.tolist()):
        n_persons = int(has[v].sum())
        n_rest = len(members) - n_persons
        others = np.delete(values, v)
        if n_persons < min_persons or len(others) == 0:
            rows.append((value, n_persons, n_rest, np.nan, True))
            continue
        bias = fisher_bias(
            model,
            persons=torch.as_tensor(members),
            attribute_relation=attribute_relation,
            value_a=value,
            value_b=None,
            other_values=torch.as_tensor(others),
            occupation_relation=occupation_relation,
            professions=torch.as_tensor(np.asarray(professions, dtype=np.int64)),
            step=step,
            attribute_person_is_head=attribute_person_is_head,
            chunk_elements=chunk_elements,
        )
        rows.append((value, n_persons, n_rest, float(bias.abs().mean()), False))
    return pd.DataFrame(rows, columns=["value", "n_persons", "n_rest", "tlb", "skipped"])


def relation_value_biases(
    *,
    persons: np.ndarray,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    classes: np.ndarray,
    sensitive_facts: Mapping[int, np.ndarray],
    min_persons: int = 10,
    model: ERModel | None = None,
    occupation_relation: int | None = None,
    professions: np.ndarray | None = None,
    attribute_person_is_head: Mapping[int, bool] | None = None,
    step: float = 0.01,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> pd.DataFrame:
    """DPD, PPD (and TLB when a model is given) for every tail value of every relation.

    persons, y_true, y_pred: [J] aligned (classified persons, true and cross-validated predicted
    class). sensitive_facts: relation id -> [n, 2] (person, value) pairs. Each value is one-vs-rest
    among the persons having the relation; values held by fewer than ``min_persons`` of them are
    skipped. Long frame, one row per (relation, value, measure): ``relation``, ``value``,
    ``measure`` ("DPD" | "PPD" | "TLB"), ``bias`` (NaN when skipped or undefined), ``n_persons``,
    ``n_rest``, ``status`` ("ok" | "skipped" | "undefined").
    """
    persons = np.asarray(persons, dtype=np.int64)
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    for what, array in (("y_true", y_true), ("y_pred", y_pred)):
        if len(array) != len(persons):
            raise MeasureError(AUDIT_SHAPE_MISMATCH.format(what=what, expected=len(persons), found=len(array)))
    directions = dict(attribute_person_is_head or {})
    position = {p: i for i, p in enumerate(persons.tolist())}
    rows: list[tuple] = []
    for relation, facts in sensitive_facts.items():
        members, values, has = _value_groups(facts, persons)
        index = np.asarray([position[m] for m in members.tolist()], dtype=np.int64)
        for v, value in enumerate(values.tolist()):
            n_persons = int(has[v].sum())
            n_rest = len(members) - n_persons
            if n_persons < min_persons:
                rows += [(relation, value, m, np.nan, n_persons, n_rest, "skipped") for m in ("DPD", "PPD")]
                continue
            counts = parity_counts(  # row 0: s = 1 (has the value), row 1: s = 0
                y_true=y_true[index], y_pred=y_pred[index], group=np.where(has[v], 0, 1), classes=classes
            )
            dpd, ppd = demographic_parity_distance(counts), predictive_parity_distance(counts)
            for name, result in (("DPD", dpd), ("PPD", ppd)):
                status = "ok" if result.defined else "undefined"
                bias = result.value if result.value is not None else np.nan
                rows.append((relation, value, name, bias, n_persons, n_rest, status))
        if model is not None and occupation_relation is not None and professions is not None:
            tlb = translational_likelihood_bias(
                model,
                person_values=facts,
                attribute_relation=relation,
                occupation_relation=occupation_relation,
                professions=professions,
                persons=persons,
                min_persons=min_persons,
                attribute_person_is_head=directions.get(relation, True),
                step=step,
                chunk_elements=chunk_elements,
            )
            for row in tlb.itertuples(index=False):
                status = "skipped" if row.skipped else "ok"
                rows.append((relation, row.value, "TLB", row.tlb, row.n_persons, row.n_rest, status))
    columns = ["relation", "value", "measure", "bias", "n_persons", "n_rest", "status"]
    return pd.DataFrame(rows, columns=columns)


def aggregate_relation_biases(per_value: pd.DataFrame) -> pd.DataFrame:
    """bias_agg(s) = mean over the tail values of s of bias(s = t_i) (Keidar §3.2, Eq. 6).

    Only values with status "ok" enter the mean. Columns: ``relation``, ``measure``, ``bias``
    (NaN when no value is usable), ``n_values`` (all values among the persons), ``n_used``,
    ``n_skipped`` (fewer than min_persons persons), ``n_undefined`` (a group or every class
    undefined). Sorted by relation, then measure.
    """
    rows = []
    for (relation, measure), group in per_value.groupby(["relation", "measure"], sort=True):
        used = group[group["status"] == "ok"]
        rows.append(
            (
                relation,
                measure,
                float(used["bias"].mean()) if len(used) else np.nan,
                len(group),
                len(used),
                int((group["status"] == "skipped").sum()),
                int((group["status"] == "undefined").sum()),
            )
        )
    columns = ["relation", "measure", "bias", "n_values", "n_used", "n_skipped", "n_undefined"]
    return pd.DataFrame(rows, columns=columns)


def audit_relations(
    *,
    embeddings: np.ndarray,
    person_occupations: np.ndarray,
    sensitive_facts: Mapping[int, np.ndarray],
    k: int = 5,
    kind: ClassifierKind = "random_forest",
    seed: int = 0,
    n_folds: int = 5,
    min_persons: int = 10,
    model: ERModel | None = None,
    occupation_relation: int | None = None,
    attribute_person_is_head: Mapping[int, bool] | None = None,
    step: float = 0.01,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> pd.DataFrame:
    """Keidar et al.'s relation bias table: bias_agg per (relation, measure) (METHODS §7).

    1-2. Each person with an occupation gets one label among the k most common + OTHER, and a
       classifier on their embeddings (embeddings [E, d]; complex models: Re | Im) predicts every
       person by cross-validation for DPD / PPD
       (:func:`kgbias_core.measures.occupation_classifier.classify_occupations`).
    3. Every value of every relation in ``sensitive_facts`` (relation id -> [n, 2] (person, value)
       pairs), one-vs-rest among persons having the relation: DPD, PPD, and with a ``model`` and
       an ``occupation_relation`` TLB over the k class occupations (:func:`relation_value_biases`).
    4. bias_agg = mean over values (:func:`aggregate_relation_biases`); paper normalisation, no
       division by (values + 1).
    Returns the long frame of :func:`aggregate_relation_biases` (pivot with
    ``frame.pivot(index="relation", columns="measure", values="bias")``); ``frame.attrs`` holds
    ``accuracy``, ``balanced_accuracy``, ``n_persons`` and ``classes``. All measures unsigned:
    larger = more bias.
    """
    predictions = classify_occupations(
        embeddings=embeddings, person_occupations=person_occupations, k=k, kind=kind, seed=seed, n_folds=n_folds
    )
    per_value = relation_value_biases(
        persons=predictions.persons,
        y_true=predictions.y_true,
        y_pred=predictions.y_pred,
        classes=predictions.classes,
        sensitive_facts=sensitive_facts,
        min_persons=min_persons,
        model=model,
        occupation_relation=occupation_relation,
        professions=predictions.professions,
        attribute_person_is_head=attribute_person_is_head,
        step=step,
        chunk_elements=chunk_elements,
    )
    table = aggregate_relation_biases(per_value)
    measures = ["DPD", "PPD"] + (["TLB"] if model is not None and occupation_relation is not None else [])
    # a relation that none of the classified persons has still gets its (empty) rows
    full = pd.MultiIndex.from_product([list(sensitive_facts), measures], names=["relation", "measure"])
    table = table.set_index(["relation", "measure"]).reindex(full).reset_index()
    table = table.fillna({"n_values": 0, "n_used": 0, "n_skipped": 0, "n_undefined": 0})
    table = table.astype({c: "int64" for c in ["n_values", "n_used", "n_skipped", "n_undefined"]})
    table.attrs.update(
        accuracy=predictions.accuracy,
        balanced_accuracy=predictions.balanced_accuracy,
        n_persons=len(predictions.persons),
        classes=predictions.classes.tolist(),
    )
    return table


# --- per stored model -----------------------------------------------------------------------------


def sensitive_relations(model: StoredModel) -> dict[str, tuple[int, bool]]:
    """Candidate sensitive relations: name -> (relation id, person is head). Gender first.

    The schema's attributes where the graph has them; for a graph without declared attributes, every
    relation whose heads are mostly persons (persons = heads of occupation facts) with few tail values.
    """
    schema = model.schema
    relations: dict[str, tuple[int, bool]] = {"gender": (model.relation_id(schema.gender_relation), True)}
    for attribute in schema.attributes:
        if attribute.relation in model.relation_to_id:
            relations[attribute.name] = (model.relation_id(attribute.relation), attribute.person_is_head)
    if len(relations) > 1:
        return relations
    triples = model.triples.cpu()
    occupation = model.relation_id(schema.occupation_relation)
    persons = torch.zeros(model.n_entities, dtype=torch.bool)
    persons[triples[triples[:, 1] == occupation, 0]] = True
    for relation in torch.unique(triples[:, 1]).tolist():
        if relation in (occupation, relations["gender"][0]):
            continue
        facts = triples[triples[:, 1] == relation]
        if persons[facts[:, 0]].float().mean() > 0.9 and torch.unique(facts[:, 2]).numel() <= 200:
            relations[model.relation_labels[relation]] = (relation, True)
    return relations


def _person_value_pairs(triples: torch.Tensor, relation: int, person_is_head: bool) -> np.ndarray:
    """[n, 2] (person, value) pairs of one relation, person first whatever the direction."""
    rows = triples[triples[:, 1] == relation]
    return (rows[:, [0, 2]] if person_is_head else rows[:, [2, 0]]).numpy()


def model_audit(
    model: StoredModel, *, k: int = 5, kind: ClassifierKind = "random_forest", min_persons: int = 10, seed: int = 0
) -> pd.DataFrame:
    """Keidar et al.'s DPD / PPD / TLB per sensitive relation for one model (METHODS §7).

    :func:`audit_relations` on the model's training triples; long frame: relation (name), measure,
    bias, n_values, n_used, n_skipped, n_undefined; ``attrs`` carries the classifier's accuracy and
    balanced accuracy.
    """
    module = pykeen_model(model)  # on the weights' device; only the sklearn classifier reads numpy
    triples = model.triples.cpu()
    occupation = model.relation_id(model.schema.occupation_relation)
    relations = sensitive_relations(model)
    table = audit_relations(
        embeddings=entity_feature_matrix(module),
        person_occupations=_person_value_pairs(triples, occupation, True),
        sensitive_facts={r: _person_value_pairs(triples, r, head) for r, head in relations.values()},
        k=k, kind=kind, seed=seed, min_persons=min_persons, model=module, occupation_relation=occupation,
        attribute_person_is_head=dict(relations.values()),
    )
    names = {relation: name for name, (relation, _) in relations.items()}
    table["relation"] = table["relation"].map(names)
    return table


def audit_table(models: Sequence[StoredModel], **kwargs: object) -> pd.DataFrame:
    """Relations × measures × models: one long frame with a ``model`` column, plus classifier accuracy."""
    frames = []
    for model in models:
        table = model_audit(model, **kwargs)
        table.insert(0, "model", model.name)
        table["classifier_accuracy"] = table.attrs["accuracy"]
        table["classifier_balanced_accuracy"] = table.attrs["balanced_accuracy"]
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def model_value_audit(
    model: StoredModel,
    *,
    k: int = 5,
    kind: ClassifierKind = "random_forest",
    min_persons: int = 10,
    seed: int = 0,
    on_step: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Keidar et al.'s DPD / PPD / TLB per sensitive relation *and tail value* for one model (METHODS §7).

    The rows that :func:`model_audit` averages: the same classifier, cross-validated predictions
    and one-vs-rest groups as :func:`audit_relations`, but run one relation at a time so that a job
    can report progress (``on_step(done, total, relation)``) and stop between relations
    (``should_stop``; raises :class:`CancelledError`). bias_agg(s) is :func:`audit_from_values` of
    this frame.
    Long frame, one row per (relation, value, measure): ``relation`` (name), ``value`` (label),
    ``value_name``, ``measure`` (DPD | PPD | TLB), ``bias`` (NaN when skipped or undefined),
    ``n_persons`` (have the value), ``n_rest`` (have another value only), ``status``
    (ok | skipped | undefined); constant columns ``classifier``, ``k``, ``accuracy``,
    ``balanced_accuracy`` (held-out split), ``n_classified`` (persons with an occupation).
    All measures unsigned: larger = more bias.
    """
    module = pykeen_model(model)  # on the weights' device; only the sklearn classifier reads numpy
    triples = model.triples.cpu()
    occupation = model.relation_id(model.schema.occupation_relation)
    predictions = classify_occupations(
        embeddings=entity_feature_matrix(module), person_occupations=_person_value_pairs(triples, occupation, True),
        k=k, kind=kind, seed=seed,
    )
    relations = sensitive_relations(model)
    parts = []
    for done, (name, (relation, person_is_head)) in enumerate(relations.items()):
        if should_stop is not None and should_stop():
            raise CancelledError(AUDIT_CANCELLED.format(model=model.name, done=done, total=len(relations)))
        if on_step is not None:
            on_step(done, len(relations), name)
        part = relation_value_biases(
            persons=predictions.persons, y_true=predictions.y_true, y_pred=predictions.y_pred,
            classes=predictions.classes,
            sensitive_facts={relation: _person_value_pairs(triples, relation, person_is_head)},
            min_persons=min_persons, model=module, occupation_relation=occupation,
            professions=predictions.professions, attribute_person_is_head={relation: person_is_head},
        )
        parts.append(part.assign(relation=name))
    frame = pd.concat(parts, ignore_index=True)
    values = frame["value"].astype(int)
    frame["value"] = [model.entity_labels[v] for v in values]
    frame.insert(2, "value_name", [model.entity_names[v] for v in values])
    return frame.assign(classifier=kind, k=k, accuracy=predictions.accuracy,
                        balanced_accuracy=predictions.balanced_accuracy, n_classified=len(predictions.persons))


def audit_from_values(values: pd.DataFrame) -> pd.DataFrame:
    """bias_agg(s) = mean over the tail values of s (Keidar Eq. 6) of a :func:`model_value_audit` frame.

    No division by the number of values (+ 1) as in the authors' code: the paper's normalisation.
    Columns as :func:`aggregate_relation_biases`, relations in the order they first appear.
    """
    table = aggregate_relation_biases(values)
    order = {name: i for i, name in enumerate(values["relation"].drop_duplicates())}
    return table.sort_values(["relation", "measure"], key=lambda s: s.map(order) if s.name == "relation" else s,
                             ignore_index=True)


def audit_params(
    *, k: int = 5, kind: ClassifierKind = "random_forest", min_persons: int = 10, seed: int = 0
) -> dict[str, object]:
    """The parameters a cached relation audit is keyed on."""
    return {"k": int(k), "kind": kind, "min_persons": int(min_persons), "seed": int(seed)}


def cached_value_audit(
    model_dir: Path | str,
    *,
    on_step: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    device: torch.device | str = "cpu",
    **options: Any,
) -> pd.DataFrame:
    """:func:`model_value_audit` of a stored model, computed once per parameters and cached beside it.

    ``options`` are :func:`audit_params`' (k, kind, min_persons, seed), with its defaults.
    """
    params = audit_params(**options)
    cached = load_result(model_dir, AUDIT_RESULT, params=params)
    if cached is not None:
        return cached
    frame = model_value_audit(load_model(model_dir, device=device), **params, on_step=on_step, should_stop=should_stop)
    save_result(model_dir, AUDIT_RESULT, frame, params=params)
    return frame


def load_value_audit(model_dir: Path | str, **params: object) -> pd.DataFrame | None:
    """The cached :func:`cached_value_audit` table for these parameters, or None if not computed yet."""
    return load_result(model_dir, AUDIT_RESULT, params=audit_params(**params))


# --- several models' value audits side by side ------------------------------------------------
#: The audit's measures in the order the comparison tables show them.
AUDIT_MEASURES = ("DPD", "PPD", "TLB")


def default_min_persons(n_triples: int) -> int:
    """Tail values held by fewer persons are skipped: 10 on a large graph (the CLI's default), 5 on a smaller one."""
    return 10 if n_triples >= LARGE_GRAPH else 5


def _by_measure_and_model(long: pd.DataFrame, index: str, models: Sequence[str]) -> pd.DataFrame:
    """``long``'s bias as ``index`` × "measure · model" columns, measures in :data:`AUDIT_MEASURES` order."""
    long = long.assign(column=long["measure"] + " · " + long["model"])
    wide = long.pivot_table(index=index, columns="column", values="bias", aggfunc="first", dropna=False)
    return wide[[f"{m} · {name}" for m in AUDIT_MEASURES for name in models if f"{m} · {name}" in wide.columns]]


def audit_long(values: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`audit_from_values` of each model's value audit (model name -> frame), with a ``model`` column."""
    return pd.concat([audit_from_values(frame).assign(model=name) for name, frame in values.items()],
                     ignore_index=True)


def audit_wide(values: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Relations × "measure · model": bias_agg per relation, one row each, relations in first-seen order."""
    order = list(dict.fromkeys(r for frame in values.values() for r in frame["relation"]))
    wide = _by_measure_and_model(audit_long(values), "relation", list(values))
    return wide.reindex(index=order).rename_axis(index="relation", columns=None).reset_index()


def relation_values(values: Mapping[str, pd.DataFrame], relation: str) -> pd.DataFrame:
    """One relation's rows of each model's value audit, with a ``model`` column."""
    long = pd.concat([frame.assign(model=name) for name, frame in values.items()], ignore_index=True)
    return long[long["relation"] == relation].reset_index(drop=True)


def value_table(values: Mapping[str, pd.DataFrame], relation: str) -> pd.DataFrame:
    """One relation's tail values × "measure · model", with the persons on each side, most held first."""
    long = relation_values(values, relation)
    counts = long.drop_duplicates("value").set_index("value")[["value_name", "n_persons", "n_rest"]]
    frame = counts.join(_by_measure_and_model(long, "value", list(values)))
    return frame.sort_values("n_persons", ascending=False).rename_axis("value").reset_index()


def classifier_table(values: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The occupation classifier of each model's audit: kind, k and held-out accuracy, one row per model."""
    rows = [frame.iloc[0][["classifier", "k", "accuracy", "balanced_accuracy", "n_classified"]].rename(name)
            for name, frame in values.items() if len(frame)]
    return pd.DataFrame(rows).rename_axis("model").reset_index()
