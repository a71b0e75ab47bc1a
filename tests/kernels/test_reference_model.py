"""Reading reference models into expression trees, on the suite's own references."""

from __future__ import annotations

import ast

from kernellab.kernels.reference_model import Node, const, read_model
from kernellab.tasks.load import load_task

X = Node("input", name="x")


def model_of(task_id: str):
    return read_model(load_task(task_id).source)


def test_rmsnorm_reads_as_the_formula_it_computes():
    model = model_of("normalization/rmsnorm")
    (out,) = model.outputs
    mean = Node("mean", (Node("pow", (X, const(2))),), (("dim", const(-1)), ("keepdim", const(True))))
    root = Node("rsqrt", (Node("add", (mean, Node("scalar", name="eps"))),))
    assert out == Node("mul", (Node("mul", (X, root)), Node("param", name="weight")))
    assert model.forward_args == ["x"] and model.init_args == ["hidden", "eps"]
    assert model.params["weight"].ndim == 1 and "eps" in model.scalars
    assert model.input_ranks == {"x": 2}


def test_keyword_and_positional_arguments_read_the_same():
    by_keyword = read_model("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.softmax(x, dim=-1)
""")
    by_position = read_model("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        y = x.float()
        return y.softmax(-1)
""")
    assert by_keyword.outputs == by_position.outputs == (Node("softmax", (X,), (("dim", const(-1)),)),)


def test_linear_submodules_and_module_constants_are_read():
    model = model_of("matmul_epilogue/lm_head_softcap")
    (out,) = model.outputs
    assert out.op == "mul" and out.args[0] == const(30.0)
    linear = next(n for n in out.walk() if n.op == "linear")
    assert linear.kwarg("weight") == Node("param", name="lm_head.weight") and linear.const("bias") is None
    assert model.submodules["lm_head"].has_bias is False


def test_init_is_copied_verbatim_and_dedented():
    model = model_of("elementwise/scale_bias_silu")
    assert model.init_source.startswith("def __init__(self, dim):")
    ast.parse(model.init_source)
    assert "nn.Parameter(torch.ones(dim))" in model.init_source


def test_unreadable_forwards_say_why():
    assert model_of("softmax/causal_softmax").why_not == "attribute .shape"  # its mask is built from shapes
    assert model_of("reductions/topk_rows").why_not == "torch.topk"
    assert read_model("x = 1") is None


IMPORTED_SOFTMAX = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


def forward_fn(x):
    return F.softmax(x, dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, fn=forward_fn):
        return fn(x)


def _suite_get_inputs(batch_size=16, dim=64):
    x = torch.randn(batch_size, dim)
    return [x]


batch_size = 16


def get_inputs():
    return _suite_get_inputs(batch_size=batch_size)


def get_init_inputs():
    return []
'''


def test_a_forward_default_naming_a_module_function_is_that_function_and_ranks_follow_get_inputs():
    """robust-kbench's ``forward(self, x, fn=forward_fn)``, and the ``get_inputs`` its importer writes
    (a call of the suite's own, renamed): ``fn`` is no input, ``x`` has rank 2, so ``dim=1`` is the last."""
    model = read_model(IMPORTED_SOFTMAX)
    assert model.forward_args == ["x"] and model.why_not is None
    assert model.input_ranks == {"x": 2}
    assert model.outputs[0].op == "softmax"


def test_templates_try_tasks_of_categories_other_than_the_suites(tmp_path):
    """A category the suite does not have (an imported "Activation") is matched on the reference alone;
    a suite category that a template is not written for still keeps it out."""
    from kernellab.kernels import match_templates

    def task_in(category: str):
        folder = tmp_path / category
        folder.mkdir()
        (folder / "reference.py").write_text(IMPORTED_SOFTMAX)
        (folder / "task.toml").write_text(f'schema = 1\ncategory = "{category}"\ndtypes = ["float32"]\n'
                                          'configs = [{ batch_size = 16 }]\n')
        return load_task(folder)

    assert [m.template.name for m in match_templates(task_in("Activation"))] == ["softmax"]
    assert "softmax" not in [m.template.name for m in match_templates(task_in("optimizer"))]
