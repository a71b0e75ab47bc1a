import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
vocab_size = 32000
temperature = 2.0


class Model(nn.Module):
    """student_logits, teacher_logits: [num_tokens, vocab_size]. Returns a 0-d tensor."""

    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, student_logits, teacher_logits):
        t = self.temperature
        log_p_student = F.log_softmax(student_logits / t, dim=-1)
        log_p_teacher = F.log_softmax(teacher_logits / t, dim=-1)
        kl = F.kl_div(log_p_student, log_p_teacher, reduction="batchmean", log_target=True)
        return kl * (t * t)


def get_inputs():
    # A student that approximates its teacher, as in distillation: how closely is drawn per call.
    teacher = torch.randn(num_tokens, vocab_size) * 2.0
    student = teacher + torch.randn(num_tokens, vocab_size) * (0.25 + 1.75 * torch.rand(()))
    return [student, teacher]


def get_init_inputs():
    return [temperature]
