import math

import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
vocab_size = 32000


class Model(nn.Module):
    """student_logits, teacher_logits: [num_tokens, vocab_size].

    Returns 0.5 * (KL(p || m) + KL(q || m)) / num_tokens, m = (p + q) / 2.
    """

    def __init__(self):
        super().__init__()

    def forward(self, student_logits, teacher_logits):
        log_p = F.log_softmax(student_logits, dim=-1)
        log_q = F.log_softmax(teacher_logits, dim=-1)
        log_m = torch.logaddexp(log_p, log_q) - math.log(2.0)
        terms = log_p.exp() * (log_p - log_m) + log_q.exp() * (log_q - log_m)
        return 0.5 * terms.sum() / student_logits.shape[0]


def get_inputs():
    # A student that approximates its teacher, as in distillation: how closely is drawn per call.
    teacher = torch.randn(num_tokens, vocab_size) * 2.0
    student = teacher + torch.randn(num_tokens, vocab_size) * (0.25 + 1.75 * torch.rand(()))
    return [student, teacher]


def get_init_inputs():
    return []
