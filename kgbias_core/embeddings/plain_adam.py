"""Dense Adam with the training loop's cosine learning rate, as plain tensor arithmetic on one parameter.

Why not ``torch.optim.Adam`` + ``CosineAnnealingLR`` here: the replay of an addition's new rows
(:func:`kgbias_core.embeddings.training.replay_new_rows`) takes a retrain's every step (FB15k-237's default:
5,360) on a few hundred rows, where each call of torch.optim's machinery (its hooks, profiler records, dynamo
guards) costs more than the arithmetic, and a process's first construction of a torch optimiser imports
``torch._dynamo`` (about 3 s on the 2-core CPU) inside the prediction a person waits for. This class does the
same operations in the same order as ``torch.optim.Adam(foreach=True)`` with (coupled) weight decay and
without amsgrad, so its rows equal the torch optimiser's bit for bit (tests/test_plain_adam.py); the training
loop keeps torch's, where a step's arithmetic over the whole table dominates.

Adam (Kingma & Ba 2015, Algorithm 1, with PyTorch's coupled L2): g <- g + wd theta; m <- m + (1 - beta1)(g - m);
v <- beta2 v + (1 - beta2) g^2; theta <- theta - lr_t / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
The learning rate follows CosineAnnealingLR's recursion, lr_t = (1 + cos(pi t / T)) / (1 + cos(pi (t - 1) / T))
(lr_{t-1} - eta_min) + eta_min, from lr_0 = lr (the recursion, not its closed form, since that is what the
scheduler computes).
"""

from __future__ import annotations

import math

import torch

from kgbias_core.types import FloatTensor


def cosine_learning_rate(previous: float, step: int, *, base: float, eta_min: float, t_max: int) -> float:
    """The learning rate CosineAnnealingLR sets after its ``step``-th step (step >= 1) from the ``previous`` one."""
    if (step - 1 - t_max) % (2 * t_max) == 0:
        return previous + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
    return ((1 + math.cos(math.pi * step / t_max)) / (1 + math.cos(math.pi * (step - 1) / t_max))
            * (previous - eta_min) + eta_min)


class PlainAdam:
    """Adam over one tensor ``param`` (updated in place), lr from ``lr`` to ``lr_min`` over ``t_max`` steps.

    Shapes: param [*]; :meth:`step` takes its gradient, same shape."""

    def __init__(self, param: FloatTensor, *, lr: float, lr_min: float, t_max: int, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.param = param
        self.base, self.lr, self.lr_min, self.t_max = lr, lr, lr_min, max(t_max, 1)
        self.weight_decay, self.beta1, self.beta2, self.eps = weight_decay, betas[0], betas[1], eps
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.steps = 0

    @torch.no_grad()
    def step(self, grad: FloatTensor) -> None:
        """One optimiser step with ``grad``, then the scheduler's step (the loop's order)."""
        self.steps += 1
        if self.weight_decay != 0:
            grad = grad.add(self.param, alpha=self.weight_decay)
        self.exp_avg.lerp_(grad, 1 - self.beta1)
        self.exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        # torch keeps the step count in a float32 tensor and reads it back as a Python float
        t = float(self.steps)
        step_size = (self.lr / (1 - self.beta1 ** t)) * -1
        denom = self.exp_avg_sq.sqrt().div_((1 - self.beta2 ** t) ** 0.5).add_(self.eps)
        self.param.addcdiv_(self.exp_avg, denom, value=step_size)
        self.lr = cosine_learning_rate(self.lr, self.steps, base=self.base, eta_min=self.lr_min, t_max=self.t_max)
