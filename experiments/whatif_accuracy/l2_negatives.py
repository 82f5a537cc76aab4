"""Which curvature L2's step should give the frozen negatives (issue 25): the lab's against the exact one and two more.

On L2 each active term's d^2 psi is (I - u u^T) / ||x|| in its residual x = h + r - t (u = x / ||x||): a curvature
per term and coordinate, applied term by term. With eight negatives FB15k-237 has 272k positive terms and 1.74M
active negatives, so a |H| product took 1.9 s at one thread and the step (25 products) about 50 s (step_cost.py).
This script runs each set's step with four |H| (the lab's conjugate gradients, its damping and tolerance, to
``--caps``), each scaled by its own audit ratio and judged by L2's band in the lab (:func:`l2_cap.point_summary`):

- ``lab``: :func:`~kgbias_core.influence.prediction.absolute_curvature_hvp` as the lab builds it: the positives
  exact, each negative's curvature I / ||x'|| (that of ||x||^2 / (2 ||x'||) at x': stiff along its residual too),
  one sparse matrix M_neg (x) I_d;
- ``exact``: every term (I - u u^T) / ||x|| (the lab's operator before 2026-12-07);
- ``isotropic``: every term I / ||x||, one matrix for all (squared L2's cost);
- ``positives``: the negatives' curvature left out.

    python l2_negatives.py --seed 7 --runs results/scale_search_synthetic_s7_l2.csv \\
        --out results/l2_negatives_synthetic_s7.csv
    python l2_negatives.py --model M --runs results/scale_search_fb15k237_l2_k8.csv \\
        results/fb15k237_l2_k8_whatif_2pct.csv --out results/l2_negatives_fb15k237_l2_k8.csv
    python l2_negatives.py --summarize NAME=OUT .. --floors NAME=RUNS .. --out SUMMARY.csv

``--runs``: the sets and their retrains, one or more files (scale_search.py's rows, whatif_accuracy.py's, or any
file with occupation, name, men, women, kind, share, k, in_audit and actual; one row in_audit over them all). No
retrain is run.
"""

from __future__ import annotations

import time

import pandas as pd
import torch
from l2_cap import _named, point_summary, step_inputs, step_parser  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.influence.prediction import (
    L2_CG_ITERATIONS,
    L2_NORM_FLOOR,
    PREDICTION_TOLERANCE,
    _bias,
    _damping,
    _kronecker_matrix,
    _moved,
    _residual_bags,
    _residual_norms,
    _row_sums,
    _term_product,
    absolute_curvature_hvp,
    preconditioned_cg,
    removal_gradient,
)
from kgbias_core.influence.retraining_check import removal_set

VARIANTS = ("lab", "exact", "isotropic", "positives")


def variant_operator(model, active: torch.Tensor, variant: str):
    """|H| v of ``variant`` (module docstring) with its Jacobi diagonal, from the lab's terms: the positives merged
    and weighted by their active pairs, then the active negatives."""
    if variant == "lab":
        return absolute_curvature_hvp(model, active=active)
    triples, negatives = model.triples, model.frozen_negatives
    k = negatives_count(negatives, triples.shape[0])
    E0, R0 = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    positive, count = torch.unique(active.nonzero().squeeze(1) % triples.shape[0], return_counts=True)
    both = torch.cat([triples[positive], negatives[active]])
    heads, relations, tails = both[:, 0], both[:, 1], both[:, 2]
    per_term = torch.cat([count.to(E0.dtype), E0.new_ones(int(active.sum()))]) / k
    bags = _residual_bags(heads, relations, tails, n_entities=E0.shape[0], like=E0)
    norm = _residual_norms(torch.cat([E0, R0]), bags)
    norm = norm.clamp_min(max(float(norm.median()) * L2_NORM_FLOOR, torch.finfo(norm.dtype).tiny))
    inverse = per_term / norm
    sizes = {"n_entities": E0.shape[0], "n_relations": R0.shape[0]}
    l2 = model.config.l2
    if variant == "isotropic":
        matrix = _kronecker_matrix(both, n_entities=E0.shape[0], size=E0.shape[0] + R0.shape[0], weight=inverse,
                                   dtype=E0.dtype)

        def hvp(vector):
            stacked = torch.cat([vector[0], vector[1]])
            out = torch.sparse.mm(matrix, stacked) + l2 * stacked
            return out[:E0.shape[0]], out[E0.shape[0]:]

        hvp.diagonal = _row_sums(inverse.unsqueeze(1), heads, relations, tails, **sizes, start=l2)
        return hvp
    keep = positive.shape[0] if variant == "positives" else heads.shape[0]
    heads, relations, tails, inverse = heads[:keep], relations[:keep], tails[:keep], inverse[:keep, None]
    x = E0[heads] + R0[relations] - E0[tails]
    u = x / norm[:keep, None]
    hvp = _term_product(heads, relations, tails, **sizes, l2=l2, curvature=(u, inverse))
    hvp.diagonal = _row_sums(inverse * (1 - u * u), heads, relations, tails, **sizes, start=l2)
    return hvp


