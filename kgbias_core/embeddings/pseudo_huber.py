"""TransE with the pseudo-Huber distance as a PyKEEN interaction, for the measures that score through PyKEEN.

psi(h, r, t) = sum_i (sqrt(v_i^2 + delta^2) - delta), v = h + r - t (:func:`~kgbias_core.embeddings.objective.
residual_distance`, delta = :data:`~kgbias_core.embeddings.config.PSEUDO_HUBER_DELTA`). PyKEEN's TransE scores
only L_p norms, so a pseudo_huber model is an ERModel with this interaction and one entity and one relation table
of the model's width, as :func:`~kgbias_core.embeddings.training.transe_module` builds it: Fisher, the relation
audit, prediction fairness and link prediction then score it through the same path as PyKEEN's own TransE.
"""

from __future__ import annotations

from pykeen.nn.modules import Interaction

from kgbias_core.embeddings.objective import residual_distance
from kgbias_core.types import FloatTensor


class PseudoHuberTransEInteraction(Interaction):
    """-psi(h, r, t) of the pseudo_huber distance; h, r, t [*b, d] (broadcastable) -> [*b]."""

    def forward(self, h: FloatTensor, r: FloatTensor, t: FloatTensor) -> FloatTensor:
        return -residual_distance(h + r - t, distance="pseudo_huber")
