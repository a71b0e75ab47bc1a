"""GEMM with a transposed first operand, as in a weight gradient: C = A^T @ B.

A: (K, M) activations, B: (K, N) output gradients; K is the token dimension being reduced.
"""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.t() @ B


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
