"""Issue 24's trade-off curve: link prediction against influence accuracy, every FB15k-237 and FB13 config measured.

    python experiments/default_models/tradeoff_curve.py [--out experiments/default_models/results/tradeoff_curve.csv]

Issue 24 asks, where the MRR goal (FB15k-237 >= 0.29) cannot be met together with influence (closed-form Pearson
r >= 0.99 against masked retraining, random-removal noise <= 0.01), for the curve of MRR against r and the default
picked from it. The points are spread over the result files of several studies (:data:`SOURCES`); this script joins
them, computes nothing new and trains nothing, so the curve is a function of the committed result files:

- link prediction (filtered MRR and Hits@10, heads and tails pooled) from each sweep's RUNS_models.csv, one row per
  config; its machine from the file's provenance entry;
- influence from the check that retrained the same model (``sweep.py``'s summary: the smallest r over its
  occupations with an r, which ``occupations`` counts, the largest noise over all its random sets, at 2 and 32% of
  the moving triples; a check of random sets only gives the noise and no r, and its point stays off the front; or
  ``validate_influence.py``'s per-occupation summary, at its own set sizes, which the ``check`` column names);
- the popularity count of the graph (``head_dependence.py``: answers ranked by their training counts), the floor a
  model's link prediction has to clear;
- the Pareto front: a checked config is on it when no other checked config of its graph has an MRR and an r at
  least as high, one of them higher;
- the default: the config whose every TrainConfig field equals the graph's :func:`default_train_config`.

A config measured in several files (the same config hash) keeps its first row with an influence check, else its
first row: the CPU's before the H200's.
"""

from __future__ import annotations

import argparse
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from kgbias_core.embeddings.config import TrainConfig, default_train_config

HERE = Path(__file__).resolve().parent / "results"
VALIDATION = Path(__file__).resolve().parents[1] / "influence_vs_retraining" / "results"
R_BAR = 0.99  # issue 24: influence against masked retraining keeps r >= 0.99
NOISE_BAR = 0.01  # and random-removal noise <= 0.01 (B_gr units)
MRR_GOAL = {"fb15k237": 0.29}  # a standard TransE on FB15k-237; elsewhere the goal is the popularity count
SETTINGS = ("distance", "negatives_per_triple", "l2")  # the curve's own axes of config; the rest is "changes"


@dataclass(frozen=True)
class Source:
    """One study's configs: its RUNS_models.csv and, where it retrained them, the summary of its influence check."""

    graph: str
    models: Path
    influence: Path | None = None


SOURCES = (
    Source("fb15k237", HERE / "fb15k237_influence_k1_k8_models.csv", HERE / "fb15k237_influence_k1_k8_summary.csv"),
    Source("fb15k237", HERE / "fb15k237_l1_k8_influence_models.csv", HERE / "fb15k237_l1_k8_influence_summary.csv"),
    Source("fb15k237", HERE / "fb15k237_l1_k32_influence_models.csv", HERE / "fb15k237_l1_k32_influence_summary.csv"),
    Source("fb15k237", HERE / "fb15k237_pseudo_huber_influence_models.csv",
           HERE / "fb15k237_pseudo_huber_influence_summary.csv"),
    Source("fb15k237", HERE / "fb15k237_pseudo_huber_k32_influence_models.csv",
           HERE / "fb15k237_pseudo_huber_k32_influence_summary.csv"),
    Source("fb15k237", HERE / "fb15k237_k8_sweep_models.csv"),
    Source("fb15k237", HERE / "fb15k237_pseudo_huber_k32_lp_models.csv"),
    Source("fb15k237", HERE / "fb15k237_objective_h200_models.csv"),
    Source("fb15k237", HERE / "fb15k237_corruption_lp_models.csv"),
    Source("fb15k237", HERE / "fb15k237_l1_k8_grid_lp_models.csv"),
    Source("fb15k237", HERE / "fb15k237_l1_k64_lp_models.csv"),
    Source("fb15k237", HERE / "fb15k237_l1_k128_lp_models.csv"),
    Source("fb15k237", HERE / "fb15k237_degree_lp_models.csv"),
    # FB13's default was checked by validate_influence.py (3 occupations, sets of up to 1,398 triples), not by a sweep.
    Source("fb13", HERE / "fb13_k1_at_k8_sizes_models.csv", VALIDATION / "fb13_l2_80_e160_summary.csv"),
    Source("fb13", HERE / "fb13_k8_influence_models.csv", HERE / "fb13_k8_influence_summary.csv"),
    Source("fb13", HERE / "fb13_l1_k8_influence_models.csv", HERE / "fb13_l1_k8_influence_summary.csv"),
    Source("fb13", HERE / "fb13_pseudo_huber_l2_20_influence_models.csv",
           HERE / "fb13_pseudo_huber_l2_20_influence_summary.csv"),
    Source("fb13", HERE / "fb13_k8_lp_models.csv"),
    Source("fb13", HERE / "fb13_pseudo_huber_lp_models.csv"),
    Source("fb13", HERE / "fb13_degree_influence_models.csv"),
)

COLUMNS = ("graph", "distance", "negatives", "l2", "changes", "config_hash", "mrr", "hits@10", "lp_machine", "check",
           "occupations", "sets", "r_min", "noise_max", "above_count", "r_bar", "noise_bar", "mrr_goal", "front",
           "default")


def machine_of(path: Path) -> str:
    """The machine key of a result file's provenance entry (docs/generate.py checks it against docs/machines.toml)."""
    entry = tomllib.loads((path.parent / "provenance.toml").read_text(encoding="utf-8")).get(path.name)
    if entry is None:
        raise SystemExit(f"error: {path.name}: no provenance entry beside it")
    return entry["machine"]


