"""Mixed-precision gradient unscaling with an overflow check (torch.amp.GradScaler.unscale_):
every gradient is multiplied in place by inv_scale, and found_inf becomes 1.0 if any gradient element
is inf or NaN (else 0.0)."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 4096
EMB_ROWS = 32000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, weight_grad, embedding_grad, inv_scale):
        found = torch.zeros(1, dtype=torch.float32, device=weight_grad.device)
        for grad in (weight_grad, embedding_grad):
            found = torch.maximum(found, (~torch.isfinite(grad)).any().to(torch.float32).reshape(1))
            grad.mul_(inv_scale)
        return found


def get_inputs():
    weight_grad = torch.randn(ROWS, COLS) * 1024.0
    embedding_grad = torch.randn(EMB_ROWS, COLS) * 1024.0
    # an overflow in about half of the calls, at a random position
    flat = embedding_grad.view(-1)
    position = torch.randint(0, flat.numel(), (1,))
    overflow = torch.rand(1) < 0.5
    flat.index_put_((position,), torch.where(overflow, torch.full((1,), float("inf")), flat[position]))
    inv_scale = torch.full((1,), 1.0 / 1024.0)
    return [weight_grad, embedding_grad, inv_scale]


def get_init_inputs():
    return []
