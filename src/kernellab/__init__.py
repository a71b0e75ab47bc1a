"""kernellab: benchmark, verify and optimize GPU kernels written by AI coding agents."""

__version__ = "0.1.0"


def apply(model, out, **options):
    """Install the verified kernels of a ``kernellab optimize`` folder into ``model`` (see
    ``kernellab.optimize.install.apply``); imported lazily so ``import kernellab`` stays light."""
    from kernellab.optimize.install import apply as _apply

    return _apply(model, out, **options)
