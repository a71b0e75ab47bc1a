"""Parametric Triton templates the search agent instantiates when a task matches one.

Importing this package registers the built-in templates; ``templates()`` lists them and
``match_templates(task)`` says which implement a task.
"""

from kernellab.kernels import elementwise, matmul, norm, reduction, softmax  # noqa: F401 - register the templates
from kernellab.kernels import cross_entropy, embedding, linear_cross_entropy  # noqa: F401, I001 - registers the loss templates
from kernellab.kernels.template import (
    KnobSpec,
    Match,
    Template,
    match_templates,
    register_template,
    templates,
)

__all__ = ["KnobSpec", "Match", "Template", "match_templates", "register_template", "templates"]
