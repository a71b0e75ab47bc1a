"""Ceilings: the JSON cache on the CPU; a real measurement on a GPU."""

from __future__ import annotations

import json

import pytest
import torch

from kernellab.evaluate import ceilings as ceilings_mod
from kernellab.evaluate.ceilings import (
    CACHE_ENV,
    Ceilings,
    cache_key,
    cache_path,
    load_ceilings,
    matmul_fp32_precision,
    read_cached,
    software_versions,
    write_cached,
)


def _ceilings(name: str = "NVIDIA H100 80GB HBM3", **over) -> Ceilings:
    torch_version, triton_version = software_versions()
    values = dict(device_name=name, copy_gbps=3017.0, fp32_tflops=51.0, tf32_tflops=380.0,
                  bf16_tflops=693.0, fp16_tflops=700.0, fp64_tflops=60.0, torch_version=torch_version,
                  triton_version=triton_version, measured_at="2026-01-01T00:00:00+00:00")
    values.update(over)
    return Ceilings(**values)


def test_cache_round_trip(tmp_path):
    c = _ceilings()
    path = write_cached(c, tmp_path)
    assert path == tmp_path / "ceilings.json"
    doc = json.loads(path.read_text())
    assert doc["schema"] == 1 and c.key in doc["entries"]
    assert read_cached(c.key, tmp_path) == c
    assert read_cached(cache_key("Other GPU", *software_versions()), tmp_path) is None


def test_cache_keeps_other_entries_and_versions_apart(tmp_path):
    a = _ceilings("GPU A")
    b = _ceilings("GPU A", torch_version="9.9.9", copy_gbps=1.0)
    write_cached(a, tmp_path)
    write_cached(b, tmp_path)
    assert read_cached(a.key, tmp_path) == a
    assert read_cached(b.key, tmp_path) == b


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_path() == tmp_path / "env" / "ceilings.json"
    monkeypatch.delenv(CACHE_ENV)
    assert cache_path().parts[-3:] == (".cache", "kernellab", "ceilings.json")


def test_corrupt_or_foreign_cache_is_ignored(tmp_path, caplog):
    path = tmp_path / "ceilings.json"
    path.write_text("{not json")
    assert read_cached("anything", tmp_path) is None
    path.write_text(json.dumps({"schema": 99, "entries": {}}))
    assert read_cached("anything", tmp_path) is None
    c = _ceilings()
    path.write_text(json.dumps({"schema": 1, "entries": {c.key: c.to_dict() | {"copy_gbps": -1}}}))
    assert read_cached(c.key, tmp_path) is None
    write_cached(c, tmp_path)  # rewrites a usable file
    assert read_cached(c.key, tmp_path) == c


def test_load_ceilings_on_cpu_is_none(tmp_path):
    assert load_ceilings("cpu", tmp_path) is None
    assert not (tmp_path / "ceilings.json").exists()


def test_load_ceilings_measures_once_then_reads_the_cache(tmp_path, monkeypatch):
    measured = []
    real = _ceilings("Some GPU")
    monkeypatch.setattr(ceilings_mod, "device_name", lambda device: "Some GPU")
    monkeypatch.setattr(ceilings_mod, "measure_ceilings", lambda device: measured.append(device) or real)
    assert load_ceilings("cuda:0", tmp_path) == real
    assert load_ceilings("cuda:0", tmp_path) == real
    assert measured == ["cuda:0"]


def test_peak_tflops_by_dtype():
    c = _ceilings()
    assert c.peak_tflops("float32") == 51.0
    assert c.peak_tflops("float32", "tf32") == 380.0
    assert c.peak_tflops("bfloat16") == 693.0
    assert c.peak_tflops("float16") == 700.0
    assert c.peak_tflops("float64") == 60.0
    with pytest.raises(ValueError):
        c.peak_tflops("float32", "fast")
    with pytest.raises(ValueError):
        c.peak_tflops("int8")


def test_matmul_precision_is_restored():
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    with matmul_fp32_precision("tf32"):
        assert matmul.allow_tf32 is True
    assert matmul.allow_tf32 == before
    with matmul_fp32_precision("ieee"):
        assert matmul.allow_tf32 is False
    assert matmul.allow_tf32 == before
    with pytest.raises(ValueError):
        with matmul_fp32_precision("medium"):
            pass


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_measured_ceilings_are_plausible(tmp_path):
    before = torch.backends.cuda.matmul.allow_tf32
    c = load_ceilings("cuda", tmp_path)
    assert torch.backends.cuda.matmul.allow_tf32 == before
    assert c is not None and c.device_name == torch.cuda.get_device_name()
    # any datacenter GPU of the last years: 0.5-10 TB/s copy, ordered matmul peaks
    assert 500 < c.copy_gbps < 10_000, c
    assert 5 < c.fp32_tflops < c.tf32_tflops < c.bf16_tflops, c
    assert c.fp16_tflops > c.tf32_tflops and c.fp64_tflops > 1, c
    if "H100" in c.device_name:
        assert 2000 < c.copy_gbps < 3600 and 500 < c.bf16_tflops < 1000, c
    assert read_cached(c.key, tmp_path) == c
