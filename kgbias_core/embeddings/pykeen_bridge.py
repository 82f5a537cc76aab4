"""Rebuild a PyKEEN model from a stored one (for scoring through PyKEEN: Fisher, link prediction)."""

from __future__ import annotations

from typing import Any

import torch
from pykeen.models import ERModel, model_resolver
from pykeen.triples import CoreTriplesFactory

from kgbias_core.embeddings.importers import PYKEEN_ENTITY_KEY, PYKEEN_RELATION_KEY
from kgbias_core.embeddings.pbg_score import PBGInteraction
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import transe_module
from kgbias_core.types import FloatTensor, LongTensor


def _module(kind: str, *, dim: int, relation_width: int, triples: LongTensor, n_entities: int, n_relations: int,
            pbg: dict[str, Any] | None) -> ERModel:
    """An untrained PyKEEN module of ``kind`` (not TransE): by name, or PBG's interaction for ``"pbg"``."""
    factory = CoreTriplesFactory.create(mapped_triples=triples.cpu(), num_entities=n_entities,
                                        num_relations=n_relations)
    if kind == "pbg":
        interaction = PBGInteraction(operator=pbg["operator"], comparator=pbg["comparator"], side=pbg["side"])
        return ERModel(triples_factory=factory, interaction=interaction,
                       entity_representations_kwargs={"shape": dim},
                       relation_representations_kwargs={"shape": relation_width})
    return model_resolver.make(kind, {"embedding_dim": dim}, triples_factory=factory)


def pykeen_model(model: StoredModel, *, device: torch.device | str | None = None) -> ERModel:
    """A PyKEEN module with the stored weights, in eval mode, on ``device`` (default: the weights')."""
    first = next(iter(model.weights.values()))
    device = torch.device(device) if device is not None else first.device
    if model.config.model == "transe":
        module = transe_module(
            entities=model.entity_embeddings, relations=model.relation_embeddings, device=device,
            distance=model.config.distance,
        )
    else:
        relation_width = model.weights[PYKEEN_RELATION_KEY].shape[-1] if PYKEEN_RELATION_KEY in model.weights else 0
        module = _module(model.config.model, dim=model.config.dim, relation_width=relation_width,
                         triples=model.triples, n_entities=model.n_entities, n_relations=model.n_relations,
                         pbg=model.info.get("pbg")).to(device)
        module.load_state_dict({k: v.to(device) for k, v in model.weights.items()})
    return module.eval()


def imported_weights(kind: str, *, entities: FloatTensor, relations: FloatTensor, dim: int, triples: LongTensor,
                     pbg: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """The full PyKEEN state dict of a ``kind`` model whose vectors are ``entities`` [E, w_e] and
    ``relations`` [R, w_r] in PyKEEN's own layout (ComplEx: (re, im) interleaved), regularisers' buffers
    included, so that :func:`pykeen_model` loads it as it loads a model PyKEEN trained."""
    module = _module(kind, dim=dim, relation_width=relations.shape[1], triples=triples,
                     n_entities=entities.shape[0], n_relations=relations.shape[0], pbg=pbg)
    state = module.state_dict()
    for key, value in ((PYKEEN_ENTITY_KEY, entities), (PYKEEN_RELATION_KEY, relations)):
        state[key] = value.to(state[key].dtype)
    return {k: v.detach().cpu().clone() for k, v in state.items()}
