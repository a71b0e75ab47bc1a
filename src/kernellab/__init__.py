"""kernellab: benchmark, verify and optimize GPU kernels written by AI coding agents."""

__version__ = "0.1.0"
