"""The model optimizer: profile a model, rank its ops and fusable chains by Amdahl's law, extract
them as tasks, speed them up with any agent, install the verified kernels, verify the whole model.

``kernellab.apply(model, DIR)`` installs the kernels of an optimize folder (``install.apply``).
"""

from kernellab.optimize.install import apply

__all__ = ["apply"]
