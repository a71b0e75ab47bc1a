"""Bare KernelBench files: the derived small config, constants in every form KernelBench writes them,
devices named in get_inputs, optional imports, and Hugging Face models from bundled configs.

The files are written here in KernelBench's one-file format (none is copied from it)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.tasks.kernelbench import SMALL_ELEMENTS
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import build_model, load_problem
from kernellab.tasks.model import TaskError, Visibility
from kernellab.tasks.module import build_module, module_constants


def kb_file(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def small_of(path: Path):
    task = load_task(path)
    (small,) = task.configs_of(Visibility.SMALL)
    return task, small, load_problem(task, small)


def run_forward(problem) -> list:
    model = build_model(problem.module.Model, problem.init_inputs(), seed=0)
    with torch.no_grad():
        out = model(*problem.inputs(seed=0, device="cpu", dtype="float32"))
    return out if isinstance(out, (tuple, list)) else [out]


LOSS = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, predictions, targets):
            return torch.mean(torch.clamp(1 - predictions * targets, min=0))

    batch_size = 32768
    input_shape = (32768,)
    dim = 1

    def get_inputs():
        return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

    def get_init_inputs():
        return []
"""


def test_small_config_is_derived_within_the_limit_and_runs(tmp_path):
    # predictions (batch, n) * targets (batch,) broadcast only while batch_size == n: halving one of
    # them alone breaks the forward, so the two equal sizes are halved together.
    task, small, problem = small_of(kb_file(tmp_path, "100_Hinge.py", LOSS))
    values = small.as_dict()
    assert values["batch_size"] == values["input_shape"][0] < 32768
    assert "dim" not in values  # 1 is no size: never touched
    assert problem.footprint_numel() <= SMALL_ELEMENTS
    (loss,) = run_forward(problem)
    assert loss.shape == () and torch.isfinite(loss)
    assert task.configs_of(Visibility.SEEN)[0].as_dict()["batch_size"] == 32768  # its own config kept


def test_a_size_that_cannot_shrink_further_is_kept(tmp_path):
    # A dilated 9-wide kernel spans 33 columns: the width stops where the convolution still has an
    # output, the other sizes keep shrinking.
    path = kb_file(tmp_path, "80_conv_dilated.py", """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size, dilation):
                super().__init__()
                self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, dilation=dilation)

            def forward(self, x):
                return self.conv(x)

        batch_size = 16
        in_channels = 32
        out_channels = 64
        kernel_size = (3, 9)
        dilation = (1, 4)
        height = width = 512

        def get_inputs():
            return [torch.rand(batch_size, in_channels, height, width)]

        def get_init_inputs():
            return [in_channels, out_channels, kernel_size, dilation]
    """)
    _, small, problem = small_of(path)
    values = small.as_dict()
    assert 33 <= values["width"] < 512 and values["height"] < 512  # chained `height = width = 512`, set apart
    assert problem.footprint_numel() <= SMALL_ELEMENTS
    (out,) = run_forward(problem)
    assert out.shape[-1] == values["width"] - 32


def test_a_size_the_model_reads_as_a_global_is_never_scaled(tmp_path):
    """An RNN cell whose ``__init__`` reads ``batch_size`` from the module: a candidate written after
    the file reads the file's value whatever the config, so the derived config must keep it (halving
    it fed 64-row inputs to a 256-row hidden state: the reference itself failed as a candidate)."""
    path = kb_file(tmp_path, "33_rnn_cell.py", """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, input_size, hidden_size):
                super().__init__()
                self.hidden = torch.randn((batch_size, hidden_size))
                self.i2h = nn.Linear(input_size + hidden_size, hidden_size)

            def forward(self, x, initial_hidden):
                self.hidden.copy_(initial_hidden)
                return torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))

        batch_size = 64
        input_size = 4096
        hidden_size = 4096

        def get_inputs():
            return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]

        def get_init_inputs():
            return [input_size, hidden_size]
    """)
    _, small, problem = small_of(path)
    values = small.as_dict()
    assert "batch_size" not in values and values["input_size"] < 4096 and values["hidden_size"] < 4096
    assert problem.footprint_numel() <= SMALL_ELEMENTS
    as_written = build_module(path.read_text(), name="candidate", where=path)  # the file's own constants
    model = build_model(as_written.Model, problem.init_inputs(), seed=0)
    with torch.no_grad():
        out = model(*problem.inputs(seed=0, device="cpu", dtype="float32"))
    assert out.shape == (64, values["hidden_size"])


