"""Import a candidate file and find its model class: the one code path every process that runs a
candidate uses (the harness child, the process compute-sanitizer wraps).

The module is compiled from the file's current bytes, never from a cached ``.pyc``: a candidate
rewritten in place within the same second and at the same size (a search loop's next proposal)
would otherwise run the previous one's bytecode, which the bytecode cache's mtime check accepts.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def load_candidate(path: str, name: str, reference_class: bool = False) -> tuple[ModuleType, type]:
    """The candidate module at ``path``, registered as ``name``, and its ``ModelNew``; only the task's
    reference evaluated as its own candidate (``reference_class``) is taken by its ``Model``."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    model_cls = getattr(module, "ModelNew", None)
    if model_cls is None and reference_class:
        model_cls = getattr(module, "Model", None)
    if not isinstance(model_cls, type):
        also = " (it defines Model, the reference's class: name the candidate's class ModelNew)" \
            if isinstance(getattr(module, "Model", None), type) else ""
        raise AttributeError(f"the candidate defines no class ModelNew{also}")
    return module, model_cls