def influence_of(path: Path, models: pd.DataFrame) -> dict[str, dict]:
    """config hash -> {occupations, sets, r_min, noise_max, check} from a sweep summary or a validation summary.

    A validation summary (one row per occupation, r written as ``0.9996 (p 2e-7)``) describes the one model of its
    models file; a sweep summary names each row's config hash."""
    table = pd.read_csv(path)
    if "config_hash" in table.columns:
        checks = {}
        for _, row in table.iterrows():
            r, noise = row.get("r_closed_min", math.nan), row.get("noise_max", math.nan)
            if math.isnan(r) and math.isnan(noise):
                continue
            # Random sets only (fewer than 3 sets an occupation): the noise bar is read, r is not, and the point
            # stays off the front; ``occupations`` then counts those with random sets.
            has_r = not math.isnan(r)
            checks[row["config_hash"]] = {
                "occupations": row.get("r_occupations", row["occupations"]) if has_r else row["occupations"],
                "sets": row["sets"], "r_min": r, "noise_max": noise,
                "check": "sweep.py, 2/32% sets" if has_r else "sweep.py, random sets only"}
        return checks
    if len(models) != 1:
        raise SystemExit(f"error: {path.name}: a validation summary needs a models file of one config")
    r = table["r"].map(lambda text: float(str(text).split()[0]))
    return {models["config_hash"].iloc[0]: {"occupations": len(table), "sets": int(table["sets"].sum()),
                                            "r_min": float(r.min()),
                                            "noise_max": float(table["random-removal noise"].max()),
                                            "check": "validate_influence.py"}}


def popularity_mrr(graph: str) -> float:
    """The popularity count's pooled MRR (head_dependence.py's ``popularity`` row, both sides)."""
    table = pd.read_csv(HERE / f"head_dependence_{graph}.csv")
    row = table[table["model"].str.startswith("popularity") & (table["side"] == "both")]
    return float(row["mrr"].iloc[0])


def changes_of(row: pd.Series, graph: str) -> tuple[str, bool]:
    """The TrainConfig fields of ``row`` that differ from the graph's default, beyond :data:`SETTINGS` (``a=b,..``),
    and whether none differs at all (the default)."""
    default = asdict(default_train_config(graph))
    differ = []
    for key, value in default.items():
        mine = row.get(key)
        if key not in row.index or (isinstance(mine, float) and math.isnan(mine) and value is not None):
            mine = getattr(TrainConfig(), key)  # a file written before the field existed: the draw it had then
        same = (value is None and (mine is None or (isinstance(mine, float) and math.isnan(mine)))) or (
            value is not None and type(value)(mine) == value)
        if not same:
            differ.append(key)
    text = ",".join(f"{key}={row[key]}" for key in differ if key not in SETTINGS)
    return text, not differ


def on_front(points: pd.DataFrame) -> pd.Series:
    """Per checked row: no other checked row of the frame has MRR >= and r >= with one of them >."""
    checked = points["r_min"].notna()
    flags = pd.Series(False, index=points.index)
    for i, row in points[checked].iterrows():
        others = points[checked].drop(index=i)
        dominated = ((others["mrr"] >= row["mrr"]) & (others["r_min"] >= row["r_min"])
                     & ((others["mrr"] > row["mrr"]) | (others["r_min"] > row["r_min"]))).any()
        flags[i] = not dominated
    return flags


def curve(sources: tuple[Source, ...] = SOURCES) -> pd.DataFrame:
    """One row per (graph, config hash): the columns of :data:`COLUMNS`, sorted by graph and MRR."""
    rows: dict[tuple[str, str], dict] = {}
    for source in sources:
        if not source.models.is_file():
            raise SystemExit(f"error: {source.models.name}: no such result file")
        models = pd.read_csv(source.models)
        checks = influence_of(source.influence, models) if source.influence is not None else {}
        machine = machine_of(source.models)
        for _, model in models.iterrows():
            key = (source.graph, model["config_hash"])
            check = checks.get(model["config_hash"])
            if key in rows and (rows[key]["check"] or check is None):
                continue
            changes, is_default = changes_of(model, source.graph)
            rows[key] = {"graph": source.graph, "distance": model["distance"],
                         "negatives": int(model["negatives_per_triple"]), "l2": float(model["l2"]),
                         "changes": changes, "config_hash": model["config_hash"][:12], "mrr": float(model["mrr"]),
                         "hits@10": float(model["hits@10"]), "lp_machine": machine, "check": "",
                         "occupations": math.nan, "sets": math.nan, "r_min": math.nan, "noise_max": math.nan,
                         "default": is_default, **(check or {})}
    table = pd.DataFrame(list(rows.values()))
    parts = []
    for graph, part in table.groupby("graph", sort=False):
        part = part.copy()
        count = popularity_mrr(graph)
        goal = MRR_GOAL.get(graph, count)
        part["above_count"] = (part["mrr"] > count).map(_yes)
        part["r_bar"] = part["r_min"].map(lambda r: "" if math.isnan(r) else _yes(r >= R_BAR))
        part["noise_bar"] = part["noise_max"].map(lambda n: "" if math.isnan(n) else _yes(n <= NOISE_BAR))
        part["mrr_goal"] = (part["mrr"] >= goal).map(_yes)
        front = on_front(part)
        part["front"] = [_yes(f) if checked else "" for f, checked in zip(front, part["r_min"].notna(), strict=True)]
        part["default"] = part["default"].map(_yes)
        parts.append(part.sort_values("mrr"))
    return pd.concat(parts, ignore_index=True)[list(COLUMNS)]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "tradeoff_curve.csv")
    args = parser.parse_args()
    table = curve()
    temporary = args.out.with_suffix(".tmp")
    table.to_csv(temporary, index=False)
    temporary.replace(args.out)  # atomic: a reader never sees half a curve
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
