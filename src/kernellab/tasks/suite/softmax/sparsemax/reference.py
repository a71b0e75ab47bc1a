import torch
import torch.nn as nn

rows = 8192
cols = 1024


class Model(nn.Module):
    """x: [rows, cols]. Returns max(x - tau, 0) with tau chosen so that each row sums to one."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        z, _ = torch.sort(x, dim=-1, descending=True)
        work = torch.promote_types(x.dtype, torch.float32)
        k = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=work)
        cumsum = z.to(work).cumsum(dim=-1)
        support = 1 + k * z > cumsum
        k_z = support.sum(dim=-1, keepdim=True)
        tau = (cumsum.gather(-1, k_z - 1) - 1) / k_z.to(work)
        return torch.clamp(x - tau, min=0).to(x.dtype)


def get_inputs():
    return [torch.randn(rows, cols) * 2.0]


def get_init_inputs():
    return []
