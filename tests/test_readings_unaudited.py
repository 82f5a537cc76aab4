"""The sentence under a removal's prediction before the model's audit (issue 25): its figures are the per-file medians
of the retrained / predicted ratio of the step as computed on the targeted sets of kgbias's committed what-if
benches, so the text cannot drift from the results it quotes."""

from __future__ import annotations

import pandas as pd
import pytest

from kgbias_core.readings import UNAUDITED_EVIDENCE, UNAUDITED_RATIOS, unaudited_kind, unaudited_sentence
from tests.conftest import REPO

RESULTS = REPO / "experiments" / "whatif_accuracy" / "results"
#: The benches of each kind of model whose rows hold the step as computed (``newton``) and the masked retrain.
FILES = {
    "one negative": ("fb15k237_whatif.csv", "fb13_cpu_whatif.csv", "fb13_whatif_h200.csv"),
    "several negatives": ("fb15k237_k8_whatif_rescored.csv", "fb15k237_k8_whatif_more.csv",
                          "fb15k237_k8_whatif_h200_rescored.csv", "fb15k237_k8_whatif_twelve.csv",
                          "fb13_k8_cpu_whatif.csv"),
    "pseudo_huber": ("fb15k237_ph_whatif.csv",),
}


def median_ratio(name: str) -> float:
    rows = pd.read_csv(RESULTS / name)
    targeted = rows[rows["kind"] != "random"]
    return float((targeted["actual"] / targeted["newton"]).median())


@pytest.mark.parametrize("kind", sorted(FILES))
def test_the_quoted_ratios_are_the_benches_medians(kind: str) -> None:
    medians = [median_ratio(name) for name in FILES[kind]]
    assert UNAUDITED_RATIOS[kind] == (round(min(medians), 2), round(max(medians), 2))


def test_each_kind_of_model_reads_its_own_evidence() -> None:
    assert unaudited_kind("squared_l2", 1) == "one negative"
    assert unaudited_kind("squared_l2", 8) == "several negatives"
    assert unaudited_kind("pseudo_huber", 8) == "pseudo_huber"
    assert unaudited_kind("l1", 8) == unaudited_kind("l2", 1) == "other"
    one = unaudited_sentence("squared_l2", 1)
    assert "a median 0.15 to 0.27 of the step" in one and "Not audited yet" in one
    assert UNAUDITED_EVIDENCE["several negatives"].format(low="0.46", high="1.02") in unaudited_sentence(
        "squared_l2", 8)
    assert UNAUDITED_EVIDENCE["other"] in unaudited_sentence("l1", 8)
    assert "nan" not in unaudited_sentence("l1", 8)
