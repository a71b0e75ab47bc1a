"""kernellab: benchmark, verify and optimize GPU kernels written by AI coding agents."""

import importlib

__version__ = "0.1.0"


def apply(model, out, **options):
    """Install the verified kernels of a ``kernellab optimize`` folder into ``model`` (see
    ``kernellab.optimize.install.apply``). Resolved at call time: every layer imports this package
    (for ``__version__`` and its location), so it must import none of them, and ``import kernellab``
    stays light."""
    return importlib.import_module("kernellab.optimize.install").apply(model, out, **options)
