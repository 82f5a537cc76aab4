"""Why Add-debiasing (Du §4.3, Table 3) does or does not lower B_gr (issue 9's second open question).

    python experiments/add_debiasing/add_debiasing.py --model cached_models/fb15k237-transe --occupations /m/02hrh1q
    python experiments/add_debiasing/add_debiasing.py --dataset synthetic --occupations nurse engineer \
        --variants default epochs=320 l2=2 l2=80

For each base (a stored model, or one trained here per variant: ``epochs=N``, ``l2=X``, ``dim=D``
on top of the data set's default) and occupation: Add c = 0.5 dummies of the rarer gender, retrain
from the base's seed, and print B_gr before, after over all persons and after over the original
persons, with the mean distance psi(s, r_p, o) of the dummies, the original women and the men after
the retrain, and the dummies' mean norm against the women's. If L2 keeps the dummies (degree 2)
near the origin instead of at o - r_p, their psi stays large and B_gr over all persons rises.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd
import torch

from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.findings import DUMMY_PREFIX
from kgbias_core.measures.group_bias import group_bias, pair_residuals
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tasks import add_runs
from kgbias_core.whatif.edits import add_edit, retrain


def add_effect(base: StoredModel, occupation: str, *, saved: StoredModel | None = None) -> dict[str, object]:
    """B_gr before/after Add and where the dummies ended up (see the module docstring); ``saved`` is
    an Add what-if of this base and occupation already retrained (e.g. by ``kgbias findings --retrain``)."""
    groups = occupation_groups(base)
    index = groups.index(occupation)
    before = float(group_bias(entity_embeddings=base.entity_embeddings,
                              relation_embeddings=base.relation_embeddings, groups=groups)[index])
    edit = add_edit(base, occupation)
    what_if = saved if saved is not None else retrain(base, edit, name=f"{base.name}-add")
    after_groups = occupation_groups(what_if)
    dummy = torch.tensor([label.startswith(DUMMY_PREFIX) for label in what_if.entity_labels])
    e, r = what_if.entity_embeddings, what_if.relation_embeddings
    psi = pair_residuals(entity_embeddings=e, relation_embeddings=r, groups=after_groups).pow(2).sum(-1)
    mine = after_groups.pair_occupation == index
    is_dummy = dummy[after_groups.pair_person]
    rarer_female = bool(after_groups.pair_female[mine & is_dummy].all())
    rarer = mine & (after_groups.pair_female == rarer_female)
    bias = {name: float(group_bias(entity_embeddings=e, relation_embeddings=r, groups=g)[index])
            for name, g in (("after_all", after_groups), ("after_original", after_groups.without(dummy)))}
    return {
        "base": base.name, "occupation": groups.names[index], "n_male": int(groups.n_male[index]),
        "n_female": int(groups.n_female[index]), "dummies": len(edit.added_entities), "epochs": base.config.epochs,
        "l2": base.config.l2, "B_gr_before": before, **bias,
        "psi_dummies": float(psi[mine & is_dummy].mean()),
        "psi_rarer_original": float(psi[rarer & ~is_dummy].mean()),
        "psi_other_gender": float(psi[mine & (after_groups.pair_female != rarer_female)].mean()),
        "norm_dummies": float(e[after_groups.pair_person[mine & is_dummy]].norm(dim=1).mean()),
        "norm_rarer_original": float(e[after_groups.pair_person[rarer & ~is_dummy]].norm(dim=1).mean()),
        "seconds": what_if.info["train_seconds"],
    }


def _variant(spec: str, dataset: str) -> tuple[str, object]:
    config = default_train_config(dataset)
    if spec == "default":
        return spec, config
    field, value = spec.split("=")
    kind = {"epochs": int, "dim": int, "l2": float}[field]
    return spec, replace(config, **{field: kind(value)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="a stored TransE base (else --dataset, trained per variant)")
    parser.add_argument("--dataset", default="synthetic")
    parser.add_argument("--data-dir")
    parser.add_argument("--occupations", nargs="+", required=True)
    parser.add_argument("--variants", nargs="+", default=["default"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    saved: dict[str, StoredModel] = {}
    if args.model:
        bases = [load_model(args.model)]
        for path in add_runs(args.model):  # Add runs of this base already in the store: not retrained again
            run = load_model(path)
            saved[run.edit["occupation"]] = run
    else:
        graph = load_dataset(args.dataset, data_dir=args.data_dir)
        bases = []
        for spec in args.variants:
            name, config = _variant(spec, graph.name)
            bases.append(train_model(graph, config, name=f"{graph.name} {name}", device=torch.device("cpu")))
            print(f"trained {name} ({bases[-1].info['train_seconds']:.0f}s)", flush=True)
    rows = []
    for base in bases:
        for occupation in args.occupations:
            groups = occupation_groups(base)
            label = groups.labels[groups.index(occupation)]
            rows.append(add_effect(base, occupation, saved=saved.get(label)))
            print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    if args.out:
        frame.to_csv(args.out, index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(frame.drop(columns=["n_male", "n_female"]).to_string(index=False, float_format=lambda x: f"{x:+.3f}"))


if __name__ == "__main__":
    main()
