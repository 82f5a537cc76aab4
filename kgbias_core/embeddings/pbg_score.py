"""PyTorch-BigGraph's score as a PyKEEN interaction, for the PBG models no PyKEEN model scores exactly.

PBG (Lerer et al. 2019, "PyTorch-BigGraph", §3.1; torchbiggraph/model.py ``adjust_embs`` and ``forward``)
scores an edge (h, r, t) as

    s = c(P(x_h), P(f_r(x_t)))     static relations: relation r's right-hand-side operator f_r on the tail
    s = c(P(g_r(x_h)), P(x_t))     dynamic relations: the left-hand-side operator g_r on the head, the
                                   score PBG ranks tails with (its "reverse" pass samples tail negatives)

where x is the entity's vector (rescaled to ``max_norm`` and with the global embedding added, both
done on import by :mod:`kgbias_core.embeddings.importers`), P is the comparator's preparation, applied
after the operator (cos: x / ||x||_2; the others: x), and c the comparator: dot and cos <a, b>,
l2 -||a - b||_2, squared_l2 -||a - b||_2^2. The operators (torchbiggraph/operators.py) on x [..., d]:
none x; diagonal r ⊙ x; translation x + r; linear A x; affine A x + b; complex_diagonal the complex
product of (re, im) = (first, second) halves of x and of r.

Each relation's operator parameters are one flat row of the relation representation [R, k]
(:func:`operator_width`): diagonal / translation / complex_diagonal (real half, then imaginary) k = d;
linear k = d², A row-major; affine k = d² + d, A then b; none k = 1 (an unused zero).
"""

from __future__ import annotations

import torch
from pykeen.nn.modules import Interaction

from kgbias_core.types import FloatTensor

#: PBG's operator names (config key ``operator``) and comparator names (``comparator``).
PBG_OPERATORS = ("none", "diagonal", "translation", "linear", "affine", "complex_diagonal")
PBG_COMPARATORS = ("dot", "cos", "l2", "squared_l2")
#: Which entity the operator moves: "tail" (static relations) or "head" (dynamic relations).
PBG_SIDES = ("tail", "head")


def operator_width(operator: str, dim: int) -> int:
    """k, the length of one relation's flat operator parameters for entity dimension ``dim``."""
    return {"none": 1, "linear": dim * dim, "affine": dim * dim + dim}.get(operator, dim)


def apply_operator(x: FloatTensor, params: FloatTensor, *, operator: str) -> FloatTensor:
    """f_r(x): x [*bx, d], params [*br, k] (broadcastable batch shapes) -> [*b, d]."""
    dim = x.shape[-1]
    if operator == "none":
        return x
    if operator == "diagonal":
        return params * x
    if operator == "translation":
        return x + params
    if operator == "complex_diagonal":
        half = dim // 2
        re, im, p_re, p_im = x[..., :half], x[..., half:], params[..., :half], params[..., half:]
        return torch.cat([re * p_re - im * p_im, re * p_im + im * p_re], dim=-1)
    matrix = params[..., : dim * dim].unflatten(-1, (dim, dim))  # [*br, d, d], row-major A
    # einsum folds the size-1 batch dims into its matrix product: no [*b, d, d] copy of A per entity.
    moved = torch.einsum("...ij,...j->...i", matrix, x)
    return moved + params[..., dim * dim:] if operator == "affine" else moved


def compare(a: FloatTensor, b: FloatTensor, *, comparator: str) -> FloatTensor:
    """c(P(a), P(b)): a, b [*b, d] -> [*b]; higher = more plausible, as in PBG."""
    if comparator == "cos":
        a, b = a / a.norm(dim=-1, keepdim=True), b / b.norm(dim=-1, keepdim=True)
    if comparator in ("dot", "cos"):
        return (a * b).sum(dim=-1)
    squared = (a - b).pow(2).sum(dim=-1)
    return -squared.clamp_min(1e-30).sqrt() if comparator == "l2" else -squared


def pbg_score(h: FloatTensor, r: FloatTensor, t: FloatTensor, *, operator: str, comparator: str,
              side: str) -> FloatTensor:
    """PBG's score of (h, r, t) (module docstring): h, t [*b, d], r [*b, k] -> [*b]."""
    if side == "tail":
        return compare(h, apply_operator(t, r, operator=operator), comparator=comparator)
    return compare(apply_operator(h, r, operator=operator), t, comparator=comparator)


class PBGInteraction(Interaction):
    """:func:`pbg_score` as PyKEEN's interaction, so Fisher, the relation audit, prediction fairness and
    link prediction score an imported PBG model through the same ERModel path as DistMult."""

    def __init__(self, *, operator: str, comparator: str, side: str) -> None:
        super().__init__()
        self.operator, self.comparator, self.side = operator, comparator, side

    def forward(self, h: FloatTensor, r: FloatTensor, t: FloatTensor) -> FloatTensor:
        return pbg_score(h, r, t, operator=self.operator, comparator=self.comparator, side=self.side)
