"""Optimizer steps (forwards that update their arguments in place): the reader reads each in-place
update as the value the argument takes, and the ``inplace_update`` template's kernel passes the
verifier's correctness stages (the updated arguments compared, the others unchanged) under the Triton
interpreter on each task's small and edge configs, through the same ``EvalSession`` the search agent
screens with."""

from __future__ import annotations

import pytest

from kernellab.kernels import match_templates
from kernellab.kernels.reference_model import read_model
from kernellab.tasks.load import load_task

# Which suite tasks the template implements (``test_kernel_templates.EXPECTED`` includes this).
SERVED = {
    "inplace_update": {"optimizer/sgd", "optimizer/sgd_momentum_nesterov", "optimizer/adam", "optimizer/adamw",
                       "optimizer/adagrad", "optimizer/rmsprop", "optimizer/ema_update", "optimizer/lion",
                       "optimizer/adamw_master_weights", "optimizer/multi_tensor_adamw"},
}


def _model(body: str, init: str = "self.lr, self.beta = lr, beta"):
    return read_model(f'''
import math
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, lr, beta):
        super().__init__()
        {init}
    def forward(self, p, g, m):
{body}
''')


def test_in_place_chains_read_as_the_values_the_arguments_take():
    model = _model("        m.mul_(self.beta).add_(g, alpha=1 - self.beta)\n"
                   "        d = m.sqrt().add_(1e-8)\n"  # in place on a temporary: a plain expression
                   "        p.addcdiv_(g, d, value=-self.lr)\n")
    assert model.outputs is None and list(model.mutations) == ["m", "p"]
    m, p = model.mutations["m"], model.mutations["p"]
    assert m.op == "add" and m.args[0].op == "mul" and m.args[0].args[0].name == "m"
    # p's update reads m after its update (the tree of m's new value), not the argument as passed
    assert m in set(p.walk())
    assert {"lr", "beta"} <= model.scalars  # attributes assigned as a tuple


def test_updates_beside_a_return_or_of_locals_are_not_read():
    assert not _model("        p.add_(g)\n        return p\n").mutations
    local = _model("        q = g * 2\n        q.add_(p)\n        p.copy_(q)\n")
    assert local.outputs is None and not local.mutations


def test_a_helper_methods_updates_are_the_updates_of_the_arguments_passed():
    model = read_model('''
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr
    def _sgd(self, param, grad):
        param.add_(grad, alpha=-self.lr)
    def forward(self, w, w_grad, b, b_grad):
        self._sgd(w, w_grad)
        self._sgd(b, b_grad)
        b.mul_(2.0)
''')
    assert list(model.mutations) == ["w", "b"]
    b = model.mutations["b"]  # the method's update, then forward's own
    assert b.op == "mul" and b.args[0].op == "add" and b.args[0].args[0].name == "b"
    (match,) = match_templates(load_task("optimizer/multi_tensor_adamw"))
    assert len(match.spec["groups"]) == 3  # one launch per shape


def test_numbers_of_attributes_are_computed_on_the_host():
    (match,) = match_templates(load_task("optimizer/adam"))
    source = match.render()
    assert "math.sqrt((1.0 - (float(self.beta2) ** float(self.step))))" in source
    assert "tl.exp" not in source  # no power of numbers inside the kernel


@pytest.mark.parametrize("task_id", sorted(SERVED["inplace_update"]))
def test_served_tasks_match_only_this_template(task_id):
    assert [m.template.name for m in match_templates(load_task(task_id))] == ["inplace_update"]


def test_a_larger_block_passes_too(tmp_path):
    from test_kernel_templates import passes, render
    passes("optimizer/adamw", render("optimizer/adamw", "inplace_update", {"BLOCK": 4096, "NUM_WARPS": 8}), tmp_path)
