"""Tensor type aliases: the dtype and shape live in the docstrings that use them."""

from typing import TypeAlias

import torch

#: int64 tensor (ids, indices, triples of shape [n, 3]).
LongTensor: TypeAlias = torch.Tensor
#: float32 tensor (embeddings, scores, biases).
FloatTensor: TypeAlias = torch.Tensor
#: bool tensor (masks).
BoolTensor: TypeAlias = torch.Tensor