def variant_rows(analysis: ModelAnalysis, sets: pd.DataFrame, variants: list[str], caps: list[int]) -> pd.DataFrame:
    """Per set: the step's change of B_gr under each variant at each cap (``<variant>_<cap>``), and each variant's
    seconds for the set; the operators built once (``<variant>_build_s`` on every row)."""
    model, groups = analysis.model, analysis.groups
    operators, built = {}, {}
    for variant in variants:
        start = time.perf_counter()
        operators[variant] = variant_operator(model, analysis.active_terms, variant)
        built[variant] = time.perf_counter() - start
    out = []
    for row in sets.to_dict("records"):
        index = groups.index(row["occupation"])
        before = _bias(model, groups, index)
        removed = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
        gradient = removal_gradient(model, removed.to(model.triples.device))
        record = {key: row[key] for key in ("occupation", "name", "men", "women", "kind", "share", "k", "in_audit",
                                            "actual")}
        for variant, operator in operators.items():
            read: dict[int, float] = {}

            def on_iterate(i: int, x, index=index, before=before, read=read) -> None:
                if i in caps:
                    read[i] = _bias(_moved(model, x), groups, index) - before

            start = time.perf_counter()
            step = preconditioned_cg(operator, gradient, diagonal=operator.diagonal, damping=_damping(model),
                                     iterations=max(caps), tolerance=PREDICTION_TOLERANCE, on_iterate=on_iterate)
            seconds = time.perf_counter() - start
            final = _bias(_moved(model, step), groups, index) - before
            record.update({f"{variant}_{cap}": read.get(cap, final) for cap in caps})
            record.update({f"{variant}_s": seconds, f"{variant}_build_s": built[variant]})
        out.append(record)
        print(f"{row['name']} {row['kind']} {row['share']}%: retrained {row['actual']:+.4f}; "
              + "; ".join(f"{v} {record[f'{v}_{max(caps)}']:+.4f} ({record[f'{v}_s']:.1f} s)" for v in operators),
              flush=True)
    return pd.DataFrame(out)


def main() -> None:
    parser = step_parser(__doc__, f"10,{L2_CG_ITERATIONS}")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    if args.summarize:
        graphs = _named(args.summarize)
        variants = [v for v in VARIANTS if all(f"{v}_{caps[-1]}" in g for g in graphs.values())]
        columns = {f"{v} {cap}": f"{v}_{cap}" for v in variants for cap in caps}
        table = point_summary(graphs, _named(args.floors), args.coverage, columns, f"exact_{caps[-1]}")
        print(table.round(3).to_string(index=False))
        write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))
        return
    analysis, sets = step_inputs(args)
    rows = variant_rows(analysis, sets, args.variants.split(","), caps)
    write_text(rows.to_csv(index=False, float_format="%.6g"), str(args.out))


if __name__ == "__main__":
    main()
