import torch
import torch.nn as nn
import torch.nn.functional as F

num_labels = 16384
num_classes = 1000


class Model(nn.Module):
    """labels: [num_labels] int64 in [0, num_classes). Returns one_hot(labels): int64."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes

    def forward(self, labels):
        return F.one_hot(labels, self.num_classes)


def get_inputs():
    return [torch.randint(0, num_classes, (num_labels,))]


def get_init_inputs():
    return [num_classes]