def test_tuple_unpacked_sizes_are_constants_a_config_sets(tmp_path):
    source = textwrap.dedent("""
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, channels, groups):
                super().__init__()
                self.conv = nn.Conv3d(3, channels, 3)
                self.norm = nn.GroupNorm(groups, channels)

            def forward(self, x):
                return self.norm(self.conv(x)).mean(dim=[1, 2, 3, 4])

        batch_size = 128
        channels = 24
        groups = 8
        D, H, W = 24, 32, 32

        def get_inputs():
            return [torch.rand(batch_size, 3, D, H, W)]

        def get_init_inputs():
            return [channels, groups]
    """)
    assert {"D": 24, "H": 32, "W": 32}.items() <= module_constants(source).items()
    module = build_module(source, {"H": 16})
    assert (module.D, module.H, module.W) == (24, 16, 32)
    _, small, problem = small_of(kb_file(tmp_path, "23_conv3d_groupnorm.py", source))
    assert small.as_dict().get("channels", 24) % 8 == 0  # GroupNorm(8) still divides the channels
    assert {"D", "H", "W"} & set(small.as_dict())  # the unpacked sizes were scaled
    assert run_forward(problem)[0].shape == (small.as_dict().get("batch_size", 128),)


def test_a_problem_within_the_limit_gets_no_small_config(tmp_path):
    task = load_task(kb_file(tmp_path, "1_tiny.py", LOSS.replace("32768", "16")))
    assert [c.visibility for c in task.configs] == [Visibility.SEEN]


def test_outputs_count_in_the_footprint(tmp_path):
    path = kb_file(tmp_path, "outer.py", """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, a, b):
                return torch.outer(a, b)

        def get_inputs():
            return [torch.randn(1024), torch.randn(1024)]

        def get_init_inputs():
            return []
    """)
    task = load_task(path)
    problem = load_problem(task, task.configs[0])
    assert problem.input_numel() == 2048
    assert problem.footprint_numel() == 2048 + 1024 * 1024


def test_cuda_devices_in_get_inputs_follow_the_evaluation(tmp_path):
    path = kb_file(tmp_path, "cuda_inputs.py", """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y, z):
                return x + y * z

        N = 64

        def get_inputs():
            x = torch.randn(N, N).cuda()
            y = torch.randn(N, N, device="cuda")
            z = torch.ones(N, N).to("cuda:0")
            return [x, y, z]

        def get_init_inputs():
            return []
    """)
    task = load_task(path)
    problem = load_problem(task, task.configs[0])
    inputs = problem.inputs(seed=0, device="cpu", dtype="float32")
    assert all(t.device.type == "cpu" for t in inputs)
    assert problem.footprint_numel() == 4 * 64 * 64  # traced on the meta device, not sent to a GPU


def test_a_missing_optional_import_is_one_line_naming_it(tmp_path):
    path = kb_file(tmp_path, "needs_pkg.py", """
        import torch
        import torch.nn as nn
        from kernellab_absent_package import rearrange

        class Model(nn.Module):
            def forward(self, x):
                return x

        N = 1 << 20

        def get_inputs():
            return [torch.randn(N)]

        def get_init_inputs():
            return []
    """)
    with pytest.raises(TaskError) as err:
        load_task(path)
    text = str(err.value)
    assert "imports 'kernellab_absent_package'" in text and "pip install kernellab_absent_package" in text
    assert "\n" not in text and "needs_pkg.py" in text


LEVEL4 = """
    import torch
    from transformers import AutoModelForCausalLM, AutoConfig

    class Model(torch.nn.Module):
        def __init__(self, model_name, config):
            super().__init__()
            self.model_name = model_name
            self.config = config
            self.model = AutoModelForCausalLM.from_pretrained(self.model_name, config=self.config)

        def forward(self, x):
            return self.model(x).logits

    model_name = "{name}"
    config = AutoConfig.from_pretrained(model_name)
    config.n_layer, config.n_embd, config.n_head, config.vocab_size = 1, 32, 2, 97
    vocab_size = config.vocab_size
    sequence_length = 8
    batch_size = 2

    def get_inputs():
        return [torch.randint(0, vocab_size, (batch_size, sequence_length))]

    def get_init_inputs():
        return [model_name, config]
"""


def test_a_hugging_face_model_is_built_from_the_bundled_config(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a download would fail, not pass silently
    task = load_task(kb_file(tmp_path, "19_gpt2_small.py", LEVEL4.format(name="gpt2")))
    problem = load_problem(task, task.configs[0])
    assert problem.module.config.model_type == "gpt2" and problem.module.config.n_positions == 1024
    (logits,) = run_forward(problem)
    assert logits.shape == (2, 8, 97)


def test_an_unknown_hugging_face_model_is_one_line(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(TaskError) as err:
        load_task(kb_file(tmp_path, "13_unknown.py", LEVEL4.format(name="example-org/no-such-model")))
    text = str(err.value)
    assert "'example-org/no-such-model'" in text and "bundles no config" in text and "gpt2" in text
    assert "\n" not in text

