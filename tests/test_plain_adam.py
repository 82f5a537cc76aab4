"""PlainAdam (the replay's optimiser) against torch.optim.Adam + CosineAnnealingLR, bit for bit."""

from __future__ import annotations

import torch

from kgbias_core.embeddings.plain_adam import PlainAdam


def test_plain_adam_moves_the_rows_as_torch_adam_with_the_cosine_schedule_bit_for_bit():
    generator = torch.Generator().manual_seed(3)
    start = torch.randn(37, 5, generator=generator)
    theirs = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.Adam([theirs], lr=0.005, weight_decay=20.0 / 1000, foreach=True)
    t_max = 40
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=t_max, eta_min=5e-5)
    mine = start.clone()
    plain = PlainAdam(mine, lr=0.005, lr_min=5e-5, t_max=t_max, weight_decay=20.0 / 1000)
    # past T_max too, where the scheduler's recursion takes its other branch
    for step in range(t_max + 5):
        grad = torch.zeros_like(start) if step % 7 == 3 else torch.randn(start.shape, generator=generator)
        theirs.grad = grad.clone()
        optimizer.step()
        scheduler.step()
        plain.step(grad)
        assert torch.equal(mine, theirs.detach()), (step, float((mine - theirs).abs().max()))
        assert plain.lr == optimizer.param_groups[0]["lr"], step
    assert float((mine - start).abs().max()) > 0.01  # the rows did move


def test_plain_adam_without_weight_decay_matches_too():
    start = torch.linspace(-1, 1, 12).view(3, 4)
    theirs = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.Adam([theirs], lr=0.1, foreach=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=0.0)
    mine = start.clone()
    plain = PlainAdam(mine, lr=0.1, lr_min=0.0, t_max=10, weight_decay=0.0)
    for step in range(10):
        grad = (start * (step + 1)).sin()
        theirs.grad = grad.clone()
        optimizer.step()
        scheduler.step()
        plain.step(grad)
    assert torch.equal(mine, theirs.detach())
