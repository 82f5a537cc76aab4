"""Plain-language readings of the measures: signed numbers, the lean of a value with its interval, one
sentence per measure, whether the headline measures agree, and a change against the retraining noise.

Shared by the dashboard (:mod:`kgbias_app.texts` re-exports them) and the HTML report
(:mod:`kgbias_core.report`), so that a figure reads the same on screen, in a download and on the command
line. Every bias reads the same way everywhere: positive = male-leaning (METHODS.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only the annotation: readings stays a leaf every layer can import
    from kgbias_core.influence.prediction import WhatIfPrediction
    from kgbias_core.influence.scale import PredictedChange
    from kgbias_core.whatif.runs import EditMembership

#: Axis-title and help suffix of every signed bias.
SIGN = "> 0 = male-leaning"
#: How a NaN reads in a table or a metric.
UNDEFINED = "undefined"

# --- the measures in one sentence each ----------------------------------------------------------
#: One plain-language sentence per measure and sign: (positive, negative).
SENTENCES: dict[str, tuple[str, str]] = {
    "group_bias": (
        "Persons of this occupation who are women are linked to it with a larger TransE error than "
        "its men: the embedding leans male.",
        "Persons of this occupation who are men are linked to it with a larger TransE error than "
        "its women: the embedding leans female.",
    ),
    "projection_bias": (
        "The occupation's vector points more towards 'male' than towards 'female' "
        "(word-embedding-style projection): male-leaning.",
        "The occupation's vector points more towards 'female' than towards 'male' "
        "(word-embedding-style projection): female-leaning.",
    ),
    "fisher_bp": (
        "Nudging persons' embeddings towards 'male' makes this occupation more plausible for them: "
        "male-leaning.",
        "Nudging persons' embeddings towards 'female' makes this occupation more plausible for them: "
        "female-leaning.",
    ),
    "individual_bias_vanilla": (
        "Averaged over all its persons, a counterfactual gender flip (Du §3.2) says their link to "
        "this occupation rests on the male direction: male-leaning.",
        "Averaged over all its persons, a counterfactual gender flip (Du §3.2) says their link to "
        "this occupation rests on the female direction: female-leaning.",
    ),
    "individual_bias_weighted": (
        "With women and men weighted equally (mean over women + mean over men), the per-person "
        "bias is male-leaning.",
        "With women and men weighted equally (mean over women + mean over men), the per-person "
        "bias is female-leaning.",
    ),
}
UNDEFINED_SENTENCE = "Undefined: this measure needs at least one man and one woman in the occupation."
ZERO_SENTENCE = "Exactly 0: no lean either way."
#: A measure whose 95% interval includes 0 (or that has none) states no direction.
NO_CLEAR_LEAN = "No clear lean (interval includes 0): {low} to {high}."
NO_INTERVAL_LEAN = "No clear lean: too few persons for an interval."
EXCLUDES_ZERO = " (95% interval {low} to {high}, which excludes 0)"
#: B_wo is one projection of three vectors: there are no persons to resample, hence no interval.
PROJECTION_NO_INTERVAL = " No interval: B_wo is one projection, not a mean over persons."


def is_defined(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _unsigned_zero(text: str) -> str:
    """"-0.000" and "+0.000" as "0.000": a tiny value rounds to zero, and zero has no sign."""
    return text.lstrip("+-") if float(text) == 0 else text


def fmt(value: float | None, digits: int = 3) -> str:
    """A signed number ("0.000" when it rounds to zero), or "undefined" for None and NaN."""
    return _unsigned_zero(f"{value:+.{digits}f}") if is_defined(value) else UNDEFINED


def number(value: float | None, digits: int = 3) -> str:
    """A number in a table: ``digits`` decimals, never "-0.000"; "undefined" for None and NaN."""
    return _unsigned_zero(f"{value:.{digits}f}") if is_defined(value) else UNDEFINED


#: The rule for a measure without an interval (B_wo, one projection, no persons to resample): it is read as a
#: lean only where |value| reaches this floor; below, "no clear lean" and the sentence names the floor. A chosen
#: rule, not a test (issue 28: B_wo = -0.011 was called female-leaning): 0.05 is 2.5% of the range [-2, 2] that
#: o . (m - f) spans for vectors of norm at most 1.
NO_INTERVAL_FLOORS = {"projection_bias": 0.05}
WITHIN_FLOOR = "No clear lean: |{name}| = {value} is below {floor}, within noise ({name} has no interval)."


def band_crosses_zero(seed_min: float | None, seed_max: float | None) -> bool:
    """Whether a seed band (the min and max of a measure over a family's seeds) reaches 0 or across it; False
    where there is no band (None or NaN: a model of no family)."""
    return is_defined(seed_min) and is_defined(seed_max) and seed_min <= 0 <= seed_max


def lean(value: float | None, low: float | None = None, high: float | None = None, *, floor: float = 0.0,
         seed_min: float | None = None, seed_max: float | None = None) -> str:
    """"male", "female", "none" (the 95% interval includes 0, or an interval is missing, or the seed band
    reaches 0) or "undefined".

    Without ``low`` and ``high`` (a measure that has no interval, B_wo) the sign decides where |value|
    reaches ``floor`` (:data:`NO_INTERVAL_FLOORS`); below it, "none". A zero-width interval (one person
    per group: every resample alike) counts as missing. ``seed_min``, ``seed_max``: the measure's seed band
    over the model's family (:mod:`kgbias_core.families`); a lean is stated only when it excludes 0 too.
    """
    if not is_defined(value):
        return "undefined"
    if low is not None or high is not None:
        if not (is_defined(low) and is_defined(high)) or low == high or low <= 0 <= high:
            return "none"
    elif abs(value) < floor:
        return "none"
    if band_crosses_zero(seed_min, seed_max):
        return "none"
    return "male" if value > 0 else "female" if value < 0 else "none"


#: The sentence of a measure whose interval excludes 0 but whose seed band does not: no lean stated.
SEED_BAND_CROSSES = ("No clear lean across seeds: this model's 95% interval ({low} to {high}) excludes 0, but over "
                     "the {n} seeds of its family the value runs from {seed_min} to {seed_max}, across 0.")
#: Appended to a stated lean where the model belongs to a family.
SEED_BAND_AGREES = " Every seed of its family agrees: {seed_min} to {seed_max} over {n} seeds."


def seed_band_of(row: Mapping[str, float], measure: str) -> tuple[float | None, float | None, int]:
    """(seed min, seed max, number of seeds) of ``measure`` in a measures row with seed-band columns
    (:func:`kgbias_core.families.with_seed_band`); (None, None, 0) without."""
    if f"{measure}_seed_min" not in row or not is_defined(row.get(f"{measure}_seed_min")):
        return None, None, 0
    n = row.get("n_seeds")
    return row[f"{measure}_seed_min"], row[f"{measure}_seed_max"], int(n) if is_defined(n) else 0


def sentence(measure: str, value: float | None, low: float | None = None, high: float | None = None, *,
             seed_min: float | None = None, seed_max: float | None = None, n_seeds: int = 0) -> str:
    """The plain-language reading of one measure's value: a direction only where its interval excludes 0,
    and, for a model of a seed family, its seed band too.

    ``low``, ``high``: the measure's 95% interval; both None for a measure without one (B_wo).
    ``seed_min``, ``seed_max``, ``n_seeds``: its seed band (:func:`seed_band_of`), None without a family.
    """
    floor = NO_INTERVAL_FLOORS.get(measure, 0.0)
    side = lean(value, low, high, floor=floor, seed_min=seed_min, seed_max=seed_max)
    if side == "undefined":
        return UNDEFINED_SENTENCE
    digits = DIGITS.get(measure, 3)
    if side == "none" and lean(value, low, high, floor=floor) != "none":  # the seed band alone says no
        return SEED_BAND_CROSSES.format(low=fmt(low, digits), high=fmt(high, digits), n=n_seeds,
                                        seed_min=fmt(seed_min, digits), seed_max=fmt(seed_max, digits))
    if side == "none":
        if low is None and high is None and value != 0 and floor:
            return WITHIN_FLOOR.format(name=HEADLINE_MEASURES.get(measure, measure), value=fmt(abs(value)),
                                       floor=floor)
        if low is None and high is None or value == 0:
            return ZERO_SENTENCE
        if not (is_defined(low) and is_defined(high)) or low == high:
            return NO_INTERVAL_LEAN
        digits = DIGITS.get(measure, 3)
        return NO_CLEAR_LEAN.format(low=fmt(low, digits), high=fmt(high, digits))
    positive, negative = SENTENCES[measure]
    text = positive if side == "male" else negative
    if low is None and high is None:
        return text + PROJECTION_NO_INTERVAL
    band = ("" if not (is_defined(seed_min) and is_defined(seed_max)) else
            SEED_BAND_AGREES.format(seed_min=fmt(seed_min, digits), seed_max=fmt(seed_max, digits), n=n_seeds))
    return text[:-1] + EXCLUDES_ZERO.format(low=fmt(low, digits), high=fmt(high, digits)) + "." + band


#: The headline measures in the order the agreement line names them: (column, short name).
HEADLINE_MEASURES = {
    "group_bias": "B_gr",
    "projection_bias": "B_wo",
    "fisher_bp": "Fisher's b_p",
    "individual_bias_vanilla": "B_in (all persons)",
    "individual_bias_weighted": "B_in (women + men)",
}
#: (one measure, several measures) per lean of :func:`lean`.
LEAN_WORDS = {"male": ("leans male", "lean male"), "female": ("leans female", "lean female"),
              "none": ("shows no clear lean", "show no clear lean")}
MEASURES_AGREE = "**The measures agree in direction:** {parts}."
MEASURES_DISAGREE = "**The measures disagree in direction:** {parts}."
UNDEFINED_MEASURES = " Undefined: {names}."
#: Decimals of a measure in sentences, where 3 would round its interval to one number.
DIGITS = {"fisher_bp": 4}
WHY_THEY_DIFFER = (
    "Why they can differ: B_gr compares how far this occupation's women and men are from it, so what "
    "all persons share cancels out; B_in and b_p also carry the occupation relation's own pull along the "
    "male−female direction, the same for every occupation (a shared offset), so they lean the same way "
    "almost everywhere; B_in over all persons lets the larger gender dominate, B_in (women + men) weighs "
    "both equally; B_wo is a projection of the occupation's vector alone, with no persons and no interval."
)


def agreement(row: Mapping[str, float]) -> str:
    """One line: which headline measures lean which way (by :func:`lean`, intervals included); the
    reason they can differ is :data:`WHY_THEY_DIFFER`. ``row``: an occupation's row of the measures table."""
    leans: dict[str, list[str]] = {}
    for column, name in HEADLINE_MEASURES.items():
        interval = (row.get(f"{column}_low"), row.get(f"{column}_high")) if f"{column}_low" in row else (None, None)
        seed_min, seed_max, _ = seed_band_of(row, column)
        side = lean(row[column], *interval, floor=NO_INTERVAL_FLOORS.get(column, 0.0), seed_min=seed_min,
                    seed_max=seed_max)
        leans.setdefault(side, []).append(name)
    parts = "; ".join(f"{', '.join(leans[side])} {LEAN_WORDS[side][len(leans[side]) > 1]}"
                      for side in LEAN_WORDS if side in leans)
    line = (MEASURES_DISAGREE if {"male", "female"} <= set(leans) else MEASURES_AGREE).format(parts=parts)
    return line + (UNDEFINED_MEASURES.format(names=", ".join(leans["undefined"])) if "undefined" in leans else "")


# --- what-if runs against the retraining noise -------------------------------------------------
NO_NOISE_BAND = "Noise band pending: 3 retrains of the unedited graph, once per model (started when the lab opens)."


def noise_sentence(change: float | None, spread: float | None) -> str:
    """Is |change| above the spread of B_gr across retrains of the unedited graph?"""
    if spread is None or not is_defined(change):
        return NO_NOISE_BAND
    verdict = "larger than" if abs(change) > spread else "within"
    return (f"Retrains of the unedited graph under 3 other seeds spread B_gr over {spread:.3f} (max − min): "
            f"this change ({fmt(change)}) is {verdict} that noise.")


# --- who an edit moves in or out of its target's groups (issue 28) ------------------------------
MEMBERSHIP_UNCHANGED = ("The edit leaves {name}'s persons as they are: {n_male:,} men and {n_female:,} women "
                        "before and after.")
MEMBERSHIP_CHANGED = (
    "The edit changes who is in {name}'s groups: it removes {n_profession} of its {relation} facts and {n_gender} "
    "gender fact(s) of its persons, so {n_removed:,} person(s) leave the group and {n_relabelled:,} are "
    "re-labelled{added}; "
    "{n_male_before:,} men and {n_female_before:,} women before, {n_male_after:,} and {n_female_after:,} after."
)
MEMBERSHIP_ADDED = ", and {n_added:,} dummy person(s) join"


def membership_sentence(membership: EditMembership, *, name: str, relation: str = "occupation") -> str:
    """How an edit changes its target's M_o and F_o, in words (an
    :class:`~kgbias_core.whatif.runs.EditMembership`): removed, re-labelled and added persons, counts before
    and after."""
    m = membership
    if not m.changes_groups:
        return MEMBERSHIP_UNCHANGED.format(name=name, n_male=m.n_male_before, n_female=m.n_female_before)
    added = MEMBERSHIP_ADDED.format(n_added=m.n_added) if m.n_added else ""
    return MEMBERSHIP_CHANGED.format(
        name=name, relation=relation, n_profession=m.n_profession_facts, n_gender=m.n_gender_facts,
        n_removed=m.n_removed, n_relabelled=m.n_relabelled, added=added,
        n_male_before=m.n_male_before, n_female_before=m.n_female_before,
        n_male_after=m.n_male_after, n_female_after=m.n_female_after)


# --- what-if predictions (issue 25): which estimator, and its interval ---------------------------
PREDICTION_INTERVAL = "Estimator: {estimator}. Predicted {what}: {low} to {high}{floor}."
PREDICTION_FLOOR = ", the retraining noise band (±{spread}) included"
PREDICTION_NO_FLOOR = "; no noise band yet, so retraining noise comes on top"
#: The same for an import (its negatives re-drawn): no retrain here, so no noise band will come.
PREDICTION_NO_FLOOR_IMPORTED = "; no noise band (an import is not retrained here), so retraining noise comes on top"
#: An import's floor: the prior of :data:`~kgbias_core.whatif.runs.IMPORT_NOISE_FLOOR`, not a band of its own.
PREDICTION_FLOOR_IMPORTED = (", a prior retraining noise (±{spread}) included: an import has no noise band, so this is "
                             "what the bands of models trained here give at this model's spread of B_gr over its "
                             "occupations and this occupation's rarer gender")
PREDICTION_NO_INTERVAL = (
    "Estimator: {estimator}. No interval: this estimator's error was not measured well enough to give one; "
    "retrain to see the change.")
#: Beside the Newton step, where the model still has a calibration of the old estimator.
OLD_ESTIMATE = "Beside it, {estimator}: {summary}."
#: Where it has none: the closed form's sum, which ranks triples but has no size.
OLD_RAW = "Du's closed form Σ δ_z = {raw} ranks the triples (IF-REMOVE, the influence tables); its size is not used."


def prediction_sentence(prediction: WhatIfPrediction, *, before: float | None = None, digits: int = 3) -> str:
    """The estimator and the interval of a predicted change (of B_gr after, given ``before``), in words: the lab,
    the basket, ``debias`` and the report say the same."""
    if not prediction.has_interval:
        return PREDICTION_NO_INTERVAL.format(estimator=prediction.estimator)
    shift = 0.0 if before is None else before
    imported = prediction.redrawn
    floor = ((PREDICTION_FLOOR_IMPORTED if imported else PREDICTION_FLOOR).format(
        spread=f"{prediction.floor:.{digits}f}") if prediction.floor
        else PREDICTION_NO_FLOOR_IMPORTED if imported else PREDICTION_NO_FLOOR)
    return PREDICTION_INTERVAL.format(estimator=prediction.estimator,
                                      what="change" if before is None else "B_gr after",
                                      low=fmt(shift + prediction.low, digits),
                                      high=fmt(shift + prediction.high, digits), floor=floor)


#: Under a removal's prediction while no retrain of the model has been compared with one (no prediction audit, no
#: verified plan): the step is shown as computed, and its band takes its size at face value, which kgbias's own
#: retrains say it should not on most models.
UNAUDITED_REMOVAL = (
    "Not audited yet: no retrain of this model has been compared with a prediction (the prediction audit does, with "
    "one masked retrain), so the step is shown as computed and its interval takes its size at face value. {evidence}"
    " Read the size with care until the audit has run.")
#: What the retrained / predicted ratio of the step as computed was on kgbias's real graphs, per kind of model
#: (squared L2 with one frozen negative, squared L2 with more, pseudo-Huber): the lowest and highest per-file
#: median over the targeted sets of experiments/whatif_accuracy/results (the files are named in
#: tests/test_readings_unaudited.py, which checks these figures against them).
UNAUDITED_RATIOS = {"one negative": (0.55, 1.13), "several negatives": (0.46, 1.02), "pseudo_huber": (1.45, 1.45),
                    "l1": (1.3, 1.95),  # L1 with eight negatives: FB13 and FB15k-237 (2026-12-06)
                    # an import of each distance: synthetic graphs trained here, predicted as imports (the sentence
                    # says so; no real import can be retrained to measure it)
                    # L1: FB15k-237 and FB13 predicted as imports too (2026-12-07); squared L2: FB15k-237 with its
                    # sets chosen by the import's closed form, as the lab chooses them (2026-12-08)
                    "imported squared_l2": (0.42, 0.47), "imported l1": (1.42, 2.9),
                    # L2 since its step of 2026-12-07: the two synthetic graphs and FB15k-237, trained here with
                    # eight negatives and predicted as imports (negatives re-drawn from another seed)
                    "imported l2": (5.78, 8.05)}
#: Under a removal's prediction on a model imported from another engine: no retrain here can audit it.
UNAUDITED_IMPORTED = (
    "Imported from another engine: no retrain here can audit this prediction (an audit retrains, and retraining "
    "belongs to the engine that trained the model), so {how}, from re-drawn negatives, and "
    "its interval is the imports' own band. {evidence} Read the size as a rough guide.")
#: :data:`UNAUDITED_IMPORTED`'s {how}: the step as computed, or times its distance's prior scale
#: (:data:`~kgbias_core.influence.prediction.REDRAWN_SCALES`).
IMPORTED_AS_COMPUTED = "the step is shown as computed"
IMPORTED_PRIOR = "the step is multiplied by a prior scale of {scale}"
#: After :data:`UNAUDITED_IMPORTED` on a model imported before kgbias import re-drew eight negatives a triple
#: (:func:`~kgbias_core.influence.negatives.reimport_negatives`): its band was fitted on imports of eight, and the
#: coverage of the band shown with one, on the synthetic proxies of each distance (the "one re-drawn" rows judged by
#: their "lab band" in experiments/whatif_accuracy/results/distance_bands_imported.csv, checked by
#: tests/test_readings_unaudited.py).
REIMPORT = (" This model was imported with {k} re-drawn negative(s) a triple, before kgbias import re-drew {n}: its "
            "interval's band was fitted on imports that re-draw {n}, and with one the band shown then held only "
            "{low} to {high} of the same synthetic sets. Import it again (kgbias import) to re-draw {n}.")
REIMPORT_COVERAGE = (0.02, 0.62)
#: Before its audit a model with one frozen negative per triple is predicted at the prior temperature
#: (:data:`~kgbias_core.influence.hinge_curvature.PRIOR_TEMPERATURE`): the sentence says so, with the range of the
#: temperatures the audits of five such graphs set (checked against experiments/whatif_accuracy/results/
#: audit_temperature_audits.csv) and, as the ratios above, the per-file medians of retrained / predicted at the prior.
UNAUDITED_PRIOR = (
    "Not audited yet: no retrain of this model has been compared with a prediction (the prediction audit does, with "
    "one masked retrain), so the step takes the hinge's curvature at a prior temperature, T = {temperature} margins, "
    "where the audits of five graphs with one negative per triple put it ({low_t} to {high_t}), and its interval is "
    "the prior's. {evidence} Read the size with care until the audit has run.")
PRIOR_TEMPERATURES = (0.54, 1.25)
UNAUDITED_EVIDENCE = {
    "one negative": ("On those graphs' sets a retrain moved a median {low} to {high} of the step at the prior "
                     "temperature."),
    "several negatives": ("On models with eight negatives per triple (FB13, FB15k-237) a retrain moved a median "
                          "{low} to {high} of the step."),
    "pseudo_huber": "On FB15k-237's pseudo-Huber model a retrain moved a median {low} times the step.",
    "l1": ("On models with the L1 distance and eight negatives per triple (FB13, FB15k-237) a retrain moved a median "
           "{low} to {high} of the step."),
    "other": "No retrain of a real graph has measured the step for this distance.",
    "imported squared_l2": ("On FB15k-237 and two synthetic graphs trained here with eight negatives and predicted "
                            "as imports of this distance (each set chosen by the import's closed form, as here), a "
                            "retrain moved a median {low} to {high} times the step; the prior is their median, and at "
                            "it the band held 90% of their sets (14 of 16 on FB15k-237, 85%-92% with each graph's "
                            "prior and band fitted on the other two). A stand-in audit (the lab, or kgbias "
                            "audit-import) measures this graph's own ratio with a model trained here."),
    "imported l1": ("On FB15k-237, FB13 and two synthetic graphs trained here with eight negatives and predicted as "
                    "imports of this distance, a retrain moved a median {low} to {high} times the step; the prior is "
                    "the median of the four, and at it the band held 91% of their sets (19 of 20 on the two real "
                    "graphs, 16 of 20 with each one's prior and band fitted on the other three graphs)."),
    "imported l2": ("On FB15k-237 and two synthetic graphs trained here with L2 and eight negatives and predicted as "
                    "imports, a retrain moved a median {low} to {high} times the step: ask for the refined "
                    "prediction, whose interval held 90% of the same sets."),
}


def unaudited_kind(distance: str, negatives: int, *, imported: bool = False) -> str:
    """The key of :data:`UNAUDITED_EVIDENCE` for a model of ``distance`` with ``negatives`` frozen negatives (an
    ``imported`` one: "imported <distance>", the synthetic proxies' figures, or "other"). "one negative" is the kind
    predicted at the prior temperature: :func:`~kgbias_core.influence.hinge_curvature.prior_temperature` decides it."""
    from kgbias_core.influence.hinge_curvature import prior_temperature

    if imported:
        return f"imported {distance}" if f"imported {distance}" in UNAUDITED_RATIOS else "other"
    if prior_temperature(distance=distance, negatives_per_triple=negatives) is not None:
        return "one negative"
    if distance == "squared_l2":
        return "several negatives"
    if distance == "l1" and negatives <= 1:  # L1's figures are of eight negatives a triple
        return "other"
    return distance if distance in UNAUDITED_RATIOS else "other"


def unaudited_sentence(distance: str, negatives: int, *, imported: bool = False, reimport: int | None = None) -> str:
    """:data:`UNAUDITED_REMOVAL` with the evidence for this kind of model (the lab, the basket and ``debias``);
    :data:`UNAUDITED_PRIOR` for a model predicted at the prior temperature (the kind "one negative");
    :data:`UNAUDITED_IMPORTED` for a model imported from another engine, which no retrain here can audit, followed
    by :data:`REIMPORT` where it re-draws fewer negatives than an import would today (``reimport``, that count:
    :func:`~kgbias_core.influence.negatives.reimport_negatives`)."""
    from kgbias_core.influence.hinge_curvature import PRIOR_TEMPERATURE

    kind = unaudited_kind(distance, negatives, imported=imported)
    evidence = UNAUDITED_EVIDENCE[kind]
    if kind in UNAUDITED_RATIOS:
        low, high = UNAUDITED_RATIOS[kind]
        evidence = evidence.format(low=f"{low:.2f}", high=f"{high:.2f}")
    if imported:
        from kgbias_core.influence.prediction import REDRAWN_SCALES

        again = "" if reimport is None else REIMPORT.format(
            k=negatives, n=reimport, low=f"{REIMPORT_COVERAGE[0]:.0%}", high=f"{REIMPORT_COVERAGE[1]:.0%}")
        scale = REDRAWN_SCALES.get(distance)
        how = IMPORTED_AS_COMPUTED if scale is None else IMPORTED_PRIOR.format(scale=f"{scale:.2f}")
        return UNAUDITED_IMPORTED.format(how=how, evidence=evidence) + again
    if kind == "one negative":
        return UNAUDITED_PRIOR.format(temperature=f"{PRIOR_TEMPERATURE:.2f}", low_t=f"{PRIOR_TEMPERATURES[0]:.2f}",
                                      high_t=f"{PRIOR_TEMPERATURES[1]:.2f}", evidence=evidence)
    return UNAUDITED_REMOVAL.format(evidence=evidence)


def model_unaudited_sentence(model) -> str:
    """:func:`unaudited_sentence` of a stored model: its distance, its negatives a triple, whether it was imported,
    and the count an import would re-draw today where it re-draws fewer (the lab, the basket and ``debias``)."""
    from kgbias_core.influence.negatives import reimport_negatives

    return unaudited_sentence(model.config.distance, model.config.negatives_per_triple,
                              imported=bool(model.info.get("imported_from")), reimport=reimport_negatives(model))


VERDICT = "Retrained change {over} {retrained}: {verdict} the {what} interval ({low} to {high}); {why}."
NO_VERDICT = "Retrained change {over} {retrained}: the {what} change has no interval to judge it by."


def verdict_sentence(prediction: WhatIfPrediction, retrained: float, *, kind: str, what: str = "predicted",
                     digits: int = 3) -> str:
    """Whether the retrained change of an edit of ``kind`` lies inside ``prediction``'s interval, judged over the
    persons the prediction holds (:func:`~kgbias_core.whatif.runs.judged_change`): the lab, ``debias`` and the
    report say the same."""
    from kgbias_core.whatif.runs import JUDGED_OVER, JUDGED_WHY

    if not prediction.has_interval or not math.isfinite(retrained):
        return NO_VERDICT.format(over=JUDGED_OVER[kind], retrained=fmt(retrained, digits), what=what)
    inside = prediction.low <= retrained <= prediction.high
    return VERDICT.format(over=JUDGED_OVER[kind], retrained=fmt(retrained, digits),
                          verdict="inside" if inside else "outside", what=what, low=fmt(prediction.low, digits),
                          high=fmt(prediction.high, digits), why=JUDGED_WHY[kind])


def old_estimate_sentence(change: PredictedChange, *, digits: int = 3) -> str:
    """The old estimator's figure, labelled, where it is still shown beside the Newton step."""
    from kgbias_core.influence.prediction import OLD_ESTIMATOR

    if change.calibrated:
        return OLD_ESTIMATE.format(estimator=OLD_ESTIMATOR, summary=change.summary(digits))
    return OLD_RAW.format(raw=fmt(change.raw, digits))


# --- link prediction against its floor (kgbias_core.evaluation.baseline) --------------------------------------
LINK_BASELINE = (
    "A popularity count, which ranks each relation's answers by how often they answer it in training and ignores "
    "the query's entity, reaches MRR {baseline}{below}. {same} of the queries get the top-1 answer their relation's "
    "queries get most often{ignores}."
)
LINK_BASELINE_BELOW = ": more than this model"
LINK_BASELINE_IGNORES = " (100%: the model does not read the query's entity, as the count does not)"


def link_baseline_sentence(line: Mapping[str, float] | None) -> str:
    """The floor of a model's link prediction in one sentence, from a
    :func:`~kgbias_core.evaluation.link_prediction.headline` line ("" where the line has no baseline: a table
    cached before it): the Overview, the report and ``kgbias link-prediction`` say the same."""
    if not line or "baseline_mrr" not in line:
        return ""
    same = line["same_top1"]
    return LINK_BASELINE.format(baseline=f"{line['baseline_mrr']:.3f}",
                                below=LINK_BASELINE_BELOW if line["baseline_mrr"] > line["mrr"] else "",
                                same=f"{same:.0%}", ignores=LINK_BASELINE_IGNORES if same >= 0.995 else "")
