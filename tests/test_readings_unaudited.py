"""The sentence under a removal's prediction before the model's audit (issue 25): its figures are the per-file medians
of the retrained / predicted ratio of the step it shows (as computed; at the prior temperature on one-negative
models) on the targeted sets of kgbias's committed what-if benches, and the range of the temperatures the audits of
one-negative graphs set, so the text cannot drift from the results it quotes."""

from __future__ import annotations

import pandas as pd
import pytest

from kgbias_core.readings import (
    PRIOR_TEMPERATURES,
    UNAUDITED_EVIDENCE,
    UNAUDITED_RATIOS,
    unaudited_kind,
    unaudited_sentence,
)
from tests.conftest import REPO

RESULTS = REPO / "experiments" / "whatif_accuracy" / "results"
#: The benches of each kind of model whose rows hold the step shown before the audit and the masked retrain: the step
#: as computed (``newton``), or on one-negative models the step at the prior temperature (``prior``).
PRIOR_FILES = tuple(f"audit_temperature_prior_{name}.csv" for name in ("fb15k237_k1", "fb13_k1", "synthetic",
                                                                     "tiny_seed7", "tiny_seed11"))
COLUMN = {"one negative": "prior"}
FILES = {
    "one negative": PRIOR_FILES,
    "several negatives": ("fb15k237_k8_whatif_rescored.csv", "fb15k237_k8_whatif_more.csv",
                          "fb15k237_k8_whatif_h200_rescored.csv", "fb15k237_k8_whatif_twelve.csv",
                          "fb13_k8_cpu_whatif.csv"),
    "pseudo_huber": ("fb15k237_ph_whatif.csv",),
    # imports: the synthetic graphs of seeds 7 and 11 predicted as imports of each distance (eight re-drawn)
    **{f"imported {d}": tuple(f"local_refit_read_synthetic_{seed}k8_e100_{d}_imported8.csv" for seed in ("", "seed11_"))
       for d in ("squared_l2", "l1", "l2")},
}


def median_ratio(name: str, column: str = "newton") -> float:
    rows = pd.read_csv(RESULTS / name)
    targeted = rows[rows["kind"] != "random"]
    return float((targeted["actual"] / targeted[column]).median())


@pytest.mark.parametrize("kind", sorted(FILES))
def test_the_quoted_ratios_are_the_benches_medians(kind: str) -> None:
    medians = [median_ratio(name, COLUMN.get(kind, "newton")) for name in FILES[kind]]
    assert UNAUDITED_RATIOS[kind] == (round(min(medians), 2), round(max(medians), 2))


def test_the_quoted_prior_range_is_the_one_negative_audits_temperatures() -> None:
    audits = pd.read_csv(RESULTS / "audit_temperature_audits.csv")
    one = audits[~audits["graph"].str.contains("8 negatives")]
    assert len(one) == 5
    assert PRIOR_TEMPERATURES == (round(one["temperature"].min(), 2), round(one["temperature"].max(), 2))


def test_each_kind_of_model_reads_its_own_evidence() -> None:
    assert unaudited_kind("squared_l2", 1) == "one negative"
    assert unaudited_kind("squared_l2", 8) == "several negatives"
    assert unaudited_kind("pseudo_huber", 8) == "pseudo_huber"
    assert unaudited_kind("l1", 8) == unaudited_kind("l2", 1) == "other"
    one = unaudited_sentence("squared_l2", 1)
    assert "a median 0.55 to 1.13 of the step at the prior temperature" in one and "Not audited yet" in one
    assert "T = 1.00 margins" in one and "(0.54 to 1.25)" in one
    assert UNAUDITED_EVIDENCE["several negatives"].format(low="0.46", high="1.02") in unaudited_sentence(
        "squared_l2", 8)
    assert UNAUDITED_EVIDENCE["other"] in unaudited_sentence("l1", 8)
    assert "nan" not in unaudited_sentence("l1", 8)
    imported = unaudited_sentence("squared_l2", 1, imported=True)  # another engine's model: no prior, no audit
    assert unaudited_kind("squared_l2", 1, imported=True) == "imported squared_l2"
    assert "a median 0.42 to 0.47 of the step" in imported and "synthetic graphs" in imported
    assert "prior" not in imported and "shown as computed" in imported and "until the audit" not in imported
    assert unaudited_kind("pseudo_huber", 8, imported=True) == "other"  # no import scores with pseudo-Huber
    assert UNAUDITED_EVIDENCE["other"] in unaudited_sentence("pseudo_huber", 8, imported=True)
