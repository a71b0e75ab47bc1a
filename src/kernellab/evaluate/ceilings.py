"""The device's measured ceilings: copy bandwidth and dense matmul throughput per dtype.

% of roofline is only as honest as its ceilings. Datasheet numbers are not reached by any real
kernel (H100 SXM: 3.35 TB/s on paper, ~3.0 TB/s for a device-to-device copy), so kernellab
measures the two limits once per device and software stack and caches them:

- copy bandwidth: a device-to-device copy of 1 GiB, counting bytes read *and* written, best of a few
  (the same counting as the roofline's bytes: inputs read once, outputs written once);
- matmul TFLOP/s: an 8192³ product on random data (zeros run faster than real data), for float32 in
  IEEE mode (TF32 off), TF32, bfloat16, float16 and float64, best of a few.

The cache is one JSON file (default ``~/.cache/kernellab/ceilings.json``, or the directory named by
``KERNELLAB_CACHE_DIR``) keyed by device name + torch version + triton version, since a new cuBLAS or
driver stack can move the matmul peak.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CACHE_ENV = "KERNELLAB_CACHE_DIR"
CACHE_FILE = "ceilings.json"
CACHE_SCHEMA = 1

COPY_BYTES = 1 << 30  # 1 GiB source: far larger than any L2, long enough (~0.7 ms) to time well
MATMUL_N = 8192  # 8192³: large enough for cuBLAS to reach its peak on H100-class parts
_COPY_REPS = 5
_MATMUL_REPS = 5


@dataclass(frozen=True)
class Ceilings:
    """Measured limits of one device under one software stack."""

    device_name: str
    copy_gbps: float  # bytes read + bytes written per second, 1e9
    fp32_tflops: float  # float32 with TF32 off ("ieee")
    tf32_tflops: float
    bf16_tflops: float
    fp16_tflops: float
    fp64_tflops: float
    torch_version: str
    triton_version: str
    measured_at: str = ""  # ISO 8601, UTC

    def peak_tflops(self, dtype: str, fp32_precision: str = "ieee") -> float:
        """The matmul ceiling for a task dtype; float32 follows the task's ``fp32_precision``."""
        if dtype == "float32":
            if fp32_precision not in ("ieee", "tf32"):
                raise ValueError(f"fp32_precision must be 'ieee' or 'tf32', not {fp32_precision!r}")
            return self.tf32_tflops if fp32_precision == "tf32" else self.fp32_tflops
        table = {"bfloat16": self.bf16_tflops, "float16": self.fp16_tflops, "float64": self.fp64_tflops}
        if dtype not in table:
            raise ValueError(f"no matmul ceiling for dtype {dtype!r} (known: float32, "
                             f"{', '.join(table)})")
        return table[dtype]

    @property
    def key(self) -> str:
        return cache_key(self.device_name, self.torch_version, self.triton_version)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ceilings:
        names = {f.name for f in fields(cls)}
        missing = names - set(d) - {"measured_at"}
        if missing:
            raise ValueError(f"ceilings record lacks {sorted(missing)}")
        values = {k: v for k, v in d.items() if k in names}
        for k in ("copy_gbps", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
                  "fp64_tflops"):
            values[k] = float(values[k])
            if not values[k] > 0:
                raise ValueError(f"ceilings record has non-positive {k}")
        return cls(**values)


def cache_key(device_name: str, torch_version: str, triton_version: str) -> str:
    return f"{device_name} | torch {torch_version} | triton {triton_version}"


def software_versions() -> tuple[str, str]:
    import torch

    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = "none"
    return str(torch.__version__), triton_version


def cache_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the ceilings cache lives: ``cache_dir``, else ``$KERNELLAB_CACHE_DIR``, else ~/.cache."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kernellab"
    return Path(cache_dir) / CACHE_FILE


def read_cached(key: str, cache_dir: str | os.PathLike[str] | None = None) -> Ceilings | None:
    """The cached ceilings under ``key``, or None (absent, or an unreadable file: logged, re-measured)."""
    entries = _read_entries(cache_path(cache_dir))
    record = entries.get(key)
    if record is None:
        return None
    try:
        return Ceilings.from_dict(record)
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("ignoring the cached ceilings for %s: %s", key, exc)
        return None


