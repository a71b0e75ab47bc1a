"""Parametric Triton templates the search agent instantiates when a task matches one.

Importing this package registers the built-in templates; ``templates()`` lists them and
``match_templates(task)`` says which implement a task.
"""

from kernellab.kernels import (  # noqa: F401 - register the templates
    attention,
    col_reduction,
    cross_entropy,
    elementwise,
    embedding,
    full_reduction,
    gated,
    gated_matmul,
    inplace_update,
    linear_cross_entropy,
    matmul,
    norm,
    reduction,
    rope,
    row_epilogue,
    scan,
    softmax,
)
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    match_templates,
    register_template,
    templates,
)

__all__ = ["KnobSpec", "Match", "Template", "match_templates", "register_template", "templates"]
