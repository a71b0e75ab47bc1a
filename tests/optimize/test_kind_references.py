"""Every chain kind ``optimize`` extracts is written in a form a search template reads: a chain the
profile ranks is then solved by the LLM-free agent instead of skipped."""

from __future__ import annotations

import pytest

from kernellab.kernels import match_templates
from kernellab.optimize.kinds import KINDS
from kernellab.tasks.load import load_task

SHAPES = {"rmsnorm": [(64, 128), (128,)], "add_rmsnorm": [(64, 128), (64, 128), (128,)],
          "layer_norm": [(64, 128), (128,), (128,)], "add_layer_norm": [(64, 128), (64, 128), (128,), (128,)],
          "act_mul": [(64, 128), (64, 128)], "rope": [(2, 4, 16, 32), (2, 2, 16, 32), (1, 1, 16, 32), (1, 1, 16, 32)],
          "bias_act": [(64, 128), (256, 128), (256,)], "linear_cross_entropy": [(64, 128), (512, 128), (64,)]}
EXPECTED = {"rmsnorm": "norm", "add_rmsnorm": "norm", "layer_norm": "norm", "add_layer_norm": "norm",
            "act_mul": "elementwise", "rope": "rope", "bias_act": "matmul",
            "linear_cross_entropy": "linear_cross_entropy"}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_the_extracted_reference_of_each_fused_kind_is_matched_by_its_template(kind, tmp_path):
    source, _ = KINDS[kind].reference(SHAPES[kind], {"eps": 1e-6, "act": "silu"})
    (tmp_path / "reference.py").write_text(source)
    (tmp_path / "task.toml").write_text('schema = 1\ncategory = "uncategorized"\ndtypes = ["float32"]\n'
                                        'configs = [{}]\n')
    assert EXPECTED[kind] in [m.template.name for m in match_templates(load_task(tmp_path))]