def write_cached(ceilings: Ceilings, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Add or replace ``ceilings`` in the cache file, atomically (a reader never sees half a file)."""
    path = cache_path(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = _read_entries(path)
    entries[ceilings.key] = ceilings.to_dict()
    doc = {"schema": CACHE_SCHEMA, "entries": entries}
    fd, tmp = tempfile.mkstemp(prefix=".ceilings-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _read_entries(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ceilings cache %s is unreadable (%s); it will be rewritten", path, exc)
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != CACHE_SCHEMA or \
            not isinstance(doc.get("entries"), dict):
        log.warning("ceilings cache %s has an unknown layout; it will be rewritten", path)
        return {}
    return doc["entries"]


def device_name(device: Any) -> str | None:
    """The CUDA device's name, or None for a CPU (or any non-CUDA) device."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(dev)


def load_ceilings(device: Any, cache_dir: str | os.PathLike[str] | None = None) -> Ceilings | None:
    """Cached ceilings of ``device``, measured and cached on first use; None on a CPU."""
    name = device_name(device)
    if name is None:
        return None
    key = cache_key(name, *software_versions())
    cached = read_cached(key, cache_dir)
    if cached is not None:
        return cached
    log.info("measuring the ceilings of %s (once per device and software stack)", name)
    ceilings = measure_ceilings(device)
    try:
        write_cached(ceilings, cache_dir)
    except OSError as exc:  # a read-only home must not stop an evaluation
        log.warning("could not cache the ceilings in %s: %s", cache_path(cache_dir), exc)
    return ceilings


# --------------------------------------------------------------------------------------------------
# measurement (CUDA only)


def measure_ceilings(device: Any) -> Ceilings:
    """Measure copy bandwidth and matmul TFLOP/s on ``device`` (a few seconds, ~2.5 GiB of memory)."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"ceilings are measured on a CUDA device, not {dev}")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    torch_version, triton_version = software_versions()
    with torch.cuda.device(dev):
        copy = measure_copy_gbps(dev)
        tflops = {prec: measure_matmul_tflops(dev, dtype, precision)
                  for prec, dtype, precision in (("fp32", "float32", "ieee"), ("tf32", "float32", "tf32"),
                                                 ("bf16", "bfloat16", "ieee"),
                                                 ("fp16", "float16", "ieee"),
                                                 ("fp64", "float64", "ieee"))}
        torch.cuda.empty_cache()
    result = Ceilings(
        device_name=torch.cuda.get_device_name(dev), copy_gbps=copy,
        fp32_tflops=tflops["fp32"], tf32_tflops=tflops["tf32"], bf16_tflops=tflops["bf16"],
        fp16_tflops=tflops["fp16"], fp64_tflops=tflops["fp64"],
        torch_version=torch_version, triton_version=triton_version,
        measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    log.info("ceilings of %s: copy %.0f GB/s, TFLOP/s fp32 %.1f tf32 %.1f bf16 %.1f fp16 %.1f "
             "fp64 %.1f", result.device_name, result.copy_gbps, result.fp32_tflops,
             result.tf32_tflops, result.bf16_tflops, result.fp16_tflops, result.fp64_tflops)
    return result


def measure_copy_gbps(device: Any, nbytes: int = COPY_BYTES) -> float:
    """Best device-to-device copy rate, in GB/s counting bytes read plus bytes written."""
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    best_ms = _best_ms(lambda: dst.copy_(src), _COPY_REPS, device)
    return 2 * nbytes / (best_ms * 1e-3) / 1e9


def measure_matmul_tflops(device: Any, dtype: str, fp32_precision: str = "ieee",
                          n: int = MATMUL_N) -> float:
    """Best dense ``n``³ matmul rate in TFLOP/s (2·n³ per product) on random data."""
    import torch

    torch_dtype = getattr(torch, dtype)
    a = torch.randn(n, n, device=device, dtype=torch_dtype)
    b = torch.randn(n, n, device=device, dtype=torch_dtype)
    out = torch.empty(n, n, device=device, dtype=torch_dtype)
    with matmul_fp32_precision(fp32_precision):
        best_ms = _best_ms(lambda: torch.mm(a, b, out=out), _MATMUL_REPS, device)
    return 2 * n**3 / (best_ms * 1e-3) / 1e12


def _best_ms(fn, reps: int, device: Any) -> float:
    """Shortest of ``reps`` event-timed calls after two warm-ups."""
    import torch

    for _ in range(2):
        fn()
    torch.cuda.synchronize(device)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return min(times)


@contextlib.contextmanager
def matmul_fp32_precision(precision: str):
    """Pin cuBLAS float32 matmuls to IEEE or TF32 for the block, then restore the previous setting.

    torch ≥ 2.9 has two APIs for this flag (``allow_tf32`` and ``fp32_precision``) and raises when a
    process reads the legacy one after setting the new one to TF32. So: if the legacy flag reads
    cleanly the process uses it, and we set and restore it; otherwise we use the new API.
    """
    import torch

    if precision not in ("ieee", "tf32"):
        raise ValueError(f"precision must be 'ieee' or 'tf32', not {precision!r}")
    matmul = torch.backends.cuda.matmul
    try:
        legacy = matmul.allow_tf32
    except RuntimeError:
        legacy = None
    if legacy is not None:
        matmul.allow_tf32 = precision == "tf32"
    else:
        previous = matmul.fp32_precision
        matmul.fp32_precision = precision
    try:
        yield
    finally:
        if legacy is not None:
            matmul.allow_tf32 = legacy
        else:
            matmul.fp32_precision = previous
