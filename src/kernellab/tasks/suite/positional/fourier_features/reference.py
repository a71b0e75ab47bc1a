import torch
import torch.nn as nn

num_points = 1048576
num_freqs = 10


class Model(nn.Module):
    """points: [num_points, 3]. Returns [num_points, 3 + 6 * num_freqs] =
    [points | sin(points * 2^k) for all k, coordinate-minor | cos(points * 2^k) likewise].
    Computed in at least float32, returned in the dtype of points.
    """

    def __init__(self, num_freqs):
        super().__init__()
        self.num_freqs = num_freqs

    def forward(self, points):
        work = torch.promote_types(points.dtype, torch.float32)
        p = points.to(work)
        freqs = 2.0 ** torch.arange(self.num_freqs, dtype=work, device=points.device)
        scaled = (p[:, None, :] * freqs[None, :, None]).flatten(1)  # [num_points, num_freqs * 3]
        return torch.cat([p, torch.sin(scaled), torch.cos(scaled)], dim=-1).to(points.dtype)


def get_inputs():
    return [torch.rand(num_points, 3) * 2.0 - 1.0]


def get_init_inputs():
    return [num_freqs]
