import torch
import torch.nn as nn
import torch.nn.functional as F

num_anchors = 122760
num_classes = 80
alpha = 0.25
gamma = 2.0


class Model(nn.Module):
    """logits, targets: [num_anchors, num_classes], targets in {0, 1}. Returns a 0-d tensor."""

    def __init__(self, alpha, gamma):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, logits, targets):
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        alpha_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (alpha_t * ce * (1 - p_t) ** self.gamma).mean()


def get_inputs():
    targets = (torch.rand(num_anchors, num_classes) < 0.05).float()
    # A detector's logits: background below zero, positives raised by a margin; the background level and
    # the margin are drawn per call, so the loss depends on where the positives are and differs per call.
    background = -1.0 - 3.0 * torch.rand(())
    margin = 1.0 + 6.0 * torch.rand(())
    logits = torch.randn(num_anchors, num_classes) * 2.0 + background + targets * margin
    return [logits, targets]


def get_init_inputs():
    return [alpha, gamma]
