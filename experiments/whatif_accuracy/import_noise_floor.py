"""A prior noise floor for imported models (issue 25): fitted on noise bands of models trained here, judged on the
random and targeted sets of graphs predicted as imports.

A model trained here gets a noise band: B_gr of every occupation retrained under three other seeds, its spread the
floor of every removal's interval (:func:`kgbias_core.influence.prediction.with_noise_floor`). An import is never
retrained here, so its intervals had no floor, and a random set's change (retraining noise, a few thousandths to
hundredths) fell outside an interval relative to a point near 0. Across models the spread scales with how far B_gr
spreads over the model's occupations (sd, over those with both genders) and shrinks with the rarer gender's count m:
spread * sqrt(m) / sd is about the same on FB13's squared-L2 default and FB15k-237 with L2 (median 0.14 and 0.10,
90th percentile 0.28 both), where the spreads themselves differ 15-fold. So an import's floor is the prior
c * sd / sqrt(m), c the pooled ``--coverage`` quantile of that ratio over the bands' occupations
(:data:`kgbias_core.whatif.runs.IMPORT_NOISE_FLOOR`).

    python experiments/whatif_accuracy/import_noise_floor.py \
        --bands fb13=results/fb13_k8_noise_band.csv:STORE/fb13-transe .. \
        --judge fb15k237_l2=results/local_refit_read_fb15k237_l2_k8_imported8.csv:STORE/fb15k237-l2k8:l2 .. \
        --out results/import_noise_floor.csv

``--bands NAME=BAND.csv:MODEL``: a noise band (``kgbias_core.whatif.runs.noise_band``'s table) and the model it was
made for (its groups and B_gr). ``--judge NAME=ROWS.csv:MODEL:DISTANCE``: a ``local_refit.py --as-imported`` output
and the model it predicted as an import: each set's point as the lab shows it on an import of that distance (the
step at the distance's prior scale, :data:`~kgbias_core.influence.prediction.REDRAWN_SCALES`, its band
:data:`~kgbias_core.influence.prediction.REDRAWN_BANDS`), judged with and without the floor, random and targeted
sets apart; on L2, whose imports are offered the refined prediction, that one's too (its prior scale and band).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.prediction import REDRAWN_BANDS, REDRAWN_SCALES, band_ends
from kgbias_core.influence.refit_prediction import REFIT_REDRAWN_BANDS, REFIT_REDRAWN_SCALES
from kgbias_core.whatif.runs import bias_sd, import_floor


def model_scale(path: str) -> tuple[float, dict[str, int]]:
    """(sd of B_gr over the model's occupations with both genders, the rarer gender's count per occupation label)."""
    analysis = ModelAnalysis(load_model(path))
    groups = analysis.groups
    rarer = np.minimum(groups.n_male.cpu().numpy(), groups.n_female.cpu().numpy())
    return bias_sd(analysis), dict(zip(groups.labels, rarer.tolist(), strict=True))


def band_ratios(band: pd.DataFrame, sd: float, rarer: dict[str, int]) -> pd.Series:
    """spread * sqrt(m) / sd of each occupation the band holds (both genders, a finite spread)."""
    band = band.dropna(subset=["spread"])
    m = band["occupation"].map(rarer).clip(lower=1)
    return band["spread"] * np.sqrt(m) / sd


def judged(rows: pd.DataFrame, *, distance: str, sd: float, c: float | None, refined: bool = False) -> np.ndarray:
    """Whether each set's retrained change lies inside the lab's interval on an import (floor c * sd / sqrt(m)): the
    step's, or with ``refined`` the refined prediction's (its prior scale and band, where the distance has them)."""
    m = np.minimum(rows["men"], rows["women"]).clip(lower=1).to_numpy(float)
    if refined:
        base, small = REFIT_REDRAWN_BANDS[distance]
        point = rows["newton_refit_read"].to_numpy(float) * REFIT_REDRAWN_SCALES[distance]
    else:
        base, small = REDRAWN_BANDS[distance]
        point = rows["newton"].to_numpy(float) * REDRAWN_SCALES.get(distance, 1.0)
    floor = np.zeros_like(m) if c is None else np.array([import_floor(sd, int(k), c=c) for k in m])
    low, high = band_ends(point, base + small / np.sqrt(m), floor)
    actual = rows["actual"].to_numpy(float)
    return (low <= actual) & (actual <= high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bands", nargs="+", required=True, metavar="NAME=BAND.csv:MODEL")
    parser.add_argument("--judge", nargs="*", default=[], metavar="NAME=ROWS.csv:MODEL:DISTANCE")
    parser.add_argument("--coverage", type=float, default=0.9)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out, pooled = [], []
    for item in args.bands:
        name, _, rest = item.partition("=")
        band_path, model_path = rest.rsplit(":", 1)
        sd, rarer = model_scale(model_path)
        ratios = band_ratios(pd.read_csv(band_path), sd, rarer)
        pooled.append(ratios)
        out.append({"evaluation": f"fit {name}", "sets": len(ratios), "sd": sd, "median": ratios.median(),
                    "quantile": ratios.quantile(args.coverage)})
    every = pd.concat(pooled, ignore_index=True)
    c = float(every.quantile(args.coverage))
    out.append({"evaluation": "fit pooled", "sets": len(every), "median": every.median(), "quantile": c})
    for item in args.judge:
        name, _, rest = item.partition("=")
        rows_path, model_path, distance = rest.rsplit(":", 2)
        sd, _ = model_scale(model_path)
        rows = pd.read_csv(rows_path)
        for kind, part in (("random", rows[rows["kind"] == "random"]), ("targeted", rows[rows["kind"] != "random"])):
            if part.empty:
                continue
            refinable = distance in REFIT_REDRAWN_SCALES and "newton_refit_read" in part
            for estimator in ("step", "refined") if refinable else ("step",):
                for floor, value in (("prior floor", c), ("no floor", None)):
                    inside = judged(part, distance=distance, sd=sd, c=value, refined=estimator == "refined")
                    what = "" if estimator == "step" else " (refined)"
                    out.append({"evaluation": f"{name} {kind}{what}, {floor}", "sets": len(part), "sd": sd,
                                "covered": int(inside.sum()), "coverage": float(inside.mean())})
    frame = pd.DataFrame(out)
    print(frame.round(4).to_string(index=False))
    write_text(frame.to_csv(index=False, float_format="%.4f"), args.out)


if __name__ == "__main__":
    main()
