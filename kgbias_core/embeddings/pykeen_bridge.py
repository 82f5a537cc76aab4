"""Rebuild a PyKEEN model from a stored one (for scoring through PyKEEN: Fisher, link prediction)."""

from __future__ import annotations

import torch
from pykeen.models import ERModel, model_resolver
from pykeen.triples import CoreTriplesFactory

from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import transe_module


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
        factory = CoreTriplesFactory.create(
            mapped_triples=model.triples.cpu(),
            num_entities=model.n_entities,
            num_relations=model.n_relations,
        )
        module = model_resolver.make(
            model.config.model, {"embedding_dim": model.config.dim}, triples_factory=factory
        ).to(device)
        module.load_state_dict({k: v.to(device) for k, v in model.weights.items()})
    return module.eval()
