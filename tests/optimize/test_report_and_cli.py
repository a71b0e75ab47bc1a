"""The optimize report renders from a folder's records alone; the command's bad input is one line."""

from __future__ import annotations

import json
import subprocess
import sys

from kernellab.report.optimize_report import bar_svg, time_bars, write_optimize_report


def test_report_from_records(tmp_path):
    profile = {"model": "m", "mode": "infer", "dtype": "bfloat16", "device": "cuda", "sizes": {"B": 4, "S": 8},
               "graphs": 1, "time_basis": "device kernel time", "total_us": 1000.0, "coverage": 0.97,
               "unscoped_us": 30.0, "unattributed_us": 0.0,
               "hotspots": [{"key": "rmsnorm[4x8x64;64,bfloat16]", "kind": "rmsnorm", "name": "rmsnorm", "spec": {},
                             "shapes": [[4, 8, 64], [64]], "dtypes": ["bfloat16", "bfloat16"], "instances": 3,
                             "time_us": 400.0, "share": 0.4, "suite_task": "normalization/rmsnorm",
                             "template": "norm", "extractable": True,
                             "projected_whole_speedup": {"1.5": 1.15, "2": 1.25, "inf": 1.667}}]}
    ops = [{"slug": "01_rmsnorm", "key": "rmsnorm[4x8x64;64,bfloat16]", "share": 0.4, "template": "norm",
            "solve_status": "passed", "solve_note": "kept c2", "op_speedup": {"vs_eager": 2.0}, "installed": True,
            "kernel": "kernels/01_rmsnorm.py", "instances": 3, "verdict": "installed"}]
    verify = {"checks": [{"sizes": {"B": 4, "S": 8}, "seen": True, "worst_error": 0.001, "where": "output",
                          "tolerance": 0.04, "passed": True}],
              "timings_ms": {"eager": 1.0, "kernellab": 0.8}, "peak_mem_bytes": {"eager": 2**30, "kernellab": 2**30},
              "speedup": {"kernellab_vs_eager": 1.25}, "projected_speedup": 1.25, "uninstalled": {}}
    for name, doc in (("profile", profile), ("ops", ops), ("verify", verify)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    md, page = write_optimize_report(tmp_path)
    text = md.read_text()
    assert "| rmsnorm | 3 |" in text and "1.150 / 1.250 / 1.667" in text and "1.250x" in text
    assert "<table>" in page.read_text() and "<svg" in page.read_text()
    bars = time_bars(profile, ops)
    assert bars[0] == ("rmsnorm[4x8x64;64,bfloat16]", 400.0, 200.0)  # after: its own 2x, projected
    assert bars[-1] == ("everything else", 600.0, 600.0)
    svg = bar_svg(bars)
    assert "1000.0 us" in svg and "800.0 us" in svg  # before, and after with the kernel's 2x


def test_cli_bad_model_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "optimize", "nosuch.py:factory",
                           "--inputs", "2x8", "--out", str(tmp_path / "o")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: model file nosuch.py does not exist"]
